"""The typed intermediate model of an OpenAPI description, and of a translated tool.

Stages after loading never touch the raw spec document: they read these frozen
dataclasses. Swagger 2.0, OpenAPI 3.0 and 3.1 all load into the same model.

Conventions (stable; the runtime toolset relies on them):

* Schemas (``Parameter.schema``, ``MediaType.schema``, ...) are plain JSON
  dicts (JSON Schema 2020-12) with every ``$ref`` resolved, except that a
  recursion is a back-edge ``{"$ref": "#/$defs/Name"}`` into the schema's own
  top-level ``$defs``. Resolved sub-schemas are *shared* between operations:
  treat every schema dict as read-only (copy before changing).
* ``Operation.method`` is upper case (``"GET"``); ``Operation.path`` is the
  templated path exactly as in the spec (``"/repos/{owner}/{repo}"``).
* ``Operation.servers`` are the *effective* servers (operation, else path,
  else spec level); Swagger 2.0 ``schemes``/``host``/``basePath`` become
  servers. ``Operation.security`` is the *effective* requirement list
  (operation level, else spec level); an empty tuple means "no auth".
* Swagger 2.0 ``in: body`` becomes a :class:`RequestBody` for every media type
  in ``consumes`` (default ``application/json``); ``in: formData`` becomes an
  object schema under ``application/x-www-form-urlencoded`` or, when a file
  parameter is present or ``consumes`` says so, ``multipart/form-data``.

The translation output (:class:`ToolBinding`, :class:`ArgumentMap`) maps every
top-level argument the model sees back to where it goes in the HTTP request.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from scopegate.errors import UnknownNameError

Dialect = Literal["swagger2", "oas30", "oas31"]
ParamLocation = Literal["path", "query", "header", "cookie"]
ArgumentLocation = Literal["path", "query", "header", "cookie", "body_property", "body"]
OmissionLocation = Literal["path", "query", "header", "cookie", "body_property", "body", "parameter"]
OmissionReason = Literal[
    "credential",
    "reserved_header",
    "read_only",
    "forbidden_header",
    "unresolvable_ref",
    "unsupported_media_type",
    "unsupported_parameter",
    "undefined_security_scheme",
    "duplicate_parameter",
    "contradictory_schema",
]
CARRIED_BY_RUNTIME: frozenset[str] = frozenset({"credential", "reserved_header", "read_only"})
"""Omission reasons where nothing is lost: the runtime (or the server) supplies the input."""
SecurityType = Literal["apiKey", "http", "oauth2", "openIdConnect", "mutualTLS"]

JsonSchema = dict[str, Any]
"""A resolved JSON schema (no ``$ref``). Read-only by convention."""

STATE_CHANGING_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
HTTP_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")

FORM_URLENCODED = "application/x-www-form-urlencoded"
MULTIPART_FORM = "multipart/form-data"
JSON_MEDIA = "application/json"


@dataclass(frozen=True)
class ServerVariable:
    """A ``{name}`` in a server URL template."""

    default: str
    enum: tuple[str, ...] = ()
    description: str = ""


@dataclass(frozen=True)
class Server:
    """A base URL, possibly templated (``https://{region}.api.example.com/v1``)."""

    url: str
    description: str = ""
    variables: Mapping[str, ServerVariable] = field(default_factory=dict)

    def default_url(self) -> str:
        """The URL with every variable replaced by its default."""
        url = self.url
        for name, var in self.variables.items():
            url = url.replace("{" + name + "}", var.default)
        return url


@dataclass(frozen=True)
class Parameter:
    """A path, query, header or cookie parameter (never a body)."""

    name: str
    location: ParamLocation
    required: bool
    schema: JsonSchema
    description: str = ""
    style: str | None = None
    explode: bool | None = None
    deprecated: bool = False
    allow_reserved: bool = False
    # OAS3 ``content`` parameters: the media type the value is serialised as.
    media_type: str | None = None
    # ``allowEmptyValue`` (query only): without it an empty value may not be sent.
    allow_empty_value: bool = False
    # Swagger 2.0 ``collectionFormat`` ssv/tsv/pipes on a path or header array (``" "``, ``"\t"``, ``"|"``):
    # OpenAPI 3 has no style for it, so the simple style is used with this delimiter instead of ``,``.
    delimiter: str | None = None

    @property
    def key(self) -> tuple[ParamLocation, str]:
        """Identity of a parameter inside an operation: (location, name)."""
        return (self.location, self.name)


@dataclass(frozen=True)
class MediaType:
    """One entry of a request/response ``content`` map."""

    media_type: str
    schema: JsonSchema
    # OAS3 encoding object per property (contentType, style, explode, headers...).
    encoding: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)


@dataclass(frozen=True)
class RequestBody:
    """A request body with one or more media types (in spec order)."""

    required: bool
    content: tuple[MediaType, ...]
    description: str = ""

    def media(self, media_type: str) -> MediaType | None:
        """The entry for exactly ``media_type``, if present."""
        for entry in self.content:
            if entry.media_type == media_type:
                return entry
        return None


@dataclass(frozen=True)
class Response:
    """A response per status code (``"200"``, ``"4XX"``, ``"default"``)."""

    status: str
    description: str = ""
    content: tuple[MediaType, ...] = ()


@dataclass(frozen=True)
class SecurityScheme:
    """A ``components.securitySchemes`` (or Swagger ``securityDefinitions``) entry.

    ``scheme`` is the HTTP auth scheme for ``type="http"`` (``bearer``,
    ``basic``; lower case). ``name``/``location`` are set for ``apiKey``.
    Swagger 2.0 ``type: basic`` becomes ``type="http", scheme="basic"``.
    """

    key: str
    type: SecurityType
    scheme: str | None = None
    name: str | None = None
    location: Literal["query", "header", "cookie"] | None = None
    bearer_format: str | None = None
    flows: Mapping[str, Any] = field(default_factory=dict)
    open_id_connect_url: str | None = None
    description: str = ""


SecurityRequirement = Mapping[str, tuple[str, ...]]
"""One alternative: scheme key -> scopes. All schemes in one requirement apply together."""


@dataclass(frozen=True)
class OperationInfo:
    """Cheap facts about an operation, available before any ``$ref`` is resolved.

    Used for selection and the inventory table, so that a large spec only pays
    for resolving the operations that are actually selected.
    """

    method: str
    path: str
    operation_id: str | None
    tags: tuple[str, ...] = ()
    summary: str = ""
    deprecated: bool = False
    # Why the operation object itself could not be read (e.g. its ``$ref`` is unresolvable), else "".
    problem: str = ""

    @property
    def key(self) -> str:
        """``"METHOD /path"``: identity of the operation, with or without an operationId."""
        return f"{self.method} {self.path}"

    @property
    def label(self) -> str:
        """operationId when present, else ``"METHOD /path"``."""
        return self.operation_id or self.key

    @property
    def state_changing(self) -> bool:
        return self.method in STATE_CHANGING_METHODS


@dataclass(frozen=True)
class Operation:
    """One resolved operation (method + path)."""

    operation_id: str | None
    method: str
    path: str
    summary: str = ""
    description: str = ""
    tags: tuple[str, ...] = ()
    # Path-level parameters merged in; the operation's own override by (location, name).
    parameters: tuple[Parameter, ...] = ()
    request_body: RequestBody | None = None
    # Empty unless loaded with ``with_responses`` (nothing in translation or the runtime reads them).
    responses: tuple[Response, ...] = ()
    security: tuple[SecurityRequirement, ...] = ()
    servers: tuple[Server, ...] = ()
    deprecated: bool = False
    # Inputs the loader could not carry (unresolvable refs, unknown locations): see OmittedInput.
    omitted: tuple[OmittedInput, ...] = ()

    @property
    def key(self) -> str:
        return f"{self.method} {self.path}"

    @property
    def label(self) -> str:
        return self.operation_id or self.key

    @property
    def state_changing(self) -> bool:
        """True for POST, PUT, PATCH and DELETE."""
        return self.method in STATE_CHANGING_METHODS

    def params_in(self, location: ParamLocation) -> tuple[Parameter, ...]:
        return tuple(p for p in self.parameters if p.location == location)

    @property
    def info(self) -> OperationInfo:
        return OperationInfo(self.method, self.path, self.operation_id, self.tags, self.summary, self.deprecated)


@dataclass(frozen=True)
class Spec:
    """A loaded spec: metadata plus the resolved operations that were asked for.

    ``operations`` holds only the operations resolved so far (all of them, or a
    selection: see :class:`scopegate.openapi.loader.SpecDocument`).
    """

    title: str
    version: str
    dialect: Dialect
    openapi_version: str
    servers: tuple[Server, ...]
    operations: tuple[Operation, ...]
    security_schemes: Mapping[str, SecurityScheme]
    security: tuple[SecurityRequirement, ...] = ()
    description: str = ""

    def operation(self, label: str) -> Operation:
        """Find an operation by operationId or ``"METHOD /path"``; :class:`UnknownNameError` if absent."""
        for op in self.operations:
            if label in (op.operation_id, op.key):
                return op
        raise UnknownNameError("operation", label)


# --------------------------------------------------------------------------
# Translation output: how a declared tool maps back onto the HTTP request.
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class ArgumentMap:
    """One top-level argument of a declaration and where it goes.

    * ``location`` ``path``/``query``/``header``/``cookie``: the parameter
      ``original_name`` in that location (see ``Operation.parameters``).
    * ``body_property``: property ``original_name`` of the (object) request body.
    * ``body``: the whole request body (``original_name`` is ``None``), used
      when the body is not an object with properties (array, string, binary,
      free-form map).
    """

    argument: str
    location: ArgumentLocation
    original_name: str | None
    required: bool = False
    # A secret-looking input that no security scheme covers: sent, but never logged or shown.
    sensitive: bool = False


@dataclass(frozen=True)
class OmittedInput:
    """A request input, or a construct of one, that the declaration does not carry.

    Carried by the runtime or the server (nothing lost, see ``CARRIED_BY_RUNTIME``):

    * ``credential``: the input a security scheme describes (API key parameter,
      ``Authorization``); the runtime places it from server-side state;
    * ``reserved_header``: ``Accept``, ``Content-Type``... set by the runtime;
    * ``read_only``: a body property the server fills in.

    Lost (listed in the inventory; ``strict`` translation fails on them):

    * ``forbidden_header``: a header a model may never set (``Cookie``,
      ``Host``, ``X-Forwarded-*``, an ``Authorization`` no scheme covers);
    * ``unresolvable_ref``: the input's ``$ref`` (or one inside its schema)
      cannot be resolved, or is not allowed (external, remote, outside the folder);
    * ``unsupported_media_type``: no request-body media type the runtime can send
      (multipart, binary, ...);
    * ``unsupported_parameter``: a location or serialisation style the runtime
      cannot produce;
    * ``undefined_security_scheme``: the operation's security names a scheme the
      spec does not define (nothing says where its credential goes; it is skipped).
    * ``duplicate_parameter``: one ``parameters`` list defines the same
      ``(in, name)`` twice (the spec forbids it); the last definition is used and
      the others are lost;
    * ``contradictory_schema``: a body property the schema requires but its
      ``additionalProperties: false`` forbids (declared nowhere): no request could
      satisfy both, so the requirement is not enforced (``name`` is dotted when nested).

    ``detail`` says what exactly (the ref, the media types, the style).
    """

    location: OmissionLocation
    name: str
    reason: OmissionReason
    required: bool = False
    detail: str = ""

    @property
    def lost(self) -> bool:
        return self.reason not in CARRIED_BY_RUNTIME


@dataclass(frozen=True)
class ToolBinding:
    """Everything the runtime needs to turn model arguments into a request.

    ``body_schema`` is the *original* (resolved, un-flattened) schema of the
    chosen media type, for validating the rebuilt body; parameter schemas are
    in ``operation.parameters``. ``body_media_type`` is the media type chosen
    for the body (``application/json``, a form type, or e.g. ``image/jpeg``),
    ``None`` when the operation has no body.
    """

    tool_name: str
    operation: Operation
    arguments: tuple[ArgumentMap, ...]
    body_media_type: str | None = None
    body_schema: JsonSchema | None = None
    body_required: bool = False
    omitted: tuple[OmittedInput, ...] = ()
    # Arguments that name a file of the session to upload (multipart file parts, a binary body).
    file_inputs: tuple[str, ...] = ()

    def argument(self, name: str) -> ArgumentMap:
        for arg in self.arguments:
            if arg.argument == name:
                return arg
        raise UnknownNameError("argument", name, [a.argument for a in self.arguments])

    def by_location(self, location: ArgumentLocation) -> tuple[ArgumentMap, ...]:
        return tuple(a for a in self.arguments if a.location == location)

    @property
    def parameters_by_key(self) -> dict[tuple[str, str], Parameter]:
        """(location, original name) -> Parameter, for run-time validation."""
        return {(p.location, p.name): p for p in self.operation.parameters}
