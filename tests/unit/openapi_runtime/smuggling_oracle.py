"""Test helpers for the smuggling property: valid values from a schema, hostile variants, a wire reader.

The wire reader parses a built request the way servers do (``httpx.URL`` query, ``SimpleCookie``,
``parse_qsl`` form bodies, JSON pairs with duplicates), independently of
``scopegate.openapi.runtime.reserved_names``.
"""

from __future__ import annotations

import functools
import json
import re
import re._parser as sre
import unicodedata
from collections.abc import Mapping
from http.cookies import CookieError, SimpleCookie
from typing import Any
from urllib.parse import parse_qsl

import httpx

from scopegate.openapi.runtime.request import BuiltRequest

_FORMATS = {
    "date-time": "2024-01-02T03:04:05Z",
    "date": "2024-01-02",
    "time": "03:04:05Z",
    "uuid": "123e4567-e89b-12d3-a456-426614174000",
    "email": "a@example.test",
    "uri": "https://example.test/x",
    "url": "https://example.test/x",
    "ipv4": "192.0.2.1",
    "ipv6": "2001:db8::1",
    "hostname": "example.test",
}


_CATEGORY = {"CATEGORY_DIGIT": "0", "CATEGORY_WORD": "a", "CATEGORY_SPACE": " "}


def _emit(items: Any) -> str:
    out = []
    for op, arg in items:
        name = str(op)
        if name == "LITERAL":
            out.append(chr(arg))
        elif name == "NOT_LITERAL":
            out.append("b" if chr(arg) == "a" else "a")
        elif name == "ANY":
            out.append("a")
        elif name == "IN":
            out.append(_first_in(arg))
        elif name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            low, _, sub = arg
            out.append(_emit(sub) * low)
        elif name == "SUBPATTERN":
            out.append(_emit(arg[-1]))
        elif name == "BRANCH":
            out.append(_emit(arg[1][0]))
        elif name == "CATEGORY":
            out.append(_CATEGORY.get(str(arg), "a"))
    return "".join(out)


def _first_in(items: Any) -> str:
    for op, arg in items:
        name = str(op)
        if name == "LITERAL":
            return chr(arg)
        if name == "RANGE":
            return chr(arg[0])
        if name == "CATEGORY":
            return _CATEGORY.get(str(arg), "a")
    return "a"


@functools.cache
def matching(pattern: str) -> str | None:
    """A short string matching a JSON Schema ``pattern`` (searched, as JSON Schema means it), or ``None``."""
    try:
        text = _emit(sre.parse(pattern))
        return text if re.search(pattern, text) else None
    except (re.error, RecursionError, ValueError, TypeError):
        return None


def valid_value(schema: Any, depth: int = 0) -> Any:
    """A small value the schema accepts (best effort)."""
    if not isinstance(schema, Mapping) or depth > 6:
        return "a1"
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    if "default" in schema and schema["default"] is not None:
        return schema["default"]
    for key in ("oneOf", "anyOf"):
        if schema.get(key):
            return valid_value(schema[key][0], depth + 1)
    if schema.get("allOf"):
        merged: dict[str, Any] = {k: v for k, v in schema.items() if k != "allOf"}
        for part in schema["allOf"]:
            if isinstance(part, Mapping):
                merged.update(part)
        return valid_value(merged, depth + 1)
    typ = schema.get("type")
    if isinstance(typ, list):
        typ = next((t for t in typ if t != "null"), None)
    if typ is None and "properties" in schema:
        typ = "object"
    if typ == "integer":
        return int(schema.get("minimum", 1))
    if typ == "number":
        return float(schema.get("minimum", 1.5))
    if typ == "boolean":
        return True
    if typ == "array":
        return [valid_value(schema.get("items"), depth + 1) for _ in range(max(1, int(schema.get("minItems", 1))))]
    if typ == "object":
        props = schema.get("properties") or {}
        return {k: valid_value(props.get(k), depth + 1) for k in schema.get("required") or [] if k in props}
    if typ == "string" and isinstance(schema.get("pattern"), str):
        found = matching(schema["pattern"])
        if found is not None:
            return found
    if typ == "string" or typ is None:
        text = _FORMATS.get(str(schema.get("format")), "a1")
        return text + "x" * max(0, int(schema.get("minLength", 0)) - len(text))
    return "a1"


def may_be_object(schema: Any) -> bool:
    if not isinstance(schema, Mapping):
        return True
    typ = schema.get("type")
    types = set(typ) if isinstance(typ, list) else {typ}
    if schema.get("additionalProperties") is False and not schema.get("properties"):
        return False
    return bool(types & {"object", None}) or any(may_be_object(s) for s in schema.get("oneOf") or [])


def spellings(name: str) -> list[str]:
    return [name, name.upper(), name.replace("_", "-"), name.replace("_", "."), f"{name}[]", f"{name}[0]", f" {name}"]


def hostile_variants(value: Any, schema: Any, reserved: list[str], focus: list[str] | None = None) -> list[Any]:
    """Values for one argument that try to put each reserved name on the wire: all at once in every
    spelling, and each of ``focus`` (default: all) alone, so one refusal does not hide another path."""
    out: list[Any] = []
    keys = {s: "bob" for name in reserved for s in spellings(name)}
    if isinstance(value, dict) or ((value is None or isinstance(value, str)) and may_be_object(schema)):
        base = value if isinstance(value, dict) else {}
        out.append({**base, **keys})
        out.extend({**base, name: "bob"} for name in (reserved if focus is None else focus))
    if isinstance(value, list):
        if value and isinstance(value[0], dict):
            out.append([{**value[0], **keys}])
        out.append([f"x&{name}=bob" for name in reserved])
    if isinstance(value, str) or value is None:
        out.append("".join(f"x&{n}=bob; {n}=bob,{n},bob" for n in reserved))
    return out


def norm(name: str) -> str:
    text = unicodedata.normalize("NFKC", name.partition("\x00")[0]).casefold().strip()
    for ch in " .-\t":
        text = text.replace(ch, "_")
    while text.endswith("[]"):
        text = text[:-2]
    return text


def collides(name: str, reserved: str) -> bool:
    n = norm(name)
    return n == reserved or (n.startswith(reserved + "[") and "[" not in reserved)


def wire_pairs(built: BuiltRequest) -> list[tuple[str, str]]:
    """(name, value) for every query parameter, header, cookie and body field of the request."""
    pairs = list(httpx.URL(built.url).params.multi_items())
    for name, value in built.header_list():
        if name.lower() == "cookie":
            jar: SimpleCookie = SimpleCookie()
            try:
                jar.load(value)
            except CookieError:
                pairs.extend((p.split("=", 1)[0].strip(), p.partition("=")[2]) for p in value.split(";"))
                continue
            pairs.extend((k, m.value) for k, m in jar.items())
        elif name.lower() != "content-type":
            pairs.append((name, value))
    media = (built.content_type or "").split(";")[0].strip().lower()
    if built.body is not None and media == "application/x-www-form-urlencoded":
        pairs.extend(parse_qsl(built.body.decode("ascii", "replace"), keep_blank_values=True))
    elif built.body is not None and (media == "application/json" or media.endswith("+json")):
        found: list[tuple[str, str]] = []

        def hook(items: list[tuple[str, Any]]) -> dict[str, Any]:
            found.clear()
            found.extend((k, v if isinstance(v, str) else json.dumps(v)) for k, v in items)
            return dict(items)

        try:
            root = json.loads(built.body, object_pairs_hook=hook)
        except ValueError:
            root = None
        if isinstance(root, dict):
            pairs.extend(found)
    return pairs
