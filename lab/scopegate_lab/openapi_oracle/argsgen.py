"""Deterministic valid arguments for a tool, generated from the declaration the model sees.

Only the declaration (``ToolDeclaration.parameters``: the JSON Schema subset a
model is given) is read, as a model would: types, enums, bounds, patterns,
formats, required properties. Strings mix in characters that stress encoding
(space, ``/``, ``&``, ``=``, ``,``, ``#``, ``%``, ``[]``, non-ASCII) unless the
argument is a header (printable ASCII only) or the schema constrains them.
A given ``seed`` always gives the same arguments.
"""

from __future__ import annotations

import importlib
import random
import re
import string
from collections.abc import Mapping
from typing import Any

import rstr

from scopegate.openapi.runtime.schema import compile_validator

# rstr caps every repetition, explicit ones too, at this: keep `+`/`*` shortish but allow {64}.
setattr(importlib.import_module("rstr.xeger"), "STAR_PLUS_LIMIT", 64)  # noqa: B010

_ALNUM = string.ascii_letters + string.digits
_TRICKY = ("a b", "x/y", "a&b=c", "ü-é", "100%", "c,d", "k[1]", "q#r", "plus+sign", ":semi;colon", "..")
_FORMATS: dict[str, Any] = {
    "date-time": lambda r: f"2024-0{r.randint(1, 9)}-1{r.randint(0, 9)}T12:3{r.randint(0, 9)}:00Z",
    "date": lambda r: f"2024-0{r.randint(1, 9)}-1{r.randint(0, 9)}",
    "time": lambda r: f"12:3{r.randint(0, 9)}:00",
    "email": lambda r: f"user{r.randint(1, 99)}@example.test",
    "uri": lambda r: f"https://example.test/p/{r.randint(1, 99)}",
    "url": lambda r: f"https://example.test/p/{r.randint(1, 99)}",
    "uri-reference": lambda r: f"/p/{r.randint(1, 99)}",
    "uuid": lambda r: "-".join(f"{r.getrandbits(bits):0{bits // 4}x}" for bits in (32, 16, 16, 16, 48)),
    "ipv4": lambda r: f"192.0.2.{r.randint(1, 254)}",
    "ipv6": lambda r: f"2001:db8::{r.randint(1, 9999):x}",
    "hostname": lambda r: f"host{r.randint(1, 99)}.example.test",
    "byte": lambda r: "aGVsbG8=",
    "binary": lambda r: "binary-content",
    "password": lambda r: "pw-" + "".join(r.choice(_ALNUM) for _ in range(8)),
}


class ArgumentGenerator:
    """``generate(parameters_schema, locations)`` -> one argument mapping."""

    boundary_rate = 0.0  # how often a bounded string gets its maximum length

    def __init__(self, seed: int, *, optional_rate: float = 0.5, tricky_rate: float = 0.3, max_items: int = 3):
        self.rng = random.Random(seed)
        self.xeger = rstr.Rstr(self.rng)
        self.optional_rate = optional_rate
        self.tricky_rate = tricky_rate
        self.max_items = max_items

    def generate(self, parameters: Mapping[str, Any], ascii_only: frozenset[str] = frozenset()) -> dict[str, Any]:
        props = parameters.get("properties") or {}
        required = set(parameters.get("required") or [])
        out: dict[str, Any] = {}
        for name, schema in props.items():
            if name in required or self.rng.random() < self.optional_rate:
                out[name] = self.value(schema, 0, ascii_only=name in ascii_only)
        return out

    # ------------------------------------------------------------------
    def value(self, schema: Any, depth: int, *, ascii_only: bool = False) -> Any:
        r = self.rng
        if not isinstance(schema, Mapping):
            return "x"
        if isinstance(schema.get("enum"), list) and schema["enum"]:
            return r.choice(schema["enum"])
        if isinstance(schema.get("anyOf"), list) and schema["anyOf"]:
            return self.value(r.choice(schema["anyOf"]), depth, ascii_only=ascii_only)
        t = schema.get("type")
        if isinstance(t, list):
            choices = [x for x in t if x != "null"] or ["string"]
            t = r.choice(choices)
        if t is None:
            t = "object" if "properties" in schema else "array" if "items" in schema else "string"
        if t == "string":
            return self._string(schema, ascii_only)
        if t == "integer":
            return self._integer(schema)
        if t == "number":
            return self._number(schema)
        if t == "boolean":
            return r.random() < 0.5
        if t == "array":
            return self._array(schema, depth, ascii_only)
        if t == "object":
            return self._object(schema, depth, ascii_only)
        return None

    def _string(self, schema: Mapping[str, Any], ascii_only: bool) -> str:
        r = self.rng
        lo = int(schema.get("minLength", 0) or 0)
        bounded = isinstance(schema.get("maxLength"), int)
        hi = int(schema["maxLength"]) if bounded else max(lo, 12)
        pattern = schema.get("pattern")
        if isinstance(pattern, str):
            for _ in range(8):
                try:
                    text = self.xeger.xeger(pattern)
                except Exception:
                    break
                fits = lo <= len(text) and (not bounded or len(text) <= hi)
                if fits and re.search(pattern, text) and (not ascii_only or text.isascii()):
                    return text
        fmt = schema.get("format")
        if isinstance(fmt, str) and fmt in _FORMATS:
            text = str(_FORMATS[fmt](r))
            if lo <= len(text) and (not bounded or len(text) <= hi):
                return text
        if not ascii_only and hi >= 3 and r.random() < self.tricky_rate:
            text = r.choice(_TRICKY)
            if lo <= len(text) <= hi:
                return text
        if bounded and hi > 10 and r.random() < self.boundary_rate:
            length = hi  # the boundary: tells apart variants that differ only by maxLength
        else:
            length = r.randint(max(lo, 1), max(lo, 1, min(hi, 10))) if hi > 0 else 0
        return "".join(r.choice(_ALNUM) for _ in range(length))

    def _integer(self, schema: Mapping[str, Any]) -> int:
        lo = schema.get("minimum")
        hi = schema.get("maximum")
        low = int(lo) if isinstance(lo, int | float) else 0
        high = int(hi) if isinstance(hi, int | float) else low + 100
        if high < low:
            high = low
        return self.rng.randint(low, min(high, low + 1000))

    def _number(self, schema: Mapping[str, Any]) -> float:
        lo = schema.get("minimum")
        hi = schema.get("maximum")
        low = float(lo) if isinstance(lo, int | float) else 0.0
        high = float(hi) if isinstance(hi, int | float) else low + 100.0
        value = round(self.rng.uniform(low, max(low, high)), 2)
        return min(max(value, low), max(low, high))

    def _array(self, schema: Mapping[str, Any], depth: int, ascii_only: bool) -> list[Any]:
        lo = int(schema.get("minItems", 0) or 0)
        hi = int(schema.get("maxItems", self.max_items) or 0)
        count = self.rng.randint(max(lo, 1 if depth == 0 else 0), max(lo, min(hi, self.max_items)))
        if depth > 5:
            count = lo
        items: list[Any] = []
        for _ in range(count * 4):
            if len(items) >= count:
                break
            v = self.value(schema.get("items") or {"type": "string"}, depth + 1, ascii_only=ascii_only)
            if schema.get("uniqueItems") and v in items:
                continue
            items.append(v)
        return items

    def _object(self, schema: Mapping[str, Any], depth: int, ascii_only: bool) -> dict[str, Any]:
        props = schema.get("properties") or {}
        required = set(schema.get("required") or [])
        out: dict[str, Any] = {}
        for name, sub in props.items():
            if name in required or (depth < 4 and self.rng.random() < self.optional_rate):
                out[name] = self.value(sub, depth + 1, ascii_only=ascii_only)
        extra = schema.get("additionalProperties")
        if not props and depth < 4 and extra is not False:
            sub = extra if isinstance(extra, Mapping) else {"type": "string"}
            for i in range(self.rng.randint(1, 2)):
                out[f"key{i}"] = self.value(sub, depth + 1, ascii_only=ascii_only)
        return out


class SpecArgumentGenerator(ArgumentGenerator):
    """Arguments from the operation's *original* schemas (refs, allOf, discriminated unions followed).

    The fallback when every try from the declaration was refused: a model that read the runtime's
    field-level errors would get there; the oracle still checks how such a request is serialised.
    """

    boundary_rate = 0.3

    def for_binding(self, binding: Any, hidden: frozenset[str]) -> dict[str, Any]:
        params = {(p.location, p.name): p for p in binding.operation.parameters}
        body_schema = binding.body_schema or {}
        defs = body_schema.get("$defs") if isinstance(body_schema, Mapping) else None
        body: Any = None
        if binding.body_media_type is not None:
            body = self.original(body_schema, defs or {}, 0, required_only=False)
        out: dict[str, Any] = {}
        for am in binding.arguments:
            if am.argument in hidden:
                continue
            if am.location == "body":
                out[am.argument] = body
            elif am.location == "body_property":
                if isinstance(body, Mapping) and am.original_name in body:
                    out[am.argument] = body[am.original_name]
            else:
                p = params.get((am.location, am.original_name))
                if p is not None and (p.required or self.rng.random() < self.optional_rate):
                    pdefs = p.schema.get("$defs") if isinstance(p.schema, Mapping) else None
                    out[am.argument] = self.original(
                        p.schema, pdefs or {}, 0, ascii_only=am.location in ("header", "path")
                    )
        return out

    def original(
        self, schema: Any, defs: Mapping[str, Any], depth: int, *, ascii_only: bool = False, required_only: bool = False
    ) -> Any:
        r = self.rng
        for _ in range(8):
            ref = schema.get("$ref") if isinstance(schema, Mapping) else None
            if not (isinstance(ref, str) and ref.startswith("#/$defs/")):
                break
            schema = {
                **defs.get(ref.rsplit("/", 1)[-1].replace("~1", "/").replace("~0", "~"), {}),
                **{k: v for k, v in schema.items() if k != "$ref"},
            }
        if not isinstance(schema, Mapping):
            return "x"
        if "const" in schema:
            return schema["const"]
        if isinstance(schema.get("allOf"), list):
            merged: dict[str, Any] = {k: v for k, v in schema.items() if k != "allOf"}
            props: dict[str, Any] = dict(merged.get("properties") or {})
            required = list(merged.get("required") or [])
            for part in schema["allOf"]:
                part = self._deref(part, defs)
                if isinstance(part, Mapping):
                    props.update(part.get("properties") or {})
                    required += list(part.get("required") or [])
                    for k, v in part.items():
                        if k not in ("properties", "required"):
                            merged.setdefault(k, v)
            if props:
                merged["properties"], merged["required"] = props, required
                merged.setdefault("type", "object")
            return self.original(merged, defs, depth, ascii_only=ascii_only)
        for key in ("oneOf", "anyOf"):
            variants = schema.get(key)
            if isinstance(variants, list) and variants:
                real = [v for v in variants if self._deref(v, defs) not in ({"type": "null"},)]
                base = {k: v for k, v in schema.items() if k not in (key, "discriminator")}
                disc = schema.get("discriminator")
                exclusive = key == "oneOf" and disc is None and len(real or variants) > 1
                for _ in range(8 if exclusive else 1):
                    index = r.randrange(len(real or variants))
                    chosen = (real or variants)[index]
                    value = self.original(
                        {**base, "allOf": [chosen]} if base else chosen, defs, depth, ascii_only=ascii_only
                    )
                    # oneOf is exclusive: a value that also fits another variant (Cloudflare's app_id: a
                    # 32-character identifier or a 36-character UUID, both strings) is invalid; try again.
                    if not exclusive or _fits_exactly_one(value, variants, defs):
                        break
                if isinstance(disc, Mapping) and isinstance(value, dict):
                    tags = disc.get("x-variant-tags")
                    if isinstance(tags, list) and index < len(tags) and tags[index]:
                        value[disc["propertyName"]] = tags[index][0]
                return value
        t = schema.get("type")
        if isinstance(t, list):
            t = r.choice([x for x in t if x != "null"] or ["string"])
        if t == "object" or (t is None and "properties" in schema):
            out: dict[str, Any] = {}
            needed = set(schema.get("required") or [])
            for name, sub in (schema.get("properties") or {}).items():
                sub_d = self._deref(sub, defs)
                if isinstance(sub_d, Mapping) and sub_d.get("readOnly") is True:
                    continue
                if name in needed or (not required_only and depth < 4 and r.random() < self.optional_rate):
                    out[name] = self.original(sub, defs, depth + 1, ascii_only=ascii_only, required_only=depth > 3)
            return out
        if t == "array" or (t is None and "items" in schema):
            lo = int(schema.get("minItems", 0) or 0)
            count = max(lo, 1 if depth < 3 else lo)
            return [
                self.original(schema.get("items") or {}, defs, depth + 1, ascii_only=ascii_only) for _ in range(count)
            ]
        return self.value(schema, depth, ascii_only=ascii_only)

    @staticmethod
    def _deref(schema: Any, defs: Mapping[str, Any]) -> Any:
        ref = schema.get("$ref") if isinstance(schema, Mapping) else None
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            return defs.get(ref.rsplit("/", 1)[-1], {})
        return schema


def _fits_exactly_one(value: Any, variants: list[Any], defs: Mapping[str, Any]) -> bool:
    fits = 0
    for variant in variants:
        schema = {**variant, "$defs": defs} if isinstance(variant, Mapping) else variant
        if compile_validator(schema).is_valid(value):
            fits += 1
    return fits == 1
