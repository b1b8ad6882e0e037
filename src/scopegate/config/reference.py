"""The config and spec reference as Markdown, generated from the JSON Schema of the typed models.

One source: the keys, types, bounds, defaults and descriptions are those of
:class:`scopegate.config.model.AppConfig` and :class:`scopegate.search.spec.SearchSpec`, through the
same JSON Schema ``scopegate check --schema`` prints. ``python scripts/docs_hooks.py --write`` writes them
into the committed reference pages (a unit test checks they match); nothing is copied by hand. Pure: a
schema in, Markdown out.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

Schema = Mapping[str, Any]


@dataclass(frozen=True)
class Section:
    path: str  # the key path a config author writes: guards.cap, search_tools[].filters[]
    schema: Schema  # an object schema (resolved)


def _anchor(path: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", path.lower()).strip("-") or "top-level"


def _clean(text: str) -> str:
    """A docstring or description on one line, reST literals as Markdown code, pipes escaped for tables."""
    text = " ".join(text.split())
    text = text.replace("``", "`")
    return text.replace("|", "\\|")


class _Walker:
    def __init__(self, root: Schema) -> None:
        self.defs: Mapping[str, Schema] = root.get("$defs", {})
        self.sections: list[Section] = []
        self.anchors: dict[tuple[str, str], str] = {}

    def resolve(self, schema: Schema) -> Schema:
        ref = schema.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            return self.defs[ref.rsplit("/", 1)[1]]
        return schema

    def _objects(self, schema: Schema, path: str) -> Iterator[tuple[str, Schema]]:
        """The object schemas reachable under one key, with the path an author writes for each."""
        s = self.resolve(schema)
        if s.get("type") == "object" and "properties" in s:
            yield path, s
            return
        for alt in s.get("anyOf", []) + s.get("oneOf", []):
            yield from self._objects(alt, path)
        if s.get("type") == "array" and isinstance(s.get("items"), Mapping):
            yield from self._objects(s["items"], f"{path}[]")
        values = _map_values(s)
        if values is not None:
            yield from self._objects(values, f"{path}.<name>")

    def walk(self, path: str, schema: Schema) -> None:
        key = (path, str(schema.get("title", "")))
        if key in self.anchors:
            return
        anchor = _anchor(path) if path else "top-level"
        if anchor in self.anchors.values():  # a key that takes one of several objects (embedded or remote)
            anchor = _anchor(f"{path} {key[1]}")
        self.anchors[key] = anchor
        self.sections.append(Section(path, schema))
        for name, prop in schema.get("properties", {}).items():
            child = f"{path}.{name}" if path else name
            for sub_path, sub in self._objects(prop, child):
                self.walk(sub_path, sub)

    def type_text(self, schema: Schema, path: str) -> str:
        if "$ref" in schema:
            target = self.resolve(schema)
            title = str(target.get("title", "object"))
            anchor = self.anchors.get((path, title))
            return f"[{title}](#{anchor})" if anchor else title
        if "const" in schema:
            return f"`{json.dumps(schema['const'])}`"
        if "enum" in schema:
            return " \\| ".join(f"`{json.dumps(v)}`" for v in schema["enum"])
        alts = schema.get("anyOf") or schema.get("oneOf")
        if alts:
            parts = [self.type_text(a, path) for a in alts if a.get("type") != "null"]
            return " or ".join(dict.fromkeys(parts)) or "null"
        kind = schema.get("type")
        if kind == "array":
            items = schema.get("items")
            inner = self.type_text(items, f"{path}[]") if isinstance(items, Mapping) else "any"
            return f"list of {inner}"
        values = _map_values(schema)
        if values is not None:
            return f"map of name → {self.type_text(values, f'{path}.<name>')}"
        return str(kind or "any")


def _map_values(schema: Schema) -> Schema | None:
    """The value schema of a mapping (``additionalProperties`` or the one ``patternProperties`` entry)."""
    if schema.get("type") != "object":
        return None
    extra = schema.get("additionalProperties")
    if isinstance(extra, Mapping):
        return extra
    patterns = schema.get("patternProperties")
    if isinstance(patterns, Mapping) and len(patterns) == 1:
        value = next(iter(patterns.values()))
        return value if isinstance(value, Mapping) else None
    return None


def _bounds(schema: Schema) -> list[str]:
    out = []
    for alt in [schema, *schema.get("anyOf", [])]:
        for key, label in (
            ("minimum", "≥"),
            ("exclusiveMinimum", ">"),
            ("maximum", "≤"),
            ("exclusiveMaximum", "<"),
            ("minLength", "length ≥"),
            ("maxLength", "length ≤"),
            ("minItems", "items ≥"),
            ("maxItems", "items ≤"),
        ):
            if key in alt:
                out.append(f"{label} {alt[key]}")
        if "pattern" in alt:
            out.append(f"pattern `{alt['pattern']}`".replace("|", "\\|"))
        if isinstance(alt.get("patternProperties"), Mapping):
            out += [f"names match `{p}`".replace("|", "\\|") for p in alt["patternProperties"]]
    return list(dict.fromkeys(out))


def _description(schema: Schema) -> str:
    texts = [schema.get("description")] + [a.get("description") for a in schema.get("anyOf", [])]
    return " ".join(_clean(t) for t in texts if isinstance(t, str))


def _default(schema: Schema, required: bool) -> str:
    if required:
        return "**required**"
    if "default" not in schema:
        return ""
    return f"`{json.dumps(schema['default'], ensure_ascii=False)}`".replace("|", "\\|")


def _table(walker: _Walker, section: Section) -> list[str]:
    required = set(section.schema.get("required", []))
    rows = ["| key | type | default | description |", "|---|---|---|---|"]
    for name, prop in section.schema.get("properties", {}).items():
        child = f"{section.path}.{name}" if section.path else name
        extra = _bounds(prop)
        text = _description(prop)
        if extra:
            text = f"{text} ({'; '.join(extra)})" if text else f"({'; '.join(extra)})"
        rows.append(f"| `{name}` | {walker.type_text(prop, child)} | {_default(prop, name in required)} | {text} |")
    return rows


def reference_markdown(schema: Schema, *, root_title: str, level: int = 2) -> str:
    """One heading and key table per object of ``schema``, in the order an author meets them."""
    walker = _Walker(schema)
    walker.walk("", schema)
    hashes = "#" * level
    lines: list[str] = []
    for section in walker.sections:
        model_title = str(section.schema.get("title", ""))
        anchor = walker.anchors[(section.path, model_title)]
        heading = f"`{section.path}`" if section.path else root_title
        if section.path and anchor != _anchor(section.path):
            heading += f" ({model_title})"
        lines += [f"{hashes} {heading} {{#{anchor}}}", ""]
        doc = section.schema.get("description")
        intro = _clean(doc) if isinstance(doc, str) else ""
        if section.path and model_title:
            intro = f"{intro} (`{model_title}`)" if intro else f"`{model_title}`"
        if intro:
            lines += [intro, ""]
        lines += _table(walker, section)
        lines.append("")
    return "\n".join(lines)


def config_reference(level: int = 2) -> str:
    """The reference of the config file (``scopegate serve|check CONFIG``)."""
    from scopegate.config.model import config_schema

    return reference_markdown(config_schema(), root_title="Top level", level=level)


def spec_reference(level: int = 2) -> str:
    """The reference of a search spec file (``--spec FILE``; ``scopegate-spec.json`` beside an index)."""
    from scopegate.search.spec import SearchSpec
    from scopegate.validation import json_schema

    return reference_markdown(json_schema(SearchSpec), root_title="Spec file", level=level)
