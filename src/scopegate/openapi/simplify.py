"""Turn a resolved JSON schema into the small subset a function-calling model sees.

Kept: ``type``, ``description`` (bounded), ``enum``, ``format``, ``default``,
numeric and length bounds, ``pattern``, ``properties``/``required``,
``items``, ``additionalProperties``, ``anyOf`` for non-object unions. The
output uses only keywords of ``google.genai.types.JSONSchema``: exclusive
bounds become inclusive ones (integers) or an inclusive bound plus a note, and
``multipleOf`` becomes a note.

Changed:

* ``allOf`` is merged into one schema;
* ``oneOf``/``anyOf`` over objects becomes one object: the union of the
  variants' properties, each property that exists only in some variants
  described as such ("only when type is ..."); with a ``discriminator`` the
  discriminator property becomes an explicit ``enum`` of the variant tags;
  ``required`` is what every variant requires. The original schema is kept in
  the tool binding for validating the rebuilt request at run time;
* ``null`` variants and ``"null"`` types are dropped (omit the argument instead);
* ``const`` becomes a one-value ``enum``;
* beyond ``max_depth`` an object/array keeps only its type and description.

Dropped: examples, ``title``, ``readOnly`` properties (request side), ``x-*``,
``not``/``if``/``then``/``else``, ``discriminator``, ``xml``, ``externalDocs``,
``deprecated`` (noted in the description instead), ``$ref`` leftovers.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

_COUNT_KEYS = ("minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties")
_JSON_TYPES = frozenset({"string", "number", "integer", "boolean", "object", "array", "null"})
_MAX_DEFAULT_CHARS = 200
_WS = re.compile(r"[ \t]+")
_BLANK_LINES = re.compile(r"\n\s*\n\s*\n+")
_SPACED_NEWLINE = re.compile(r" *\n *")
# Markdown links cost context on every turn and give the model nothing to call with: keep the text.
_MD_LINK = re.compile(r"\[([^\]\n]{1,200})\]\((?:[^()\s]|\([^()\s]*\))+\)")


def bound_text(text: str, limit: int) -> str:
    """Reduce Markdown links to their text, normalise whitespace, cut at ``limit`` on a word boundary.

    A cut is marked with an ellipsis.
    """
    text = _MD_LINK.sub(r"\1", text)
    text = _WS.sub(" ", text.replace("\r\n", "\n"))
    text = _BLANK_LINES.sub("\n\n", _SPACED_NEWLINE.sub("\n", text)).strip()
    if len(text) <= limit:
        return text
    if limit <= 1:
        return text[:limit]
    cut = text[: limit - 1]
    space = max(cut.rfind(" "), cut.rfind("\n"))
    if space > limit * 0.6:
        cut = cut[:space]
    return cut.rstrip() + "…"


@dataclass(frozen=True)
class SimplifyOptions:
    max_description: int = 300
    max_depth: int = 8
    request: bool = True  # drop readOnly properties


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def is_null_schema(schema: Any) -> bool:
    if not isinstance(schema, dict):
        return False
    t = schema.get("type")
    return t == "null" or t == ["null"] or schema.get("enum") == [None]


def _is_object(schema: dict[str, Any]) -> bool:
    t = schema.get("type")
    return t == "object" or (t is None and isinstance(schema.get("properties"), dict))


def merge_all_of(schema: dict[str, Any]) -> dict[str, Any]:
    """Merge ``allOf`` parts into one schema (outer keys win for scalars)."""
    parts = schema.get("allOf")
    if not isinstance(parts, list):
        return schema
    out: dict[str, Any] = {k: v for k, v in schema.items() if k != "allOf"}
    props: dict[str, Any] = dict(out.get("properties") or {})
    required: list[str] = list(out.get("required") or [])
    for raw in parts:
        if not isinstance(raw, dict):
            continue
        part = merge_all_of(raw)
        for name, sub in (part.get("properties") or {}).items():
            if name in props and isinstance(props[name], dict) and isinstance(sub, dict) and props[name] != sub:
                props[name] = {"allOf": [props[name], sub]}
            else:
                props.setdefault(name, sub)
        for name in part.get("required") or []:
            if name not in required:
                required.append(name)
        for key, value in part.items():
            if key in ("properties", "required"):
                continue
            out.setdefault(key, value)
    if props:
        out["properties"] = props
        if "type" not in out:
            out["type"] = "object"
    if required:
        out["required"] = required
    return out


class Simplifier:
    """Stateless apart from its options; one instance can serve many schemas."""

    def __init__(self, options: SimplifyOptions | None = None) -> None:
        self.options = options or SimplifyOptions()

    def describe(self, text: str) -> str:
        return bound_text(text, self.options.max_description)

    def run(self, schema: Any, depth: int = 0) -> dict[str, Any]:
        return self._node(schema, depth)

    # ------------------------------------------------------------------
    def _node(self, schema: Any, depth: int) -> dict[str, Any]:
        if not isinstance(schema, dict):
            return {}
        s = merge_all_of(schema)
        for key in ("oneOf", "anyOf"):
            if isinstance(s.get(key), list):
                return self._union(s, key, depth)
        return self._plain(s, depth)

    def _types(self, s: dict[str, Any]) -> str | list[str] | None:
        t = s.get("type")
        if isinstance(t, str):
            return t if t in _JSON_TYPES and t != "null" else None
        if isinstance(t, list):
            kept = [x for x in dict.fromkeys(t) if isinstance(x, str) and x in _JSON_TYPES and x != "null"]
            if not kept:
                return None
            return kept[0] if len(kept) == 1 else kept
        if isinstance(s.get("properties"), dict) or isinstance(s.get("additionalProperties"), dict):
            return "object"
        if "items" in s:
            return "array"
        enum = s.get("enum")
        if isinstance(enum, list) and enum:
            values = [v for v in enum if v is not None]
            if values and all(isinstance(v, str) for v in values):
                return "string"
            if values and all(isinstance(v, bool) for v in values):
                return "boolean"
            if values and all(isinstance(v, int) and not isinstance(v, bool) for v in values):
                return "integer"
        return None

    def _plain(self, s: dict[str, Any], depth: int) -> dict[str, Any]:
        out: dict[str, Any] = {}
        t = self._types(s)
        if t is not None:
            out["type"] = t
        raw_desc = s.get("description")
        desc: str = raw_desc if isinstance(raw_desc, str) else ""
        if s.get("deprecated") is True:
            desc = ("Deprecated. " + desc).strip()
        if desc:
            out["description"] = self.describe(desc)
        enum = s.get("enum")
        if "const" in s and s["const"] is not None:
            enum = [s["const"]]
        if isinstance(enum, list):
            values = [v for v in enum if v is not None and not isinstance(v, dict | list)]
            values = list(dict.fromkeys(values)) if all(isinstance(v, str | int | float | bool) for v in values) else []
            if values:
                out["enum"] = values
        if isinstance(s.get("format"), str):
            out["format"] = s["format"]
        default = s.get("default")
        if default is not None and len(json.dumps(default, default=str)) <= _MAX_DEFAULT_CHARS:
            out["default"] = default
        notes: list[str] = []
        for key in ("minimum", "maximum"):
            v = s.get(key)
            if _is_number(v):
                out[key] = v
        # Gemini's schema has no exclusive bounds or multipleOf: integers get the next
        # inclusive bound, numbers an inclusive bound plus a note; the original stays in the binding.
        for key, bound, step, word in (
            ("exclusiveMinimum", "minimum", 1, "greater than"),
            ("exclusiveMaximum", "maximum", -1, "less than"),
        ):
            v = s.get(key)
            if not _is_number(v):
                continue
            if t == "integer" and isinstance(v, int):
                candidate = v + step
                if bound not in out or (step > 0 and candidate > out[bound]) or (step < 0 and candidate < out[bound]):
                    out[bound] = candidate
            else:
                out.setdefault(bound, v)
                notes.append(f"Must be {word} {v}.")
        multiple = s.get("multipleOf")
        if isinstance(multiple, int | float) and not isinstance(multiple, bool) and multiple > 0:
            notes.append(f"Must be a multiple of {multiple}.")
        if notes:
            out["description"] = self.describe(" ".join([out.get("description", ""), *notes]).strip())
        for key in _COUNT_KEYS:
            v = s.get(key)
            if isinstance(v, int) and not isinstance(v, bool) and v >= 0:
                out[key] = v
        if isinstance(s.get("pattern"), str):
            out["pattern"] = s["pattern"]
        if s.get("uniqueItems") is True:
            out["uniqueItems"] = True

        is_object = t == "object" or (isinstance(t, list) and "object" in t)
        is_array = t == "array" or (isinstance(t, list) and "array" in t)
        if (is_object or is_array) and depth >= self.options.max_depth:
            note = "Nested fields omitted."
            out["description"] = self.describe(f"{out.get('description', '')} {note}".strip())
            return out
        if is_object:
            props, required = self._properties(s, depth)
            if props:
                out["properties"] = props
            if required:
                out["required"] = required
            extra = s.get("additionalProperties")
            if isinstance(extra, dict):
                out["additionalProperties"] = self._node(extra, depth + 1)
            elif isinstance(extra, bool) and not props:
                out["additionalProperties"] = extra
        if is_array:
            items = s.get("items")
            if isinstance(items, dict):
                out["items"] = self._node(items, depth + 1)
            elif isinstance(s.get("prefixItems"), list) and s["prefixItems"]:
                out["items"] = self._node(s["prefixItems"][0], depth + 1)
        return out

    def _properties(self, s: dict[str, Any], depth: int) -> tuple[dict[str, Any], list[str]]:
        raw = s.get("properties")
        if not isinstance(raw, dict):
            return {}, []
        props: dict[str, Any] = {}
        for name, sub in raw.items():
            if self.options.request and isinstance(sub, dict) and sub.get("readOnly") is True:
                continue
            if sub is False:
                continue
            props[str(name)] = self._node(sub, depth + 1) if isinstance(sub, dict) else {}
        req = s.get("required")
        required = [r for r in req if r in props] if isinstance(req, list) else []
        return props, list(dict.fromkeys(required))

    def _union(self, s: dict[str, Any], key: str, depth: int) -> dict[str, Any]:
        raw_variants = s[key]
        base = {k: v for k, v in s.items() if k not in ("oneOf", "anyOf", "discriminator")}
        variants = [merge_all_of(v) for v in raw_variants if isinstance(v, dict) and not is_null_schema(v)]
        if not variants:
            return self._plain(base, depth)
        if len(variants) == 1:
            merged = {**base, **variants[0]}
            if isinstance(base.get("description"), str) and base["description"]:
                merged["description"] = base["description"]
            return self._node(merged, depth)
        if all(_is_object(v) for v in variants) and (not base.get("type") or base.get("type") == "object"):
            return self._object_union(base, variants, s.get("discriminator"), depth)
        options: list[dict[str, Any]] = []
        seen: set[str] = set()
        for v in variants:
            simple = self._node(v, depth)
            marker = json.dumps(simple, sort_keys=True, default=str)
            if marker not in seen:
                seen.add(marker)
                options.append(simple)
        desc = base.get("description")
        return self._any_of(options, desc if isinstance(desc, str) else "")

    def _any_of(self, options: list[dict[str, Any]], desc: str) -> dict[str, Any]:
        """Combine simplified alternatives: flatten nested anyOf, dedupe, collapse trivial cases."""
        flat: list[dict[str, Any]] = []
        seen: set[str] = set()
        for option in options:
            parts = option["anyOf"] if set(option) <= {"anyOf", "description"} and "anyOf" in option else [option]
            for part in parts:
                marker = json.dumps(part, sort_keys=True, default=str)
                if marker not in seen:
                    seen.add(marker)
                    flat.append(part)
        out: dict[str, Any] = {}
        if desc:
            out["description"] = self.describe(desc)
        if len(flat) == 1:
            return {**flat[0], **out}
        if all(set(o) == {"type"} and isinstance(o["type"], str) for o in flat):
            out["type"] = [o["type"] for o in flat]
            return out
        scalar = {"string", "integer", "number", "boolean"}
        types = {o.get("type") for o in flat}
        if (
            len(types) == 1
            and next(iter(types)) in scalar
            and all(set(o) <= {"type", "enum", "description"} for o in flat)
        ):
            # e.g. OpenAI's `model: string | enum[...]`: an open string with known values.
            t = next(iter(types))
            known = [v for o in flat for v in o.get("enum") or []]
            if any("enum" not in o for o in flat):
                note = f"Known values: {', '.join(map(str, dict.fromkeys(known)))}." if known else ""
                text = f"{desc} {note}".strip()
                merged: dict[str, Any] = {"type": t}
                if text:
                    merged["description"] = self.describe(text)
                return merged
            merged = {"type": t, "enum": list(dict.fromkeys(known))}
            if desc:
                merged["description"] = self.describe(desc)
            return merged
        out["anyOf"] = flat
        return out

    def _object_union(
        self, base: dict[str, Any], variants: list[dict[str, Any]], disc: Any, depth: int
    ) -> dict[str, Any]:
        simple = [self._plain({**v, "type": "object"}, depth) for v in variants]
        prop_name = disc.get("propertyName") if isinstance(disc, dict) else None
        tag_hints = disc.get("x-variant-tags") if isinstance(disc, dict) else None
        labels: list[list[str]] = []
        for i, (raw, simp) in enumerate(zip(variants, simple, strict=True)):
            tags: list[str] = []
            if prop_name:
                prop = (simp.get("properties") or {}).get(prop_name) or {}
                tags = [str(t) for t in prop.get("enum") or []]
                if not tags and isinstance(tag_hints, list) and i < len(tag_hints) and isinstance(tag_hints[i], list):
                    tags = [str(t) for t in tag_hints[i]]
            if not tags:
                title = raw.get("title")
                tags = [str(title)] if isinstance(title, str) and title else [f"variant {i + 1}"]
            labels.append(tags)

        base_simple = self._plain({**base, "type": "object"}, depth)
        props: dict[str, Any] = dict(base_simple.get("properties") or {})
        owners: dict[str, list[int]] = {}
        shapes: dict[str, list[dict[str, Any]]] = {}
        for i, simp in enumerate(simple):
            for name, sub in (simp.get("properties") or {}).items():
                if name == prop_name:
                    continue
                owners.setdefault(name, []).append(i)
                shapes.setdefault(name, []).append(sub)
        for name, subs in shapes.items():
            if name in props:
                continue
            first_desc = next((x["description"] for x in subs if isinstance(x.get("description"), str)), "")
            distinct = {json.dumps(x, sort_keys=True, default=str): x for x in subs}
            if len(distinct) == 1:
                props[name] = subs[0]
            else:
                bare = [{k: v for k, v in x.items() if k != "description"} for x in subs]
                note = f"{first_desc} (Shape depends on {prop_name}.)" if prop_name else first_desc
                props[name] = self._any_of(bare, note.strip())
        all_idx = list(range(len(variants)))
        for name, idx in owners.items():
            if idx == all_idx or name in (base_simple.get("properties") or {}):
                continue
            which = ", ".join(t for i in idx for t in labels[i])
            cond = f"only when {prop_name} is {which}" if prop_name else f"only for {which}"
            sub = dict(props[name])
            sub["description"] = self.describe(f"{sub.get('description', '')} ({cond})".strip())
            props[name] = sub

        required_sets = [set(s.get("required") or []) for s in simple]
        common = set.intersection(*required_sets) if required_sets else set()
        required = [r for r in props if r in common or r in (base_simple.get("required") or [])]
        out: dict[str, Any] = {"type": "object"}
        desc = base_simple.get("description", "")
        all_tags = [t for tags in labels for t in tags]
        if prop_name:
            tag_prop: dict[str, Any] = {
                "type": "string",
                "enum": list(dict.fromkeys(all_tags)),
                "description": self.describe(f"Which variant this is: {', '.join(dict.fromkeys(all_tags))}."),
            }
            props = {prop_name: tag_prop, **props}
            required = [prop_name, *[r for r in required if r != prop_name]]
            desc = f"{desc} One of several variants, chosen by `{prop_name}`.".strip()
        else:
            desc = f"{desc} One of: {'; '.join('/'.join(t) for t in labels)}.".strip()
        out["description"] = self.describe(desc)
        out["properties"] = props
        if required:
            out["required"] = required
        return out
