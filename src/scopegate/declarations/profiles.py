"""One tool, four declaration profiles: Gemini, OpenAI strict, Anthropic, MCP.

Input is the neutral declaration every adapter already shares (name,
description, JSON Schema of the arguments, read-only flag); output is what
each API accepts:

- **gemini**: a ``google.genai`` ``FunctionDeclaration`` whose ``parameters``
  use the OpenAPI-3.0 ``Schema`` subset (upper-case types, ``nullable``,
  string enums, ``anyOf``; no ``const``/``oneOf``/``allOf``/``$ref``, only the
  documented formats).
- **openai**: a strict function (``strict: true``): every object closed with
  ``additionalProperties: false``, every property required, optional ones made
  nullable, only supported keywords. A schema strict mode cannot express
  (free-form maps, more nesting than allowed) is declared with
  ``strict: false`` and the reason, rather than rejected by the API.
- **anthropic**: ``{name, description, input_schema}`` with a JSON Schema
  object at the root.
- **mcp**: ``{name, description, inputSchema, outputSchema, annotations}``;
  ``outputSchema`` describes the result envelope (a result or a structured
  error), which every ``structuredContent`` the server sends satisfies.

Pure functions; the constraints they target are checked independently by
:mod:`scopegate.declarations.lint`.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

Profile = Literal["gemini", "openai", "anthropic", "mcp"]
PROFILES: tuple[Profile, ...] = ("gemini", "openai", "anthropic", "mcp")
OPENAI_MAX_DEPTH = 10
GEMINI_FORMATS = {"NUMBER": {"float", "double"}, "INTEGER": {"int32", "int64"}, "STRING": {"enum", "date-time"}}
OPENAI_STRING_FORMATS = {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
OPENAI_KEYWORDS = {
    "type", "description", "properties", "required", "additionalProperties", "items", "enum", "const", "anyOf",
    "pattern", "format", "multipleOf", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum",
    "minItems", "maxItems", "$defs", "$ref", "title",
}  # fmt: skip


@dataclass(frozen=True)
class ToolDecl:
    """The neutral declaration of one tool (what ``scopegate.config.declarations.declaration`` returns)."""

    name: str
    description: str
    parameters: Mapping[str, Any]
    read_only: bool = True
    family: str = "search"

    @classmethod
    def from_neutral(cls, data: Mapping[str, Any]) -> ToolDecl:
        return cls(
            name=str(data["name"]),
            description=str(data.get("description") or ""),
            parameters=data.get("parameters") or {"type": "object", "properties": {}},
            read_only=bool(data.get("read_only", True)),
            family=str(data.get("family") or "search"),
        )


# -- helpers -------------------------------------------------------------------------------------
def _types(schema: Mapping[str, Any]) -> list[str]:
    kind = schema.get("type")
    if isinstance(kind, list):
        return [str(k) for k in kind]
    return [str(kind)] if isinstance(kind, str) else []


def _union(schema: Mapping[str, Any]) -> list[Any] | None:
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list):
            return list(schema[key])
    return None


def _sanitise_name(name: str, pattern: str, limit: int) -> str:
    cleaned = re.sub(pattern, "_", name)[:limit]
    return cleaned or "tool"


# -- Gemini --------------------------------------------------------------------------------------
def _gemini_schema(schema: Any, depth: int = 0) -> dict[str, Any]:
    if not isinstance(schema, Mapping) or depth > 30:
        return {"type": "STRING"}
    out: dict[str, Any] = {}
    if isinstance(schema.get("description"), str) and schema["description"]:
        out["description"] = schema["description"]
    union = _union(schema)
    if union is not None:
        variants = [s for s in union if not (isinstance(s, Mapping) and _types(s) == ["null"])]
        if len(variants) < len(union):
            out["nullable"] = True
        if len(variants) == 1:
            return {**_gemini_schema(variants[0], depth + 1), **out}
        out["anyOf"] = [_gemini_schema(v, depth + 1) for v in variants]
        return out
    kinds = [k for k in _types(schema) if k != "null"]
    if len(kinds) < len(_types(schema)):
        out["nullable"] = True
    if len(kinds) > 1:
        out["anyOf"] = [_gemini_schema({**schema, "type": k}, depth + 1) for k in kinds]
        return out
    kind = kinds[0] if kinds else ("object" if "properties" in schema else None)
    if "const" in schema:
        return {**out, "type": "STRING", "enum": [str(schema["const"])]}
    if isinstance(schema.get("enum"), list):
        values = [v for v in schema["enum"] if v is not None]
        if len(values) < len(schema["enum"]):
            out["nullable"] = True
        return {**out, "type": "STRING", "format": "enum", "enum": [str(v) for v in values]}
    if kind is None:
        return {**out, "type": "STRING", "description": (out.get("description", "") + " (JSON value as text)").strip()}
    gtype = kind.upper()
    out["type"] = gtype
    if gtype == "OBJECT":
        props = schema.get("properties") or {}
        if props:
            out["properties"] = {k: _gemini_schema(v, depth + 1) for k, v in props.items()}
            required = [r for r in schema.get("required") or [] if r in props]
            if required:
                out["required"] = required
            out["propertyOrdering"] = list(props)
    elif gtype == "ARRAY":
        out["items"] = _gemini_schema(schema.get("items") or {"type": "string"}, depth + 1)
        for key, target in (("minItems", "minItems"), ("maxItems", "maxItems")):
            if isinstance(schema.get(key), int):
                out[target] = schema[key]
    elif gtype == "STRING":
        fmt = schema.get("format")
        if fmt in GEMINI_FORMATS["STRING"]:
            out["format"] = fmt
        for key in ("minLength", "maxLength"):
            if isinstance(schema.get(key), int):
                out[key] = schema[key]
        if isinstance(schema.get("pattern"), str):
            out["pattern"] = schema["pattern"]
    elif gtype in ("INTEGER", "NUMBER"):
        fmt = schema.get("format")
        if fmt in GEMINI_FORMATS[gtype]:
            out["format"] = fmt
        for key in ("minimum", "maximum"):
            if isinstance(schema.get(key), int | float) and not isinstance(schema.get(key), bool):
                out[key] = schema[key]
    return out


def render_gemini(tool: ToolDecl) -> dict[str, Any]:
    params = _gemini_schema(tool.parameters)
    params.setdefault("type", "OBJECT")
    return {
        "name": _sanitise_name(tool.name, r"[^A-Za-z0-9_.:-]", 128),
        "description": tool.description,
        "parameters": params,
    }


# -- OpenAI strict -------------------------------------------------------------------------------
class _NotStrict(Exception):
    pass


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    kinds = _types(schema)
    if "enum" in schema:
        out = {**schema, "enum": [*schema["enum"], None] if None not in schema["enum"] else schema["enum"]}
        if kinds and "null" not in kinds:
            out["type"] = [*kinds, "null"]
        return out
    if kinds and "anyOf" not in schema:
        return {**schema, "type": kinds if "null" in kinds else [*kinds, "null"]}
    if "anyOf" in schema:
        variants = schema["anyOf"]
        if any(isinstance(v, Mapping) and v.get("type") == "null" for v in variants):
            return schema
        return {**schema, "anyOf": [*variants, {"type": "null"}]}
    return {"anyOf": [schema, {"type": "null"}]}


def _openai_schema(schema: Any, depth: int) -> dict[str, Any]:
    if depth > OPENAI_MAX_DEPTH:
        raise _NotStrict(f"more than {OPENAI_MAX_DEPTH} levels of nesting")
    if not isinstance(schema, Mapping) or not schema:
        raise _NotStrict("a value of any type")
    out: dict[str, Any] = {}
    if isinstance(schema.get("description"), str) and schema["description"]:
        out["description"] = schema["description"]
    union = _union(schema)
    if union is not None:
        out["anyOf"] = [_openai_schema(s, depth + 1) for s in union]
        return out
    if "const" in schema:
        return {**out, "const": schema["const"]}
    kinds = _types(schema)
    if isinstance(schema.get("enum"), list):
        out["enum"] = list(schema["enum"])
        if kinds:
            out["type"] = kinds if len(kinds) > 1 else kinds[0]
        return out
    if not kinds and "properties" in schema:
        kinds = ["object"]
    if not kinds:
        raise _NotStrict("a value of any type")
    out["type"] = kinds if len(kinds) > 1 else kinds[0]
    if "object" in kinds:
        props = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        if not props and extra not in (None, False):
            raise _NotStrict("a free-form map (additionalProperties)")
        if "properties" not in schema and extra is None:
            raise _NotStrict("an object of any shape")
        required = set(schema.get("required") or [])
        converted = {}
        for name, sub in props.items():
            value = _openai_schema(sub, depth + 1)
            converted[name] = value if name in required else _nullable(value)
        out["properties"] = converted
        out["required"] = list(props)
        out["additionalProperties"] = False
    if "array" in kinds:
        out["items"] = _openai_schema(schema.get("items") or {}, depth + 1)
        for key in ("minItems", "maxItems"):
            if isinstance(schema.get(key), int):
                out[key] = schema[key]
    if "string" in kinds:
        if schema.get("format") in OPENAI_STRING_FORMATS:
            out["format"] = schema["format"]
        if isinstance(schema.get("pattern"), str):
            out["pattern"] = schema["pattern"]
    if "integer" in kinds or "number" in kinds:
        for key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"):
            bound = schema.get(key)
            if isinstance(bound, int | float) and not isinstance(bound, bool):
                out[key] = bound
    return out


def _loose(schema: Any) -> Any:
    """A non-strict OpenAI schema: the JSON Schema as is, minus keywords OpenAI documents as unsupported."""
    if isinstance(schema, list):
        return [_loose(s) for s in schema]
    if not isinstance(schema, Mapping):
        return schema
    drop = {"allOf", "not", "dependentRequired", "dependentSchemas", "if", "then", "else", "examples", "example"}
    return {k: (v if k in ("enum", "const", "default") else _loose(v)) for k, v in schema.items() if k not in drop}


def render_openai(tool: ToolDecl) -> dict[str, Any]:
    name = _sanitise_name(tool.name, r"[^A-Za-z0-9_-]", 64)
    function: dict[str, Any] = {"name": name, "description": tool.description}
    try:
        params = _openai_schema(tool.parameters, 1)
        if params.get("type") != "object" or "anyOf" in params:
            raise _NotStrict("the root is not an object")
        function.update(parameters=params, strict=True)
    except _NotStrict as reason:
        params = _loose(copy.deepcopy(dict(tool.parameters)))
        params.setdefault("type", "object")
        function.update(parameters=params, strict=False)
        function["x-scopegate-not-strict"] = str(reason)
    return {"type": "function", "function": function}


# -- Anthropic -----------------------------------------------------------------------------------
def render_anthropic(tool: ToolDecl) -> dict[str, Any]:
    schema = dict(tool.parameters)
    schema.setdefault("type", "object")
    for key in ("anyOf", "oneOf", "allOf"):
        schema.pop(key, None)  # not allowed at the root of input_schema
    return {
        "name": _sanitise_name(tool.name, r"[^A-Za-z0-9_-]", 64),
        "description": tool.description,
        "input_schema": schema,
    }


# -- MCP -----------------------------------------------------------------------------------------
ERROR_ENVELOPE: dict[str, Any] = {
    "type": "object",
    "properties": {
        "status": {"const": "error"},
        "error_code": {"type": "string"},
        "message": {"type": "string"},
        "retryable": {"type": "boolean"},
        "allowed": {"type": "array"},
        "hint": {"type": "string"},
        "retry_after": {"type": "number"},
    },
    "required": ["status", "error_code", "message", "retryable"],
}


def result_schema(tool: ToolDecl) -> dict[str, Any]:
    """What a successful result of this tool looks like (search and fetch results, or an API answer)."""
    if tool.family in ("search", "fetch"):
        return {
            "type": "object",
            "properties": {
                "status": {"const": "ok"},
                "results": {"type": "array", "items": {"type": "object"}},
                "document": {"type": "object"},
                "total": {"type": "integer"},
                "total_text": {"type": "string"},
                "next_page": {"type": ["integer", "null"]},
                "hint": {"type": "string"},
                "note": {"type": "string"},
                "truncated": {"type": "boolean"},
            },
            "required": ["status"],
        }
    return {
        "type": "object",
        "properties": {"status": {"const": "ok"}, "untrusted": {"type": "object"}},
        "required": ["status"],
    }


def output_schema(tool: ToolDecl) -> dict[str, Any]:
    """MCP ``outputSchema``: an object that is either the tool's result or the structured error envelope."""
    return {
        "type": "object",
        "properties": {"status": {"enum": ["ok", "error"]}},
        "required": ["status"],
        "anyOf": [result_schema(tool), ERROR_ENVELOPE],
    }


def render_mcp(tool: ToolDecl) -> dict[str, Any]:
    schema = dict(tool.parameters)
    schema.setdefault("type", "object")
    readonly = tool.read_only
    return {
        "name": _sanitise_name(tool.name, r"[^A-Za-z0-9_.-]", 128),
        "description": tool.description,
        "inputSchema": schema,
        "outputSchema": output_schema(tool),
        "annotations": {"readOnlyHint": readonly, "destructiveHint": not readonly},
    }


RENDERERS: dict[Profile, Callable[[ToolDecl], dict[str, Any]]] = {
    "gemini": render_gemini,
    "openai": render_openai,
    "anthropic": render_anthropic,
    "mcp": render_mcp,
}


def render(tool: ToolDecl, profile: Profile) -> dict[str, Any]:
    return RENDERERS[profile](tool)
