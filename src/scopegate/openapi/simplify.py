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
* ``oneOf``/``anyOf`` members that only constrain (``{required: [a]}``) are a note
  ("At least one of: a | b"), not variants; a variant that is itself a union
  stands for each of its members;
* a back-edge ``{"$ref": "#/$defs/X"}`` is followed up to ``recursion_depth``
  times on one path, then becomes a "Recursive schema X" placeholder;
* ``null`` variants and ``"null"`` types are dropped (omit the argument instead);
* ``const`` becomes a one-value ``enum``;
* beyond ``max_depth`` an object/array keeps only its type and description; a run
  stops with :class:`_SchemaTooLarge` past ``node_budget`` nodes or ``char_budget``
  characters of description (the translator then retries shallower).

Dropped: examples, ``title``, ``readOnly`` properties (request side), ``x-*``,
``not``/``if``/``then``/``else``, ``discriminator``, ``xml``, ``externalDocs``,
``deprecated`` (noted in the description instead), ``$ref`` leftovers.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from scopegate.openapi.resolver import def_name_of, recursive_placeholder
from scopegate.openapi.text import bound_text

__all__ = [
    "Simplifier",
    "SimplifyOptions",
    "bound_text",
    "deref",
    "is_null_schema",
    "is_read_only",
    "merge_all_of",
    "top_properties",
]

_COUNT_KEYS = ("minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties")
_JSON_TYPES = frozenset({"string", "number", "integer", "boolean", "object", "array", "null"})
_MAX_DEFAULT_CHARS = 200


def _marker(simple: Any) -> str:
    """Identity of a simplified schema for de-duplication (the simplifier builds keys in a fixed order)."""
    return repr(simple)


class _SchemaTooLarge(Exception):
    """The simplified schema would exceed the node budget; control flow between this module and
    :mod:`scopegate.openapi.translate`, which retries shallower (never reaches application code)."""


def deref(schema: Any, defs: Mapping[str, Any] | None) -> Any:
    """``schema`` with a top-level back-edge ``{"$ref": "#/$defs/X"}`` replaced by the definition.

    Sibling keys of the ``$ref`` override the definition's. Anything else is returned as is.
    """
    name = def_name_of(schema)
    if name is None or not defs or name not in defs:
        return schema
    target = defs[name]
    if len(schema) == 1 or not isinstance(target, dict):
        return target
    return {**target, **{k: v for k, v in schema.items() if k != "$ref"}}


@dataclass(frozen=True)
class SimplifyOptions:
    max_description: int = 300
    max_depth: int = 8
    request: bool = True  # drop readOnly properties
    # How many times one recursive definition is expanded on a path before a placeholder.
    recursion_depth: int = 1
    # Schema nodes one run may visit, and characters of description it may produce, before
    # _SchemaTooLarge (None: no bound).
    node_budget: int | None = None
    char_budget: int | None = None


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


def merge_all_of(schema: dict[str, Any], defs: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Merge ``allOf`` parts into one schema (outer keys win for scalars).

    A property declared by several parts becomes ``{"allOf": [first, second]}``,
    so an override (``readOnly: true`` for one property) is kept. Parts that
    are back-edges into ``defs`` are followed.
    """
    parts = schema.get("allOf")
    if not isinstance(parts, list):
        return schema
    out: dict[str, Any] = {k: v for k, v in schema.items() if k != "allOf"}
    props: dict[str, Any] = dict(out.get("properties") or {})
    required: list[str] = list(out.get("required") or [])
    for raw in parts:
        raw = deref(raw, defs)
        if not isinstance(raw, dict):
            continue
        part = merge_all_of(raw, defs)
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


def top_properties(schema: Any, defs: Mapping[str, Any] | None = None, _depth: int = 0) -> dict[str, list[Any]]:
    """Every top-level property an object schema can have (``allOf`` merged, union variants included).

    Maps each name to the sub-schemas that declare it.
    """
    body = deref(schema, defs)
    if not isinstance(body, dict) or _depth > 16:
        return {}
    merged = merge_all_of(body, defs)
    out: dict[str, list[Any]] = {}
    for name, sub in (merged.get("properties") or {}).items():
        out.setdefault(str(name), []).append(sub)
    for key in ("oneOf", "anyOf"):
        for variant in merged.get(key) or []:
            for name, subs in top_properties(variant, defs, _depth + 1).items():
                out.setdefault(name, []).extend(subs)
    return out


_CONSTRAINT_KEYS = frozenset(
    {"required", "title", "description", "not", "minProperties", "maxProperties", "dependentRequired"}
)


def _constraint_only(schema: Any) -> bool:
    """A union member that only constrains (``{required: [a]}``) and declares no shape of its own."""
    return isinstance(schema, dict) and bool(schema) and set(schema) <= _CONSTRAINT_KEYS


def is_read_only(schema: Any, defs: Mapping[str, Any] | None = None) -> bool:
    """``readOnly: true`` on the schema, or on any part of its ``allOf`` (an override)."""
    schema = deref(schema, defs)
    if not isinstance(schema, dict):
        return False
    if schema.get("readOnly") is True:
        return True
    parts = schema.get("allOf")
    return isinstance(parts, list) and any(is_read_only(p, defs) for p in parts)


class Simplifier:
    """One instance serves many schemas; :meth:`run` keeps per-run state (definitions, recursion, budget)."""

    def __init__(self, options: SimplifyOptions | None = None) -> None:
        self.options = options or SimplifyOptions()
        self._defs: Mapping[str, Any] = {}
        self._expanding: Counter[str] = Counter()
        self._nodes = 0
        self._chars = 0

    def describe(self, text: str) -> str:
        return bound_text(text, self.options.max_description)

    def run(self, schema: Any, depth: int = 0, *, defs: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Simplify ``schema``; back-edges are looked up in ``defs`` or the schema's own ``$defs``."""
        own = schema.get("$defs") if isinstance(schema, dict) else None
        self._defs = defs if defs is not None else (own if isinstance(own, Mapping) else {})
        self._expanding = Counter()
        self._nodes = 0
        self._chars = 0
        return self._node(schema, depth)

    # ------------------------------------------------------------------
    def _node(self, schema: Any, depth: int) -> dict[str, Any]:
        if not isinstance(schema, dict):
            return {}
        self._nodes += 1
        budget = self.options.node_budget
        if budget is not None and self._nodes > budget:
            raise _SchemaTooLarge(f"more than {budget} schema nodes")
        self._spend(12)  # a key, a type: the least a node costs in the declaration
        name = def_name_of(schema)
        if name is not None:
            if self._expanding[name] >= self.options.recursion_depth or name not in self._defs:
                return self._plain(recursive_placeholder(name), depth)
            self._expanding[name] += 1
            try:
                return self._node(deref(schema, self._defs), depth)
            finally:
                self._expanding[name] -= 1
        s = merge_all_of(schema, self._defs)
        for key in ("oneOf", "anyOf"):
            if isinstance(s.get(key), list):
                return self._union(s, key, depth)
        return self._plain(s, depth)

    def _spend(self, chars: int) -> None:
        self._chars += chars
        budget = self.options.char_budget
        if budget is not None and self._chars > budget:
            raise _SchemaTooLarge(f"more than {budget} characters of descriptions")

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
            self._spend(len(out["description"]))
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
            if self.options.request and is_read_only(sub, self._defs):
                continue
            if sub is False:
                continue
            props[str(name)] = self._node(sub, depth + 1) if isinstance(sub, dict) else {}
        req = s.get("required")
        required = [r for r in req if r in props] if isinstance(req, list) else []
        return props, list(dict.fromkeys(required))

    def _union(self, s: dict[str, Any], key: str, depth: int) -> dict[str, Any]:
        base = {k: v for k, v in s.items() if k not in ("oneOf", "anyOf", "discriminator")}
        raw_variants = [v for v in s[key] if isinstance(v, dict) and not is_null_schema(deref(v, self._defs))]
        constraints = [deref(v, self._defs) for v in raw_variants if _constraint_only(deref(v, self._defs))]
        raw_variants = [v for v in raw_variants if not _constraint_only(deref(v, self._defs))]
        if constraints and not raw_variants:
            # anyOf/oneOf of bare `required` lists: "at least one of a, b" on one object, not a union.
            groups = [", ".join(c.get("required") or []) for c in constraints if c.get("required")]
            if groups:
                word = "At least one of" if key == "anyOf" else "Exactly one of"
                note = f"{word}: {' | '.join(groups)}."
                base = {**base, "description": f"{base.get('description', '')} {note}".strip()}
            other = {k: v for k, v in s.items() if k != key}
            return self._node(other | {"description": base.get("description", "")} if groups else other, depth)
        if not raw_variants:
            return self._plain(base, depth)
        if len(raw_variants) == 1:
            only = raw_variants[0]
            if def_name_of(only) is not None and not base:
                return self._node(only, depth)
            # One real variant: it and the rest of the schema both apply (their properties add up).
            merged = merge_all_of({**base, "allOf": [deref(only, self._defs)]}, self._defs)
            return self._node(merged, depth)
        variants = [x for v in self._variants(raw_variants) for x in self._expand(v)]
        if all(_is_object(v) for v in variants) and (not base.get("type") or base.get("type") == "object"):
            return self._object_union(base, variants, s.get("discriminator"), depth)
        options: list[dict[str, Any]] = []
        seen: set[str] = set()
        for v in raw_variants:
            simple = self._node(v, depth)
            marker = _marker(simple)
            if marker not in seen:
                seen.add(marker)
                options.append(simple)
        desc = base.get("description")
        return self._any_of(options, desc if isinstance(desc, str) else "")

    def _expand(self, variant: Any, level: int = 0) -> list[dict[str, Any]]:
        """A variant with its own oneOf/anyOf (no discriminator) stands for each of its members."""
        v = merge_all_of(variant, self._defs) if isinstance(variant, dict) else {}
        for key in ("oneOf", "anyOf"):
            subs = v.get(key)
            if not isinstance(subs, list) or v.get("discriminator") or level >= 4:
                continue
            base = {k: x for k, x in v.items() if k not in ("oneOf", "anyOf")}
            out: list[dict[str, Any]] = []
            for sub in self._variants(subs):
                if not isinstance(sub, dict) or is_null_schema(sub) or _constraint_only(sub):
                    continue
                outer = {k: x for k, x in base.items() if not (k == "type" and "type" in sub)}
                out.extend(self._expand(merge_all_of({**outer, "allOf": [sub]}, self._defs), level + 1))
            return out or [base]
        return [v]

    def _variants(self, raw: list[Any]) -> list[Any]:
        """Union members with back-edges followed (an object union needs their properties)."""
        out: list[Any] = []
        for v in raw:
            name = def_name_of(v)
            if name is not None and (self._expanding[name] >= self.options.recursion_depth or name not in self._defs):
                out.append(recursive_placeholder(name))
            else:
                out.append(deref(v, self._defs))
        return out

    def _any_of(self, options: list[dict[str, Any]], desc: str) -> dict[str, Any]:
        """Combine simplified alternatives: flatten nested anyOf, dedupe, collapse trivial cases."""
        flat: list[dict[str, Any]] = []
        seen: set[str] = set()
        for option in options:
            parts = option["anyOf"] if set(option) <= {"anyOf", "description"} and "anyOf" in option else [option]
            for part in parts:
                marker = _marker(part)
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
        types = {o.get("type") if isinstance(o.get("type"), str) else None for o in flat}
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
            distinct = {_marker(x): x for x in subs}
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
