"""Validate argument values against the *original* OpenAPI schemas.

OpenAPI 3.0 schemas are not quite JSON Schema (``nullable``, boolean
``exclusiveMinimum``); :func:`to_json_schema` rewrites them into 2020-12 form,
for the request direction:

* ``readOnly`` properties (also when set through an ``allOf`` override, or
  declared in the allOf parts or oneOf/anyOf variants beside the ``required``
  list) are not required;
* an ``allOf`` whose parts close themselves with ``additionalProperties:
  false`` accepts the properties its sibling parts declare: the model was
  shown the merged object, so the body is validated against the same merged
  property set (JSON Schema alone would reject every property of the other
  parts);
* a ``discriminator`` selects the variant: the value is validated against the
  variant its tag names (JSON Schema's ``oneOf`` alone would accept a value that
  happens to fit another variant);
* any other ``oneOf`` is checked as ``anyOf`` (at least one branch matches),
  since overlapping branches would refuse every value that fits two of them
  (a ``oneOf`` of bare ``required`` lists, "exactly one of a | b", stays);
* a ``required`` property that ``additionalProperties: false`` forbids (declared
  nowhere in the object) is not required: no value could satisfy both, and
  the translator reports it (``contradictory_schema``);
* back-edges ``{"$ref": "#/$defs/X"}`` and the top-level ``$defs`` are kept.

The result is used with ``jsonschema``'s 2020-12 validator, compiled once.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

from scopegate.openapi.contradict import forbidden_required
from scopegate.openapi.simplify import _constraint_only, deref

MAX_PROBLEMS = 10
MAX_PROBLEM_CHARS = 200
_SCHEMA_KEYS_WITH_SUBSCHEMA = ("items", "additionalProperties", "not", "contains", "propertyNames")
_SCHEMA_KEYS_WITH_LIST = ("allOf", "anyOf", "oneOf", "prefixItems")
_SCHEMA_KEYS_WITH_MAP = ("properties", "patternProperties", "$defs", "definitions")
_DROPPED = frozenset(
    {"nullable", "discriminator", "xml", "example", "externalDocs", "$schema", "$id", "x-variant-tags"}
)


def _property_names(schema: Any, defs: Mapping[str, Any], depth: int = 0) -> set[str]:
    schema = deref(schema, defs)
    if not isinstance(schema, Mapping) or depth > 32:
        return set()
    names = {str(k) for k in schema.get("properties") or {}} if isinstance(schema.get("properties"), Mapping) else set()
    for part in schema.get("allOf") or []:
        names |= _property_names(part, defs, depth + 1)
    return names


def _open_parts(parts: list[Any], defs: Mapping[str, Any]) -> list[Any]:
    """allOf parts, each closed part (``additionalProperties: false``) also accepting its siblings' properties."""
    everything: set[str] = set()
    for part in parts:
        everything |= _property_names(part, defs)
    out: list[Any] = []
    for part in parts:
        body = deref(part, defs)
        if isinstance(body, Mapping) and (
            body.get("additionalProperties") is not None or body.get("unevaluatedProperties") is False
        ):
            own = _property_names(body, defs)
            extra = {name: True for name in sorted(everything - own)}
            if extra:
                props = dict(body.get("properties") or {}) if isinstance(body.get("properties"), Mapping) else {}
                props.update(extra)
                out.append({**body, "properties": props})
                continue
        out.append(part)
    return out


def _read_only(schema: Any, defs: Mapping[str, Any]) -> bool:
    schema = deref(schema, defs)
    if not isinstance(schema, Mapping):
        return False
    if schema.get("readOnly") is True:
        return True
    return any(_read_only(p, defs) for p in schema.get("allOf") or [] if isinstance(schema.get("allOf"), list))


def _read_only_names(schema: Any, defs: Mapping[str, Any], depth: int = 0) -> set[str]:
    """Names of the properties ``schema`` marks readOnly: its own, and those of its allOf parts and its
    oneOf/anyOf variants (Cloudflare lists ``id`` as required beside a oneOf whose variants make it readOnly)."""
    schema = deref(schema, defs)
    if not isinstance(schema, Mapping) or depth > 32:
        return set()
    props = schema.get("properties")
    names = {str(k) for k, v in props.items() if _read_only(v, defs)} if isinstance(props, Mapping) else set()
    for key in ("allOf", "oneOf", "anyOf"):
        parts = schema.get(key)
        for part in parts if isinstance(parts, list) else []:
            names |= _read_only_names(part, defs, depth + 1)
    return names


def to_json_schema(schema: Any, memo: dict[int, Any] | None = None, defs: Mapping[str, Any] | None = None) -> Any:
    """A 2020-12 copy of an OpenAPI (3.0 or 3.1) schema, for validating a request value."""
    memo = {} if memo is None else memo
    if not isinstance(schema, Mapping):
        return schema if isinstance(schema, bool) else {}
    key = id(schema)
    if key in memo:
        return memo[key]
    if defs is None:
        found = schema.get("$defs")
        defs = found if isinstance(found, Mapping) else {}
    if isinstance(schema.get("allOf"), list):
        schema = {**schema, "allOf": _open_parts(schema["allOf"], defs)}
    out: dict[str, Any] = {}
    memo[key] = out
    for name, value in schema.items():
        if name in _SCHEMA_KEYS_WITH_SUBSCHEMA:
            out[name] = to_json_schema(value, memo, defs) if isinstance(value, Mapping | bool) else value
        elif name in _SCHEMA_KEYS_WITH_LIST and isinstance(value, list):
            out[name] = [to_json_schema(v, memo, defs) for v in value]
        elif name in _SCHEMA_KEYS_WITH_MAP and isinstance(value, Mapping):
            out[name] = {k: to_json_schema(v, memo, defs) for k, v in value.items()}
        elif name in (
            "nullable",
            "discriminator",
            "xml",
            "example",
            "externalDocs",
            "$schema",
            "$id",
            "x-variant-tags",
        ):
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
    if isinstance(required, list):
        dropped = _read_only_names(schema, defs) | set(forbidden_required(schema, defs))
        out["required"] = [r for r in required if r not in dropped]
    _discriminate(out, schema)
    _any_branch(out)
    return out


def _any_branch(out: dict[str, Any]) -> None:
    """An undiscriminated ``oneOf`` is checked as ``anyOf``: a value matching at least one branch passes.

    Strict ``oneOf`` refuses a value that fits two overlapping branches (``{id}`` vs ``{id, name}``),
    which is most values of most real unions: the tool would refuse every call. The request is built
    from the value as given, whatever branch it fits; only a value that fits no branch is refused.
    """
    variants = out.get("oneOf")
    if not isinstance(variants, list) or all(_constraint_only(v) for v in variants):
        return  # "exactly one of a | b" (bare required lists) keeps its meaning: the branches do not overlap
    del out["oneOf"]
    if isinstance(out.get("anyOf"), list):
        out["allOf"] = [*(out.get("allOf") or []), {"anyOf": variants}]
    else:
        out["anyOf"] = variants


def _discriminate(out: dict[str, Any], schema: Mapping[str, Any]) -> None:
    """A discriminated oneOf/anyOf: the discriminator's value selects the variant (as OpenAPI says).

    Plain JSON Schema would accept a value that fits *another* variant; this
    validates against the variant the tag names, and only known tags.
    """
    disc = schema.get("discriminator")
    if not isinstance(disc, Mapping) or not isinstance(disc.get("propertyName"), str):
        return
    prop = disc["propertyName"]
    tags = disc.get("x-variant-tags")
    key = "oneOf" if isinstance(out.get("oneOf"), list) else "anyOf" if isinstance(out.get("anyOf"), list) else None
    if key is None or not isinstance(tags, list) or len(tags) != len(out[key]) or not all(tags):
        return
    variants = out.pop(key)
    branches: list[Any] = [
        {"if": {"properties": {prop: {"const": tag}}, "required": [prop]}, "then": variant}
        for variant, variant_tags in zip(variants, tags, strict=True)
        for tag in variant_tags
    ]
    known = [t for variant_tags in tags for t in variant_tags]
    branches.append({"properties": {prop: {"enum": known}}, "required": [prop]})
    out["allOf"] = [*(out.get("allOf") or []), *branches]


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
