"""Resolved operations -> tool declarations (Gemini ``FunctionDeclaration`` + JSON Schema 2020-12).

One tool per operation. Path, query, header and cookie parameters and the
properties of an object request body become top-level arguments (in that
order; a later argument whose name is taken gets a location prefix, e.g.
``body_owner``). A body that is not an object with properties becomes one
argument, ``body``. :class:`~scopegate.openapi.model.ToolBinding` maps every
argument back to where it goes.

Never declared, and listed in ``ToolBinding.omitted`` with the reason (see
:class:`~scopegate.openapi.model.OmittedInput`):

* credentials: the inputs the spec's security schemes describe (an apiKey
  parameter by location and name, ``Authorization`` when an HTTP, OAuth2 or
  OpenID Connect scheme exists). Nothing else is a credential: a secret-looking
  input no scheme covers (``token``, ``client_secret``, ``X-Session-Token``...)
  is declared, marked ``sensitive`` (never logged or shown), and a required
  path parameter is never dropped;
* headers the runtime sets (``Accept``, ``Content-Type``...) and headers a
  model may never set (``Cookie``, ``Host``, ``X-Forwarded-*``...);
* ``readOnly`` body properties (also through an ``allOf`` override);
* what the runtime cannot send: a request body with no supported media type
  (multipart, binary...), a parameter whose style cannot be serialised, an
  input whose ``$ref`` does not resolve (recorded by the loader).

A *required* input that cannot be carried makes the operation fail; with
``TranslateOptions(strict=True)`` any lost input does (naming it).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from scopegate.errors import UnknownNameError
from scopegate.openapi.contradict import contradictions
from scopegate.openapi.errors import OpenAPIError, TranslationError
from scopegate.openapi.headers import FORBIDDEN_HEADERS, RUNTIME_HEADERS
from scopegate.openapi.model import (
    FORM_URLENCODED,
    JSON_MEDIA,
    ArgumentLocation,
    ArgumentMap,
    JsonSchema,
    MediaType,
    OmittedInput,
    Operation,
    OperationInfo,
    ParamLocation,
    SecurityScheme,
    ToolBinding,
)
from scopegate.openapi.naming import MAX_NAME_LENGTH, ArgumentNamer, tool_names
from scopegate.openapi.serialize import (
    ParamEncoder,
    body_kind,
    body_refusal,
    form_property_problem,
    parameter_problem,
    split_path_template,
)
from scopegate.openapi.simplify import (
    Simplifier,
    SimplifyOptions,
    _SchemaTooLarge,
    bound_text,
    deref,
    is_read_only,
    merge_all_of,
    top_properties,
)
from scopegate.openapi.uploads import (
    MULTIPART_FORM,
    body_types,
    file_argument_schema,
    file_shape,
    part_types,
    upload_kind,
)

if TYPE_CHECKING:
    from google.genai import types as genai_types

    from scopegate.openapi.loader import SpecDocument

JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"

# Names that look like secrets: such inputs are declared (no security scheme covers them) but marked sensitive.
SENSITIVE_NAMES = frozenset(
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
        "x-session-token",
        "session_token",
        "api_key",
        "apikey",
        "api-key",
        "x-api-key",
        "client_secret",
        "x-client-secret",
        "password",
        "secret",
        "private_key",
    }
)
_SENSITIVE_PARTS = ("password", "secret", "token", "api_key", "apikey", "api-key", "private_key", "credential")
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
_PARAM_ORDER: tuple[ParamLocation, ...] = ("path", "query", "header", "cookie")


def is_sensitive_name(name: str, schema: Any = None, names: frozenset[str] = SENSITIVE_NAMES) -> bool:
    """A secret-looking input: by name, or by ``format: password``/``writeOnly``."""
    low = name.lower()
    if low in names or any(part in low for part in _SENSITIVE_PARTS):
        return True
    return isinstance(schema, dict) and schema.get("format") == "password"


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
    # Inputs with these names (or containing password/secret/token...) are marked sensitive.
    sensitive_names: frozenset[str] = SENSITIVE_NAMES
    # Media types tried in order for the request body; then any other supported one (JSON-like first).
    body_media_preference: tuple[str, ...] = (
        JSON_MEDIA,
        "application/merge-patch+json",
        FORM_URLENCODED,
    )
    # How often one recursive schema is expanded on a path before a placeholder.
    recursion_depth: int = 1
    # Fail (TranslationError naming it) on any input the tool does not carry, optional ones too.
    strict: bool = False
    # Declare multipart/form-data and binary bodies, their files as names of the session's files
    # (see scopegate.openapi.uploads); a toolset with upload settings turns this on.
    file_uploads: bool = False


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
            "arguments": [_argument_dict(a) for a in self.binding.arguments],
            "body_media_type": self.binding.body_media_type,
            "omitted": [_omission_dict(o) for o in self.binding.omitted],
        }


def _argument_dict(a: ArgumentMap) -> dict[str, Any]:
    out: dict[str, Any] = {
        "argument": a.argument,
        "location": a.location,
        "name": a.original_name,
        "required": a.required,
    }
    if a.sensitive:
        out["sensitive"] = True
    return out


def _omission_dict(o: OmittedInput) -> dict[str, Any]:
    out: dict[str, Any] = {"location": o.location, "name": o.name, "reason": o.reason}
    if o.detail:
        out["detail"] = o.detail
    return out


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
        raise UnknownNameError("tool", name, [t.name for t in self.tools])

    def by_operation(self, label: str) -> ToolDeclaration:
        for tool in self.tools:
            if label in (tool.operation.operation_id, tool.operation.key):
                return tool
        raise UnknownNameError("operation", label)


def choose_media(
    content: Sequence[MediaType], preference: Sequence[str], *, file_uploads: bool = False
) -> MediaType | None:
    """The media type to send: the first preferred one, else a JSON-like one, else any sendable; else None.

    With ``file_uploads``, a multipart or binary body is sendable too, when nothing else is.
    """
    by_type = {m.media_type.split(";")[0].strip().lower(): m for m in content}
    sendable = {t: m for t, m in by_type.items() if body_kind(t, m.schema) is not None}
    for wanted in preference:
        if wanted in sendable:
            return sendable[wanted]
    for media_type, media in sendable.items():
        if body_kind(media_type) == "json":
            return media
    if not sendable and file_uploads:
        return next((m for t, m in by_type.items() if upload_kind(t, m.schema) is not None), None)
    return next(iter(sendable.values()), None)


def credential_inputs(schemes: Mapping[str, SecurityScheme]) -> dict[tuple[str, str], str]:
    """(location, lower-case name) -> scheme key, for every input a security scheme describes."""
    out: dict[tuple[str, str], str] = {}
    for s in schemes.values():
        if s.type == "apiKey" and s.name is not None and s.location is not None:
            out.setdefault((s.location, s.name.lower()), s.key)
        elif s.type in ("http", "oauth2", "openIdConnect"):
            out.setdefault(("header", "authorization"), s.key)
    return out


def as_sentence(text: str) -> str:
    """A summary ended with a period: prompts that fold line breaks must not run it into the description
    ("List orders List the orders ...")."""
    text = text.rstrip()
    return text if not text or text[-1] in ".!?:;…" else f"{text}."


def tool_description(op: Operation, extra: str, limit: int) -> str:
    parts: list[str] = []
    if op.deprecated:
        parts.append("Deprecated.")
    if not op.summary and not op.description:
        parts.append(f"{op.method} {op.path}")
    if op.summary:
        parts.append(as_sentence(op.summary))
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


_TEMPLATE = re.compile(r"\{([^{}]+)\}")


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
    would otherwise cost tens of thousands of tokens on every turn. Each try
    stops early once it has visited more schema nodes than such a declaration
    could hold, so a web of mutually recursive schemas costs a bounded amount.
    """
    opts = options or TranslateOptions()
    steps = _budget_steps(opts)
    # Stop a try early once it has visited more schema nodes, or produced more description text, than
    # twice what a fitting declaration holds (a node costs at least ~8 characters).
    budget = max(200, opts.max_declaration_chars // 8), 2 * opts.max_declaration_chars
    tool: ToolDeclaration | None = None
    for i, (depth, desc_limit) in enumerate(steps):
        last = i == len(steps) - 1
        try:
            tool = _translate_once(op, name, security_schemes, opts, depth, desc_limit, None if last else budget)
        except _SchemaTooLarge:
            continue
        if len(dumps_parameters(tool)) <= opts.max_declaration_chars:
            break
    assert tool is not None
    return tool


class _Builder:
    """Collects the arguments and omissions of one declaration."""

    def __init__(self, op: Operation, opts: TranslateOptions) -> None:
        self.op = op
        self.opts = opts
        self.namer = ArgumentNamer(opts.max_name_length)
        self.properties: dict[str, Any] = {}
        self.required: list[str] = []
        self.arguments: list[ArgumentMap] = []
        self.omitted: list[OmittedInput] = list(op.omitted)
        # Arguments that name a file of the session (uploads).
        self.files: list[str] = []

    def add(
        self, original: str, location: ArgumentLocation, schema: dict[str, Any], is_required: bool, sensitive: bool
    ) -> None:
        arg = self.namer.claim(original, "body" if location == "body_property" else location)
        self.properties[arg] = schema
        if is_required:
            self.required.append(arg)
        self.arguments.append(
            ArgumentMap(arg, location, None if location == "body" else original, is_required, sensitive)
        )

    def add_file(self, original: str, location: ArgumentLocation, schema: dict[str, Any], is_required: bool) -> None:
        self.add(original, location, schema, is_required, False)
        self.files.append(self.arguments[-1].argument)

    def omit(self, omission: OmittedInput) -> None:
        if omission.lost and omission.required:
            what = f"{omission.location} {omission.name!r}"
            detail = f" ({omission.detail})" if omission.detail else ""
            raise TranslationError(self.op.label, f"required {what} cannot be sent: {omission.reason}{detail}")
        self.omitted.append(omission)

    def check_strict(self) -> None:
        lost = [o for o in self.omitted if o.lost]
        if self.opts.strict and lost:
            listed = "; ".join(
                f"{o.location} {o.name!r}: {o.reason}" + (f" ({o.detail})" if o.detail else "") for o in lost
            )
            raise TranslationError(self.op.label, f"strict: {len(lost)} input(s) not carried: {listed}")


def _param_omission(
    location: ArgumentLocation, name: str, required: bool, credentials: Mapping[tuple[str, str], str]
) -> OmittedInput | None:
    lowered = name.lower()
    if location == "header" and lowered in RUNTIME_HEADERS:
        return OmittedInput(location, name, "reserved_header", required)
    scheme = credentials.get((location, lowered))
    if scheme is not None and location != "path":
        return OmittedInput(location, name, "credential", required, f"security scheme {scheme!r}")
    if location == "header" and lowered in FORBIDDEN_HEADERS:
        return OmittedInput(location, name, "forbidden_header", required, "a model may never set this header")
    return None


def _colliding_keys(op: Operation) -> dict[str, str]:
    """Query parameters whose exploded keys are other query parameters' names (the wire could not tell them apart)."""
    query = op.params_in("query")
    names = {p.name for p in query}
    out: dict[str, str] = {}
    for p in query:
        clash = sorted((ParamEncoder(p).wire_names().exact - {p.name}) & names)
        if clash:
            out[p.name] = f"its exploded keys {clash} are also query parameters of the operation"
    return out


def _translate_once(
    op: Operation,
    name: str,
    security_schemes: Mapping[str, SecurityScheme] | None,
    opts: TranslateOptions,
    max_depth: int,
    max_description: int,
    budget: tuple[int, int] | None,
) -> ToolDeclaration:
    simplifier = Simplifier(
        SimplifyOptions(
            max_description=max_description,
            max_depth=max_depth,
            recursion_depth=opts.recursion_depth,
            node_budget=budget[0] if budget else None,
            char_budget=budget[1] if budget else None,
        )
    )
    credentials = credential_inputs(security_schemes or {})
    out = _Builder(op, opts)

    declared_path = {p.name for p in op.params_in("path")}
    missing = [v for v in _TEMPLATE.findall(split_path_template(op.path)[0]) if v not in declared_path]
    if missing:
        raise TranslationError(op.label, f"path template variable(s) {missing} have no path parameter")

    collisions = _colliding_keys(op)
    for location in _PARAM_ORDER:
        for param in op.params_in(location):
            omission = _param_omission(location, param.name, param.required, credentials)
            if omission is None:
                problem = collisions.get(param.name) if location == "query" else None
                problem = problem or parameter_problem(param)
                if problem is not None:
                    omission = OmittedInput(location, param.name, "unsupported_parameter", param.required, problem)
            if omission is not None:
                out.omit(omission)
                continue
            schema = simplifier.run(param.schema, depth=1)
            if location == "query" and not param.allow_empty_value and "" in (schema.get("enum") or []):
                schema["enum"] = [v for v in schema["enum"] if v != ""]  # an empty value cannot be sent
            desc = param.description or schema.get("description", "")
            if param.deprecated:
                desc = f"Deprecated. {desc}".strip()
            if desc:
                schema["description"] = simplifier.describe(desc)
            else:
                schema.pop("description", None)
            sensitive = is_sensitive_name(param.name, param.schema, opts.sensitive_names)
            out.add(param.name, location, schema, param.required, sensitive)

    defined = security_schemes or {}
    for key in dict.fromkeys(k for requirement in op.security for k in requirement):
        if key not in defined:
            out.omit(OmittedInput("parameter", key, "undefined_security_scheme", False, "not in the spec's schemes"))
    media, extra_description = _body_arguments(op, opts, simplifier, out)
    out.check_strict()
    if len(out.properties) != len(out.arguments):  # pragma: no cover - namer guarantees uniqueness
        raise TranslationError(op.label, "argument names are not unique")
    parameters: dict[str, Any] = {"type": "object", "properties": out.properties}
    if out.required:
        parameters["required"] = out.required
    body = op.request_body
    binding = ToolBinding(
        tool_name=name,
        operation=op,
        arguments=tuple(out.arguments),
        body_media_type=media.media_type if media is not None else None,
        body_schema=media.schema if media is not None else None,
        body_required=bool(body and body.required and media is not None),
        omitted=tuple(out.omitted),
        file_inputs=tuple(out.files),
    )
    description = tool_description(op, extra_description, opts.max_tool_description)
    return ToolDeclaration(name=name, description=description, parameters=parameters, binding=binding)


def _empty_object(schema: Mapping[str, Any], defs: Mapping[str, Any] | None) -> str | None:
    """``"empty"``: an object body that admits only ``{}``; ``"free"``: any object, no properties named."""
    s = merge_all_of(dict(deref(schema, defs)), defs)
    if s.get("type") not in (None, "object") or any(k in s for k in ("oneOf", "anyOf", "items", "enum", "const")):
        return None
    if s.get("properties") or s.get("patternProperties") or s.get("required"):
        return None
    extra = s.get("additionalProperties")
    if extra is False:
        return "empty"
    if (extra is None or extra is True) and (s.get("type") == "object" or not s):
        return "free"
    return None


def _body_arguments(
    op: Operation, opts: TranslateOptions, simplifier: Simplifier, out: _Builder
) -> tuple[MediaType | None, str]:
    body = op.request_body
    if body is None or not body.content:
        return None, ""
    media = choose_media(body.content, opts.body_media_preference, file_uploads=opts.file_uploads)
    if (
        media is not None
        and body_kind(media.media_type, media.schema) is None
        and upload_kind(media.media_type, media.schema) == "binary"
    ):  # only chosen with file_uploads: a JSON or text body is never a file
        schema = file_argument_schema(None, body.description, "one", body_types(body.content))
        out.add_file("body", "body", schema, body.required or op.method in _BODY_METHODS)
        return media, ""
    if media is None:
        types = ", ".join(f"{m.media_type} ({body_refusal(m.media_type, m.schema)})" for m in body.content)
        out.omit(OmittedInput("body", "body", "unsupported_media_type", body.required, f"offered: {types}"))
        return None, ""
    raw = media.schema if isinstance(media.schema, dict) else {}
    defs = raw.get("$defs") if isinstance(raw.get("$defs"), dict) else None
    media_base = media.media_type.split(";")[0].strip().lower()
    emptiness = _empty_object(raw, defs)
    # A form body with no properties and no explicit ``additionalProperties: true`` is what payment APIs give
    # every parameterless write (``{type: object, properties: {}}``): nothing to fill in. An explicit one is free-form.
    open_form = media_base == FORM_URLENCODED and merge_all_of(dict(deref(raw, defs)), defs).get("additionalProperties")
    if emptiness == "empty" or (
        emptiness == "free"
        and (op.method not in _BODY_METHODS or (media_base == FORM_URLENCODED and open_form is not True))
    ):
        # Nothing for a model to fill in (e.g. the empty form bodies some specs give every GET/DELETE);
        # sent as an empty object only where the body is required, or the method sends one anyway.
        return (media if op.method in _BODY_METHODS or body.required else None), ""
    merged = merge_all_of(dict(deref(raw, defs)), defs)
    simple = simplifier.run(raw, depth=0)
    for path in contradictions(raw, defs):
        # Reported, not fatal: the runtime does not enforce a requirement no request could meet.
        detail = "required, but additionalProperties: false forbids it (declared nowhere); not enforced"
        out.omitted.append(OmittedInput("body_property", path, "contradictory_schema", True, detail))
    props = simple.get("properties") if simple.get("type") == "object" else None
    if simple.get("type") == "object" and not props and top_properties(raw, defs):
        props = {}  # an object whose every property is read-only: nothing to declare, but not a free-form body
    if not isinstance(props, dict):
        if media_base != JSON_MEDIA and not simple.get("type"):
            simple["type"] = "string"
        desc = body.description or simple.get("description", "")
        if desc:
            simple["description"] = simplifier.describe(desc)
        out.add("body", "body", simple, body.required, False)
        return media, ""
    # A POST/PUT/PATCH sends its body whenever it is called, so the body's required
    # properties are required arguments even if the spec forgot ``requestBody.required``.
    sends_body = body.required or op.method in _BODY_METHODS
    body_required = set(simple.get("required") or []) if sends_body else set()
    found = merged.get("properties")
    raw_props: dict[str, Any] = found if isinstance(found, dict) else {}
    # readOnly properties are not declared (also inside union variants, or set through an allOf override).
    for prop_name, subs in top_properties(raw, defs).items():
        if prop_name not in props and any(is_read_only(sub, defs) for sub in subs):
            out.omit(OmittedInput("body_property", prop_name, "read_only"))
    for prop_name, sub in props.items():
        shape = file_shape(raw_props.get(prop_name), defs) if media_base == MULTIPART_FORM else None
        if shape is not None:
            allowed = part_types(media, prop_name, raw_props.get(prop_name), defs)
            schema = file_argument_schema(prop_name, str(sub.get("description", "")), shape, allowed)
            out.add_file(prop_name, "body_property", schema, prop_name in body_required)
            continue
        if media_base == FORM_URLENCODED:
            problem = form_property_problem(
                prop_name, raw_props.get(prop_name), media.encoding.get(prop_name, {}), defs
            )
            if problem is not None:
                out.omit(
                    OmittedInput(
                        "body_property", prop_name, "unsupported_parameter", prop_name in body_required, problem
                    )
                )
                continue
        sensitive = is_sensitive_name(prop_name, deref(raw_props.get(prop_name), defs), opts.sensitive_names)
        out.add(prop_name, "body_property", sub, prop_name in body_required, sensitive)
    union_note = simple.get("description", "")
    if union_note and union_note != merged.get("description"):
        return media, f"Request body: {union_note}"
    if body.description:
        return media, f"Request body: {body.description}"
    return media, ""


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
    if doc.recursion_depth > opts.recursion_depth:
        opts = replace(opts, recursion_depth=doc.recursion_depth)
    infos = doc.infos()
    if opts.strict and doc.problems:
        raise TranslationError(doc.name, "strict: " + "; ".join(doc.problems))
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
