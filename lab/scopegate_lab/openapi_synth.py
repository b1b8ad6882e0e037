"""Synthetic OpenAPI specs with the shapes that break naive loaders, for tests and benchmarks.

``expandable_web(schemas, operations)`` imitates a large payments API: every
component schema has "expandable" fields ``anyOf: [{type: string}, {$ref:
Other}]`` pointing at other schemas, so the schemas form one big web of
mutual recursion, referenced from every response and from some request
bodies; writes are form-encoded with ``encoding`` (``deepObject`` metadata,
indexed ``items[0][price]``, ``expand[]``), reads take ``expand[]`` and a
``created[gt]`` deepObject filter, every GET/DELETE carries an empty form
request body. It also has a deep ``allOf`` chain and a discriminated
``oneOf`` used by JSON bodies. Deterministic for a given ``seed``.

    spec = expandable_web(200, 500)        # a plain dict, JSON-serialisable
"""

from __future__ import annotations

import random
from typing import Any

FORM = "application/x-www-form-urlencoded"


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _web_schema(i: int, n: int, expandable: int, rng: random.Random) -> dict[str, Any]:
    props: dict[str, Any] = {
        "id": {"type": "string", "description": f"Unique identifier of the <b>S{i}</b> object."},
        "object": {"type": "string", "enum": [f"s{i}"]},
        "created": {"type": "integer", "format": "unix-time"},
        "livemode": {"type": "boolean"},
        "status": {"type": "string", "enum": ["active", "inactive", "pending"]},
        "metadata": {"type": "object", "additionalProperties": {"type": "string", "maxLength": 500}},
        "amount": {"type": "integer", "minimum": 0},
    }
    for j in range(expandable):
        target = rng.randrange(n)
        props[f"rel_{j}"] = {
            "anyOf": [{"type": "string", "maxLength": 5000}, _ref(f"S{target}")],
            "description": f"ID of the related object, or the [expanded object](https://docs.test/expand) S{target}.",
            "nullable": True,
            "x-expansionResources": {"oneOf": [_ref(f"S{target}")]},
        }
    return {
        "type": "object",
        "title": f"S{i}",
        "description": f"<p>The <code>S{i}</code> object. See <a href='https://docs.test/s{i}'>the guide</a>.</p>",
        "required": ["id", "object", "created"],
        "properties": props,
    }


def _form_body(i: int, n: int, rng: random.Random, *, with_web_ref: bool) -> dict[str, Any]:
    props: dict[str, Any] = {
        "description": {"type": "string", "maxLength": 5000},
        "amount": {"type": "integer", "minimum": 0},
        "currency": {"type": "string", "enum": ["usd", "eur", "gbp"]},
        "metadata": {
            "anyOf": [{"type": "object", "additionalProperties": {"type": "string"}}, {"type": "string", "enum": [""]}],
            "description": "Set of key-value pairs.",
        },
        "expand": {"type": "array", "items": {"type": "string", "maxLength": 5000}},
        "items": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["price"],
                "properties": {"price": {"type": "string"}, "quantity": {"type": "integer", "minimum": 1}},
            },
        },
        "confirm": {"type": "boolean"},
    }
    if with_web_ref:
        props["related"] = {"anyOf": [{"type": "string"}, _ref(f"S{rng.randrange(n)}")]}
    return {
        "required": False,
        "content": {
            FORM: {
                "schema": {"type": "object", "additionalProperties": False, "properties": props},
                "encoding": {
                    "metadata": {"style": "deepObject", "explode": True},
                    "expand": {"style": "deepObject", "explode": True},
                    "items": {"style": "deepObject", "explode": True},
                },
            }
        },
    }


_EMPTY_FORM = {
    "required": False,
    "content": {FORM: {"schema": {"type": "object", "additionalProperties": False, "properties": {}}}},
}


def _chain(depth: int) -> dict[str, Any]:
    schemas: dict[str, Any] = {"Chain0": {"type": "object", "properties": {"level_0": {"type": "string"}}}}
    for d in range(1, depth + 1):
        schemas[f"Chain{d}"] = {
            "allOf": [_ref(f"Chain{d - 1}"), {"type": "object", "properties": {f"level_{d}": {"type": "integer"}}}],
            "description": f"Level {d} of a deep allOf chain.",
        }
    return schemas


def _payments(variants: int) -> dict[str, Any]:
    schemas: dict[str, Any] = {
        "PaymentBase": {
            "type": "object",
            "required": ["type", "amount"],
            "properties": {"type": {"type": "string"}, "amount": {"type": "integer", "minimum": 1}},
        }
    }
    mapping: dict[str, str] = {}
    for v in range(variants):
        name = f"Method{v}"
        schemas[name] = {
            "allOf": [
                _ref("PaymentBase"),
                {
                    "type": "object",
                    "properties": {"type": {"type": "string", "enum": [f"m{v}"]}, f"field_{v}": {"type": "string"}},
                },
            ]
        }
        mapping[f"m{v}"] = f"#/components/schemas/{name}"
    schemas["Payment"] = {
        "oneOf": [_ref(f"Method{v}") for v in range(variants)],
        "discriminator": {"propertyName": "type", "mapping": mapping},
    }
    return schemas


def expandable_web(
    schemas: int = 200,
    operations: int = 500,
    *,
    expandable: int = 6,
    chain_depth: int = 40,
    variants: int = 30,
    seed: int = 7,
) -> dict[str, Any]:
    """A spec with a web of ``schemas`` mutually expandable schemas and ``operations`` operations."""
    if schemas < 1 or operations < 1:
        raise ValueError("schemas and operations must be positive")
    rng = random.Random(seed)
    components: dict[str, Any] = {f"S{i}": _web_schema(i, schemas, expandable, rng) for i in range(schemas)}
    components.update(_chain(chain_depth))
    components.update(_payments(variants))
    components["List"] = {
        "type": "object",
        "properties": {"has_more": {"type": "boolean"}, "data": {"type": "array", "items": {}}},
    }
    paths: dict[str, Any] = {}
    kinds = ("list", "get", "create", "update", "delete", "json")
    count = 0
    i = 0
    while count < operations:
        s = i % schemas
        kind = kinds[(i // schemas) % len(kinds)] if i >= schemas else kinds[i % len(kinds)]
        i += 1
        base = f"/v1/s{s}"
        item_path = f"{base}/{{id}}"
        id_param = {"name": "id", "in": "path", "required": True, "schema": {"type": "string", "maxLength": 5000}}
        expand = {
            "name": "expand",
            "in": "query",
            "style": "deepObject",
            "explode": True,
            "schema": {"type": "array", "items": {"type": "string"}},
            "description": "Specifies which fields in the response should be expanded.",
        }
        obj = {"200": {"description": "ok", "content": {"application/json": {"schema": _ref(f"S{s}")}}}}
        if kind == "list":
            key, method = base, "get"
            op: dict[str, Any] = {
                "operationId": f"List{s}_{i}",
                "summary": f"List all S{s}",
                "description": f"<p>Returns a list of <strong>S{s}</strong> objects.</p>",
                "deprecated": i % 3 == 0,
                "parameters": [
                    expand,
                    {"name": "limit", "in": "query", "schema": {"type": "integer", "minimum": 1, "maximum": 100}},
                    {"name": "starting_after", "in": "query", "schema": {"type": "string"}},
                    {
                        "name": "created",
                        "in": "query",
                        "style": "deepObject",
                        "explode": True,
                        "schema": {
                            "type": "object",
                            "properties": {"gt": {"type": "integer"}, "lt": {"type": "integer"}},
                        },
                    },
                ],
                "requestBody": _EMPTY_FORM,
                "responses": {
                    "200": {
                        "description": "ok",
                        "content": {
                            "application/json": {
                                "schema": {
                                    "allOf": [
                                        _ref("List"),
                                        {"properties": {"data": {"type": "array", "items": _ref(f"S{s}")}}},
                                    ]
                                }
                            }
                        },
                    }
                },
            }
        elif kind in ("get", "create", "update", "delete"):
            # (path, method, operationId prefix, parameters); writes get a form body, reads an empty one
            key, method, prefix, params = {
                "get": (item_path, "get", "Retrieve", [id_param, expand]),
                "create": (base, "post", "Create", []),
                "update": (item_path, "post", "Update", [id_param]),
                "delete": (item_path, "delete", "Delete", [id_param]),
            }[kind]
            writes = method == "post"
            body = _form_body(s, schemas, rng, with_web_ref=i % 4 == int(kind == "update")) if writes else _EMPTY_FORM
            op = {"operationId": f"{prefix}{s}_{i}", "parameters": params, "requestBody": body, "responses": obj}
        else:
            key, method = f"/v1/s{s}/{{id}}/payments", "post"
            op = {
                "operationId": f"Pay{s}_{i}",
                "parameters": [id_param],
                "requestBody": {
                    "required": True,
                    "content": {
                        "application/json": {
                            "schema": {
                                "type": "object",
                                "required": ["payment"],
                                "properties": {
                                    "payment": _ref("Payment"),
                                    "chain": _ref(f"Chain{chain_depth}"),
                                    "note": {"type": "string"},
                                },
                            }
                        }
                    },
                },
                "responses": obj,
            }
        if method in paths.get(key, {}):
            continue
        paths.setdefault(key, {})[method] = op
        count += 1
        if i > operations * 20:  # pragma: no cover - cannot happen with at least one schema
            break
    return {
        "openapi": "3.0.3",
        "info": {"title": f"Synthetic expandable web ({schemas} schemas, {operations} operations)", "version": "1"},
        "servers": [{"url": "https://api.synthetic.test"}],
        "security": [{"bearer": []}],
        "paths": paths,
        "components": {
            "schemas": components,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
    }


SUITE: dict[str, tuple[int, int]] = {
    "synthetic-web-10": (10, 60),
    "synthetic-web-50": (50, 300),
    "synthetic-web-200": (200, 500),
}
"""Named synthetic specs for benchmarks: (schemas, operations)."""
