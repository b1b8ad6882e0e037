"""Schema-shaped JSON from a spec's own response schemas, filled from a small world's records.

Deterministic: the same request always gets the same body. A property takes the value of the
record being shown when the record has it; otherwise only required properties get a plain value
of their type (first enum value, a format-shaped string, 0, false), so nothing invented looks like
another tenant's data.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

MAX_DEPTH = 8
Related = Callable[[str, Mapping[str, Any]], "Mapping[str, Any] | None"]


class Resolver:
    """Local ``$ref`` (``#/...``) lookups in one spec document, with ``allOf`` merged."""

    def __init__(self, document: Mapping[str, Any]) -> None:
        self.document = document

    def ref(self, pointer: str) -> Any:
        node: Any = self.document
        for token in pointer.removeprefix("#/").split("/"):
            node = node[token.replace("~1", "/").replace("~0", "~")]
        return node

    def schema(self, node: Any, seen: int = 0) -> dict[str, Any]:
        while isinstance(node, Mapping) and "$ref" in node and seen < 50:
            node = self.ref(str(node["$ref"]))
            seen += 1
        if not isinstance(node, Mapping):
            return {}
        if "allOf" in node:
            merged: dict[str, Any] = {k: v for k, v in node.items() if k != "allOf"}
            props: dict[str, Any] = dict(merged.get("properties") or {})
            required = list(merged.get("required") or [])
            for part in node["allOf"]:
                sub = self.schema(part, seen + 1)
                props.update(sub.get("properties") or {})
                required += list(sub.get("required") or [])
                merged.setdefault("type", sub.get("type"))
                if "items" in sub:
                    merged.setdefault("items", sub["items"])
            merged["properties"], merged["required"] = props, required
            return merged
        for key in ("oneOf", "anyOf"):
            if node.get(key):
                return self.schema(node[key][0], seen + 1)
        return dict(node)


def _default(name: str, schema: Mapping[str, Any]) -> Any:
    enum = schema.get("enum")
    if enum:
        return enum[0]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    if kind in ("integer", "number"):
        return 0
    if kind == "boolean":
        return name == "success"
    if kind == "array":
        return []
    if kind == "object":
        return {}
    fmt = schema.get("format")
    return {"date-time": "2026-01-01T00:00:00Z", "date": "2026-01-01", "email": "user@example.com"}.get(
        str(fmt), f"{name}"
    )


def fill(
    resolver: Resolver,
    node: Any,
    ctx: Mapping[str, Any],
    related: Related,
    *,
    name: str = "",
    depth: int = 0,
    items: list[Mapping[str, Any]] | None = None,
    keys: tuple[str, str] = ("list", "result"),
) -> Any:
    """An instance of ``node`` shaped by its schema, values from ``ctx`` (the record shown here).

    ``related(property, ctx)`` gives the record a nested object property stands for (``customer`` inside
    a subscription), or None. ``items`` are the records of a listing: the array property named
    ``keys[0]`` gets one element per record; the object property named ``keys[1]`` (an envelope's
    ``result``) shows the record itself."""
    schema = resolver.schema(node)
    kind = schema.get("type")
    if kind == "array" or "items" in schema:
        element = schema.get("items") or {}
        if items is not None:
            return [fill(resolver, element, record, related, name=name, depth=depth + 1, keys=keys) for record in items]
        value = ctx.get(name) if name else None
        if isinstance(value, list):
            return [
                fill(resolver, element, v if isinstance(v, Mapping) else {}, related, depth=depth + 1)
                if isinstance(v, Mapping)
                else v
                for v in value
            ]
        return []
    if kind == "object" or "properties" in schema:
        if depth > MAX_DEPTH:
            return {}
        if not schema.get("properties"):  # a free-form object: the record as it is
            return {k: v for k, v in ctx.items() if not k.startswith("__")}
        out: dict[str, Any] = {}
        required = set(schema.get("required") or ())
        properties = schema.get("properties") or {}
        for prop, sub_node in properties.items():
            sub = resolver.schema(sub_node)
            nested = sub.get("type") == "object" or "properties" in sub
            listing = sub.get("type") == "array" or "items" in sub
            if listing and items is not None and prop in keys:
                out[prop] = fill(resolver, sub, ctx, related, name=prop, depth=depth + 1, items=items, keys=keys)
                items = None  # one listing per body
                continue
            if nested:
                record = ctx if prop == keys[1] and depth == 0 else related(prop, ctx)
                if record is None and isinstance(ctx.get(prop), Mapping):
                    record = ctx[prop]
                if record is not None or prop in required:
                    out[prop] = fill(resolver, sub, record or {}, related, name=prop, depth=depth + 1, keys=keys)
                continue
            if prop in ctx and not isinstance(ctx[prop], Mapping):
                out[prop] = ctx[prop] if not listing else fill(resolver, sub, ctx, related, name=prop, depth=depth)
            elif prop in required:
                out[prop] = _default(prop, sub)
        if items is not None and depth == 0:  # a listing whose schema has no such array: the records as they are
            out.setdefault(keys[0], [{k: v for k, v in r.items() if not k.startswith("__")} for r in items])
        return out
    if name and name in ctx:
        return ctx[name]
    return _default(name, schema)
