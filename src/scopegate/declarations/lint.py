"""Check rendered declarations against each profile's documented constraints (independent of the renderers).

Sources of the constraints (as of the versions pinned here):

- Gemini: ``google.genai.types.FunctionDeclaration`` / ``Schema`` (the SDK's own
  models, extra fields forbidden): name starts with a letter or ``_``, then
  ``[A-Za-z0-9_.:-]``, at most 128 characters; types are the ``Type`` enum;
  formats ``float``/``double`` (NUMBER), ``int32``/``int64`` (INTEGER),
  ``enum``/``date-time`` (STRING); enum values are strings.
- OpenAI strict function calling ("Structured Outputs: supported schemas"):
  name ``^[a-zA-Z0-9_-]{1,64}$``; root an object, not ``anyOf``; every object
  has ``additionalProperties: false`` and lists every property in
  ``required``; supported keywords only (string: pattern, format; number:
  multipleOf, minimum/maximum and exclusive forms; array: minItems, maxItems);
  no allOf/not/if/then/else/dependent*; at most 5,000 properties, 10 levels
  of nesting, 1,000 enum values, 120,000 characters of names/enum/const
  values, and 15,000 characters for one string enum of more than 250 values.
- Anthropic tool use: name ``^[a-zA-Z0-9_-]{1,64}$``; ``input_schema`` a JSON
  Schema whose root is ``type: object`` (no root ``anyOf``/``oneOf``/``allOf``).
- MCP tools (2025-11-25): name 1-128 characters of ``[A-Za-z0-9_.-]``;
  ``inputSchema`` and ``outputSchema`` JSON Schemas with ``type: object``.

Every JSON-Schema profile is also checked against the 2020-12 meta-schema.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import jsonschema

from scopegate.declarations.profiles import (
    OPENAI_KEYWORDS,
    OPENAI_MAX_DEPTH,
    PROFILES,
    Profile,
    ToolDecl,
    render,
)

GEMINI_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.:-]{0,127}$")
OPENAI_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
ANTHROPIC_NAME = OPENAI_NAME
MCP_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")
GEMINI_TYPES = {"STRING", "NUMBER", "INTEGER", "BOOLEAN", "ARRAY", "OBJECT", "NULL"}
GEMINI_FORMATS = {"NUMBER": {"float", "double"}, "INTEGER": {"int32", "int64"}, "STRING": {"enum", "date-time"}}
OPENAI_FORBIDDEN = {"allOf", "not", "dependentRequired", "dependentSchemas", "if", "then", "else"}
OPENAI_LIMITS = {"properties": 5000, "enum_values": 1000, "chars": 120_000, "big_enum_chars": 15_000}


@dataclass(frozen=True)
class Violation:
    profile: str
    tool: str
    where: str
    problem: str

    def __str__(self) -> str:
        return f"[{self.profile}] {self.tool} {self.where}: {self.problem}"


def _subschemas(schema: Any, path: str = "$") -> Iterator[tuple[str, Mapping[str, Any]]]:
    """Every schema node (not the keys of ``properties``, which are names)."""
    if not isinstance(schema, Mapping):
        return
    yield path, schema
    for key in ("properties", "$defs", "defs", "patternProperties"):
        if isinstance(schema.get(key), Mapping):
            for name, sub in schema[key].items():
                yield from _subschemas(sub, f"{path}.{key}.{name}")
    for key in ("items", "additionalProperties", "not", "if", "then", "else"):
        if isinstance(schema.get(key), Mapping):
            yield from _subschemas(schema[key], f"{path}.{key}")
    for key in ("anyOf", "oneOf", "allOf", "any_of"):
        if isinstance(schema.get(key), list):
            for i, sub in enumerate(schema[key]):
                yield from _subschemas(sub, f"{path}.{key}[{i}]")


@functools.lru_cache(maxsize=4096)
def _meta_problem(text: str) -> str | None:
    try:
        jsonschema.Draft202012Validator.check_schema(json.loads(text))
    except jsonschema.SchemaError as exc:
        return str(exc.message)
    return None


def _meta(profile: str, tool: str, schema: Any, where: str) -> list[Violation]:
    """The 2020-12 meta-schema check (memoised: the same schema rendered for three profiles is checked once)."""
    problem = _meta_problem(json.dumps(schema, sort_keys=True, default=str))
    return [Violation(profile, tool, where, f"not a valid JSON Schema: {problem}")] if problem else []


# -- Gemini --------------------------------------------------------------------------------------
def lint_gemini(decl: Mapping[str, Any]) -> list[Violation]:
    from google.genai import types

    name = str(decl.get("name", ""))
    out = (
        []
        if GEMINI_NAME.match(name)
        else [Violation("gemini", name, "name", "must match [A-Za-z_][A-Za-z0-9_.:-]{0,127}")]
    )
    try:
        types.FunctionDeclaration.model_validate(decl)
    except Exception as exc:  # pydantic ValidationError: extra or mistyped fields
        out.append(Violation("gemini", name, "$", f"not a FunctionDeclaration: {str(exc).splitlines()[0]}"))
        return out
    for path, node in _subschemas(decl.get("parameters") or {}, "parameters"):
        kind = node.get("type")
        if kind is not None and kind not in GEMINI_TYPES:
            out.append(Violation("gemini", name, path, f"type {kind!r} is not a Gemini Type"))
        fmt = node.get("format")
        if fmt is not None and fmt not in GEMINI_FORMATS.get(str(kind), set()):
            out.append(Violation("gemini", name, path, f"format {fmt!r} is not supported for {kind}"))
        if "enum" in node and not all(isinstance(v, str) for v in node["enum"]):
            out.append(Violation("gemini", name, path, "enum values must be strings"))
        for bad in ("oneOf", "allOf", "const", "$ref", "additionalProperties", "not"):
            if bad in node:
                out.append(Violation("gemini", name, path, f"{bad} is outside the Schema subset"))
    return out


# -- OpenAI strict -------------------------------------------------------------------------------
def _depth(schema: Any, level: int = 1) -> int:
    if not isinstance(schema, Mapping):
        return level - 1
    children: list[Any] = list((schema.get("properties") or {}).values())
    if isinstance(schema.get("items"), Mapping):
        children.append(schema["items"])
    for key in ("anyOf",):
        children.extend(schema.get(key) or [])
    nested = [_depth(c, level + (1 if isinstance(c, Mapping) and "properties" in c else 0)) for c in children]
    return max([level, *nested])


def lint_openai(decl: Mapping[str, Any]) -> list[Violation]:
    function = decl.get("function") or {}
    name = str(function.get("name", ""))
    out = [] if OPENAI_NAME.match(name) else [Violation("openai", name, "name", "must match ^[a-zA-Z0-9_-]{1,64}$")]
    if decl.get("type") != "function":
        out.append(Violation("openai", name, "type", "must be 'function'"))
    params = function.get("parameters") or {}
    out += _meta("openai", name, params, "parameters")
    if params.get("type") != "object" or "anyOf" in params:
        out.append(Violation("openai", name, "parameters", "the root must be an object, not anyOf"))
    if not function.get("strict"):
        # Declared non-strict (with a reason): the strict-mode rules below do not apply.
        if not function.get("x-scopegate-not-strict"):
            out.append(Violation("openai", name, "strict", "non-strict without a recorded reason"))
        return out
    properties = enum_values = chars = 0
    for path, node in _subschemas(params, "parameters"):
        unknown = set(node) - OPENAI_KEYWORDS
        if unknown:
            out.append(Violation("openai", name, path, f"unsupported keywords {sorted(unknown)}"))
        forbidden = set(node) & OPENAI_FORBIDDEN
        if forbidden:
            out.append(Violation("openai", name, path, f"forbidden keywords {sorted(forbidden)}"))
        raw = node.get("type")
        kinds: list[Any] = list(raw) if isinstance(raw, list) else [raw]
        if "object" in kinds:
            props = node.get("properties") or {}
            properties += len(props)
            chars += sum(len(p) for p in props)
            if node.get("additionalProperties") is not False:
                out.append(Violation("openai", name, path, "objects need additionalProperties: false"))
            if sorted(node.get("required") or []) != sorted(props):
                out.append(Violation("openai", name, path, "every property must be listed in required"))
        if isinstance(node.get("enum"), list):
            values = node["enum"]
            enum_values += len(values)
            size = sum(len(str(v)) for v in values)
            chars += size
            if len(values) > 250 and all(isinstance(v, str) for v in values) and size > OPENAI_LIMITS["big_enum_chars"]:
                out.append(Violation("openai", name, path, "a string enum of >250 values exceeds 15,000 characters"))
        if "const" in node:
            chars += len(str(node["const"]))
    if _depth(params) > OPENAI_MAX_DEPTH:
        out.append(Violation("openai", name, "parameters", f"more than {OPENAI_MAX_DEPTH} levels of nesting"))
    for label, value, limit in (
        ("object properties", properties, OPENAI_LIMITS["properties"]),
        ("enum values", enum_values, OPENAI_LIMITS["enum_values"]),
        ("characters of names and values", chars, OPENAI_LIMITS["chars"]),
    ):
        if value > limit:
            out.append(Violation("openai", name, "parameters", f"{value} {label} (limit {limit})"))
    return out


# -- Anthropic -----------------------------------------------------------------------------------
def lint_anthropic(decl: Mapping[str, Any]) -> list[Violation]:
    name = str(decl.get("name", ""))
    out = (
        [] if ANTHROPIC_NAME.match(name) else [Violation("anthropic", name, "name", "must match ^[a-zA-Z0-9_-]{1,64}$")]
    )
    schema = decl.get("input_schema")
    if not isinstance(schema, Mapping) or schema.get("type") != "object":
        return [*out, Violation("anthropic", name, "input_schema", "must be a JSON Schema with type: object")]
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            out.append(Violation("anthropic", name, "input_schema", f"{key} is not allowed at the root"))
    if set(decl) - {"name", "description", "input_schema"}:
        out.append(
            Violation(
                "anthropic", name, "$", f"unknown fields {sorted(set(decl) - {'name', 'description', 'input_schema'})}"
            )
        )
    return out + _meta("anthropic", name, schema, "input_schema")


# -- MCP -----------------------------------------------------------------------------------------
def lint_mcp(decl: Mapping[str, Any]) -> list[Violation]:
    import mcp.types

    name = str(decl.get("name", ""))
    out = [] if MCP_NAME.match(name) else [Violation("mcp", name, "name", "must be 1-128 characters of [A-Za-z0-9_.-]")]
    for key in ("inputSchema", "outputSchema"):
        schema = decl.get(key)
        if not isinstance(schema, Mapping) or schema.get("type") != "object":
            out.append(Violation("mcp", name, key, "must be a JSON Schema with type: object"))
        else:
            out += _meta("mcp", name, schema, key)
    try:
        mcp.types.Tool.model_validate(decl)
    except Exception as exc:
        out.append(Violation("mcp", name, "$", f"not an MCP Tool: {str(exc).splitlines()[0]}"))
    return out


LINTERS = {"gemini": lint_gemini, "openai": lint_openai, "anthropic": lint_anthropic, "mcp": lint_mcp}


def _rendered_name(rendered: Mapping[str, Any]) -> str:
    return str(rendered.get("name") or (rendered.get("function") or {}).get("name") or "")


def lint_tools(tools: Sequence[ToolDecl], profiles: Sequence[Profile] = PROFILES) -> list[Violation]:
    """Render every tool for each profile and check the results; crashes and duplicate names are violations."""
    out: list[Violation] = []
    for profile in profiles:
        names: list[str] = []
        for tool in tools:
            try:
                rendered = render(tool, profile)
            except Exception as exc:
                out.append(Violation(profile, tool.name, "$", f"renderer failed: {type(exc).__name__}: {exc}"))
                continue
            names.append(_rendered_name(rendered))
            out += LINTERS[profile](rendered)
        duplicates = sorted({n for n in names if names.count(n) > 1})
        out += [Violation(profile, n, "name", "duplicate name after rendering") for n in duplicates]
    return out
