"""Resolved operations -> tool declarations (Gemini ``FunctionDeclaration`` + JSON Schema 2020-12).

One tool per operation. Path, query, header and cookie parameters and the
properties of an object request body become top-level arguments (in that
order; a later argument whose name is taken gets a location prefix, e.g.
``body_owner``). A body that is not an object with properties becomes one
argument, ``body``. :class:`~scopegate.openapi.model.ToolBinding` maps every
argument back to where it goes.

Never declared: credentials (apiKey parameters of any security scheme, and
names such as ``Authorization``, ``token``, ``api_key``), reserved headers the
client sets (``Accept``, ``Content-Type``...), and ``readOnly`` body fields.
They are listed in ``ToolBinding.omitted``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from scopegate.openapi.errors import OpenAPIError, TranslationError
from scopegate.openapi.model import (
    FORM_URLENCODED,
    JSON_MEDIA,
    MULTIPART_FORM,
    ArgumentLocation,
    ArgumentMap,
    JsonSchema,
    MediaType,
    OmittedInput,
    Operation,
    OperationInfo,
    SecurityScheme,
    ToolBinding,
)
from scopegate.openapi.naming import MAX_NAME_LENGTH, ArgumentNamer, tool_names
from scopegate.openapi.simplify import Simplifier, SimplifyOptions, bound_text, merge_all_of

if TYPE_CHECKING:
    from google.genai import types as genai_types

    from scopegate.openapi.loader import SpecDocument

JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"

DEFAULT_CREDENTIAL_NAMES = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "cookie",
        "token",
        "access_token",
        "accesstoken",
        "refresh_token",
        "id_token",
        "auth_token",
        "x-auth-token",
        "x-access-token",
        "api_key",
        "apikey",
        "api-key",
        "x-api-key",
        "client_secret",
        "x-client-secret",
    }
)
RESERVED_HEADERS = frozenset(
    {"accept", "content-type", "content-length", "content-encoding", "host", "user-agent", "connection"}
)
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
_PARAM_ORDER: tuple[ArgumentLocation, ...] = ("path", "query", "header", "cookie")


@dataclass(frozen=True)
class TranslateOptions:
    """Knobs for translation; the defaults suit Gemini and most function-calling models."""

    prefix: str = ""
    max_name_length: int = MAX_NAME_LENGTH
    max_tool_description: int = 600
    max_description: int = 300
    max_depth: int = 8
    # A declaration larger than this (compact JSON characters) is rebuilt shallower; see translate_operation.
    max_declaration_chars: int = 16_000
    credential_names: frozenset[str] = DEFAULT_CREDENTIAL_NAMES
    # Media types tried in order for the request body; then any JSON type; then the first listed.
    body_media_preference: tuple[str, ...] = (
        JSON_MEDIA,
        "application/merge-patch+json",
        FORM_URLENCODED,
        MULTIPART_FORM,
    )


@dataclass(frozen=True)
class ToolDeclaration:
    """One translated tool: what the model sees plus how to call the API."""

    name: str
    description: str
    parameters: JsonSchema
    binding: ToolBinding

    @property
    def operation(self) -> Operation:
        return self.binding.operation

    def function_declaration(self) -> genai_types.FunctionDeclaration:
        """As ``google.genai.types.FunctionDeclaration`` (``parameters_json_schema``, like ADK 2.x)."""
        from google.genai import types

        return types.FunctionDeclaration(
            name=self.name, description=self.description, parameters_json_schema=self.parameters
        )

    def json_schema(self) -> dict[str, Any]:
        """A standalone JSON Schema (draft 2020-12) for MCP ``inputSchema`` and other clients."""
        return {"$schema": JSON_SCHEMA_DIALECT, "title": self.name, "description": self.description, **self.parameters}

    def to_dict(self) -> dict[str, Any]:
        """The reviewable form used by snapshots."""
        op = self.operation
        return {
            "name": self.name,
            "operation": op.label,
            "method": op.method,
            "path": op.path,
            "state_changing": op.state_changing,
            "description": self.description,
            "parameters": self.parameters,
            "arguments": [
                {"argument": a.argument, "location": a.location, "name": a.original_name, "required": a.required}
                for a in self.binding.arguments
            ],
            "body_media_type": self.binding.body_media_type,
            "omitted": [{"location": o.location, "name": o.name, "reason": o.reason} for o in self.binding.omitted],
        }


@dataclass(frozen=True)
class Translation:
    """The tools for one spec, in selection order, plus operations that could not be translated."""

    tools: tuple[ToolDeclaration, ...]
    failures: Mapping[str, str] = field(default_factory=dict)

    def names(self) -> dict[str, str]:
        """Lookup table: tool name -> operation label (operationId or ``METHOD /path``)."""
        return {t.name: t.operation.label for t in self.tools}

    def by_name(self, name: str) -> ToolDeclaration:
        for tool in self.tools:
            if tool.name == name:
                return tool
        raise KeyError(name)

    def by_operation(self, label: str) -> ToolDeclaration:
        for tool in self.tools:
            if label in (tool.operation.operation_id, tool.operation.key):
                return tool
        raise KeyError(label)


def choose_media(content: Sequence[MediaType], preference: Sequence[str]) -> MediaType:
    by_type = {m.media_type.split(";")[0].strip().lower(): m for m in content}
    for wanted in preference:
        if wanted in by_type:
            return by_type[wanted]
    for media_type, media in by_type.items():
        if media_type.endswith("/json") or media_type.endswith("+json"):
            return media
    return content[0]


def _auth_parameters(schemes: Mapping[str, SecurityScheme]) -> set[tuple[str, str]]:
    return {
        (s.location, s.name.lower())
        for s in schemes.values()
        if s.type == "apiKey" and s.name is not None and s.location is not None
    }


def tool_description(op: Operation, extra: str, limit: int) -> str:
    parts: list[str] = []
    if op.deprecated:
        parts.append("Deprecated.")
    if not op.summary and not op.description:
        parts.append(f"{op.method} {op.path}")
    if op.summary:
        parts.append(op.summary)
    if op.description and op.description != op.summary:
        parts.append(op.description)
    if extra:
        parts.append(extra)
    return bound_text("\n\n".join(parts), limit)


def _budget_steps(opts: TranslateOptions) -> list[tuple[int, int]]:
    """(max_depth, max_description) pairs tried in order until a declaration fits the size budget."""
    steps = [(opts.max_depth, opts.max_description)]
    for depth, desc in ((6, 200), (4, 150), (3, 100), (2, 80), (1, 60)):
        if depth < steps[-1][0]:
            steps.append((depth, min(desc, steps[-1][1])))
    return steps


def translate_operation(
    op: Operation,
    name: str,
    *,
    security_schemes: Mapping[str, SecurityScheme] | None = None,
    options: TranslateOptions | None = None,
) -> ToolDeclaration:
    """Translate one resolved operation. Raises :class:`TranslationError`.

    When the declaration is larger than ``max_declaration_chars`` it is rebuilt
    with shallower nesting and shorter descriptions until it fits (or the
    smallest setting is reached): a huge body (e.g. a Kubernetes Deployment)
    would otherwise cost tens of thousands of tokens on every turn.
    """
    opts = options or TranslateOptions()
    tool: ToolDeclaration | None = None
    for depth, desc_limit in _budget_steps(opts):
        tool = _translate_once(op, name, security_schemes, opts, depth, desc_limit)
        if len(dumps_parameters(tool)) <= opts.max_declaration_chars:
            break
    assert tool is not None
    return tool


def _translate_once(
    op: Operation,
    name: str,
    security_schemes: Mapping[str, SecurityScheme] | None,
    opts: TranslateOptions,
    max_depth: int,
    max_description: int,
) -> ToolDeclaration:
    simplifier = Simplifier(SimplifyOptions(max_description=max_description, max_depth=max_depth))
    auth = _auth_parameters(security_schemes or {})
    credentials = {c.lower() for c in opts.credential_names}
    namer = ArgumentNamer(opts.max_name_length)
    properties: dict[str, Any] = {}
    required: list[str] = []
    arguments: list[ArgumentMap] = []
    omitted: list[OmittedInput] = []

    def add(original: str, location: ArgumentLocation, schema: dict[str, Any], is_required: bool) -> None:
        arg = namer.claim(original, "body" if location == "body_property" else location)
        properties[arg] = schema
        if is_required:
            required.append(arg)
        arguments.append(ArgumentMap(arg, location, None if location == "body" else original, is_required))

    for location in _PARAM_ORDER:
        for param in op.parameters:
            if param.location != location:
                continue
            lowered = param.name.lower()
            if location == "header" and lowered in RESERVED_HEADERS:
                omitted.append(OmittedInput(location, param.name, "reserved_header", param.required))
                continue
            if (location, lowered) in auth or lowered in credentials:
                omitted.append(OmittedInput(location, param.name, "credential", param.required))
                continue
            schema = simplifier.run(param.schema, depth=1)
            desc = param.description or schema.get("description", "")
            if param.deprecated:
                desc = f"Deprecated. {desc}".strip()
            if desc:
                schema["description"] = simplifier.describe(desc)
            else:
                schema.pop("description", None)
            add(param.name, location, schema, param.required)

    body = op.request_body
    media: MediaType | None = None
    extra_description = ""
    if body is not None and body.content:
        media = choose_media(body.content, opts.body_media_preference)
        raw = media.schema if isinstance(media.schema, dict) else {}
        merged = merge_all_of(raw)
        simple = simplifier.run(raw, depth=0)
        props = simple.get("properties") if simple.get("type") == "object" else None
        if isinstance(props, dict) and props:
            # A POST/PUT/PATCH sends its body whenever it is called, so the body's required
            # properties are required arguments even if the spec forgot ``requestBody.required``.
            sends_body = body.required or op.method in _BODY_METHODS
            body_required = set(simple.get("required") or []) if sends_body else set()
            raw_props = merged.get("properties")
            for prop_name, raw_sub in (raw_props if isinstance(raw_props, dict) else {}).items():
                if isinstance(raw_sub, dict) and raw_sub.get("readOnly") is True:
                    omitted.append(OmittedInput("body_property", str(prop_name), "read_only"))
            for prop_name, sub in props.items():
                if prop_name.lower() in credentials:
                    omitted.append(OmittedInput("body_property", prop_name, "credential", prop_name in body_required))
                    continue
                add(prop_name, "body_property", sub, prop_name in body_required)
            union_note = simple.get("description", "")
            if union_note and union_note != merged.get("description"):
                extra_description = f"Request body: {union_note}"
            elif body.description:
                extra_description = f"Request body: {body.description}"
        else:
            if media.media_type.split(";")[0].strip().lower() not in (JSON_MEDIA,) and not simple.get("type"):
                simple["type"] = "string"
            desc = body.description or simple.get("description", "")
            if desc:
                simple["description"] = simplifier.describe(desc)
            add("body", "body", simple, body.required)

    if len(properties) != len(arguments):  # pragma: no cover - namer guarantees uniqueness
        raise TranslationError(op.label, "argument names are not unique")
    parameters: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        parameters["required"] = required
    binding = ToolBinding(
        tool_name=name,
        operation=op,
        arguments=tuple(arguments),
        body_media_type=media.media_type if media is not None else None,
        body_schema=media.schema if media is not None else None,
        body_required=bool(body and body.required),
        omitted=tuple(omitted),
    )
    description = tool_description(op, extra_description, opts.max_tool_description)
    return ToolDeclaration(name=name, description=description, parameters=parameters, binding=binding)


def translate(
    doc: SpecDocument,
    selected: Sequence[OperationInfo] | None = None,
    options: TranslateOptions | None = None,
    *,
    strict: bool = True,
) -> Translation:
    """Resolve and translate ``selected`` operations (all when ``None``).

    Tool names are computed over the whole spec, so they do not depend on the
    selection. With ``strict`` the first failure raises; otherwise failures are
    collected in :attr:`Translation.failures` (label -> reason).
    """
    opts = options or TranslateOptions()
    infos = doc.infos()
    names = tool_names(infos, opts.prefix, opts.max_name_length)
    chosen = infos if selected is None else tuple(selected)
    tools: list[ToolDeclaration] = []
    failures: dict[str, str] = {}
    for info in chosen:
        try:
            op = doc.operation(info)
            tools.append(translate_operation(op, names[info.key], security_schemes=doc.security_schemes, options=opts))
        except OpenAPIError as exc:
            if strict:
                raise
            failures[info.label] = str(exc)
        except (RecursionError, TypeError, ValueError, KeyError) as exc:
            error = TranslationError(info.label, f"{type(exc).__name__}: {exc}")
            if strict:
                raise error from None
            failures[info.label] = str(error)
    return Translation(tools=tuple(tools), failures=failures)


def dumps_parameters(tool: ToolDeclaration) -> str:
    """Compact JSON of what the model sees (name + description + parameters), for size measurement."""
    return json.dumps(
        {"name": tool.name, "description": tool.description, "parameters": tool.parameters},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )
