"""Validate argument values against the *original* OpenAPI schemas.

OpenAPI 3.0 schemas are not quite JSON Schema (``nullable``, boolean
``exclusiveMinimum``); :func:`to_json_schema` rewrites them into 2020-12 form,
for the request direction (``readOnly`` properties are not required). The
result is used with ``jsonschema``'s 2020-12 validator, compiled once.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

MAX_PROBLEMS = 10
MAX_PROBLEM_CHARS = 200
_SCHEMA_KEYS_WITH_SUBSCHEMA = ("items", "additionalProperties", "not", "contains", "propertyNames")
_SCHEMA_KEYS_WITH_LIST = ("allOf", "anyOf", "oneOf", "prefixItems")
_SCHEMA_KEYS_WITH_MAP = ("properties", "patternProperties", "$defs", "definitions")


def to_json_schema(schema: Any, memo: dict[int, Any] | None = None) -> Any:
    """A 2020-12 copy of an OpenAPI (3.0 or 3.1) schema, for validating a request value."""
    memo = {} if memo is None else memo
    if not isinstance(schema, Mapping):
        return schema if isinstance(schema, bool) else {}
    key = id(schema)
    if key in memo:
        return memo[key]
    out: dict[str, Any] = {}
    memo[key] = out
    for name, value in schema.items():
        if name in _SCHEMA_KEYS_WITH_SUBSCHEMA:
            out[name] = to_json_schema(value, memo) if isinstance(value, Mapping | bool) else value
        elif name in _SCHEMA_KEYS_WITH_LIST and isinstance(value, list):
            out[name] = [to_json_schema(v, memo) for v in value]
        elif name in _SCHEMA_KEYS_WITH_MAP and isinstance(value, Mapping):
            out[name] = {k: to_json_schema(v, memo) for k, v in value.items()}
        elif name in ("nullable", "discriminator", "xml", "example", "externalDocs", "$ref", "$schema", "$id"):
            continue
        elif name == "format":
            continue  # formats are hints to the model; the API is the judge
        else:
            out[name] = value
    for bound in ("Minimum", "Maximum"):
        flag = out.get(f"exclusive{bound}")
        if isinstance(flag, bool):
            limit = out.get(bound.lower())
            del out[f"exclusive{bound}"]
            if flag and isinstance(limit, int | float):
                out[f"exclusive{bound}"] = limit
                del out[bound.lower()]
    if schema.get("nullable") is True:
        typ = out.get("type")
        if isinstance(typ, str):
            out["type"] = [typ, "null"]
        elif isinstance(typ, list) and "null" not in typ:
            out["type"] = [*typ, "null"]
        if isinstance(out.get("enum"), list) and None not in out["enum"]:
            out["enum"] = [*out["enum"], None]
    required = out.get("required")
    props = out.get("properties")
    if isinstance(required, list) and isinstance(props, Mapping):
        out["required"] = [
            r for r in required if not (isinstance(props.get(r), Mapping) and props[r].get("readOnly") is True)
        ]
    return out


def compile_validator(schema: Any) -> Draft202012Validator:
    return Draft202012Validator(to_json_schema(schema))


def _short(text: str) -> str:
    return text if len(text) <= MAX_PROBLEM_CHARS else text[: MAX_PROBLEM_CHARS - 1] + "…"


def _describe(error: ValidationError) -> str:
    validator = str(error.validator)
    schema = error.schema if isinstance(error.schema, Mapping) else {}
    if validator == "enum" and isinstance(schema.get("enum"), list):
        return "must be one of: " + ", ".join(map(str, schema["enum"][:20]))
    if validator == "type":
        return f"must be of type {schema.get('type')}"
    if validator == "additionalProperties":
        return "has properties that are not allowed"
    if validator in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        sign = {"minimum": ">=", "maximum": "<=", "exclusiveMinimum": ">", "exclusiveMaximum": "<"}[validator]
        return f"must be {sign} {error.validator_value}"
    if validator in ("minLength", "maxLength", "minItems", "maxItems"):
        what = "characters" if "Length" in validator else "items"
        sign = "at least" if validator.startswith("min") else "at most"
        return f"must have {sign} {error.validator_value} {what}"
    if validator == "pattern":
        return f"must match the pattern {error.validator_value}"
    return _short(f"is invalid ({validator})")


def problems(validator: Draft202012Validator, value: Any) -> list[tuple[tuple[str, ...], str]]:
    """Problems of ``value`` as (path inside the value, description); values are never echoed.

    A missing required property is reported at the path of that property.
    """
    out: list[tuple[tuple[str, ...], str]] = []
    for error in sorted(validator.iter_errors(value), key=lambda e: [str(p) for p in e.absolute_path]):
        path = tuple(str(p) for p in error.absolute_path)
        if error.validator == "required" and isinstance(error.instance, Mapping):
            for name in error.validator_value:
                if name not in error.instance:
                    out.append(((*path, str(name)), "is required"))
        else:
            out.append((path, _describe(error)))
        if len(out) >= MAX_PROBLEMS:
            break
    return out[:MAX_PROBLEMS]
