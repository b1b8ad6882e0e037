"""The config file as one typed model: the keys, their types, bounds and descriptions, declared once.

Validation, the JSON Schema ``scopegate check --schema`` prints (:func:`config_schema`) and the
objects the builder reads all come from these classes. Relative paths resolve against the config
file's folder (the ``base_dir`` in the validation context). Checks that need several sections at
once (a tool naming a backend that exists, unique tool names, a group field without a groups
key) are :meth:`AppConfig._cross_keys`, reported with key paths, all at once.

A ``search_tools`` entry *is* a search spec (:class:`~scopegate.search.spec.SpecFields`) plus
``backend`` and ``fetch``: there is no second list of spec keys here.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from functools import cached_property
from pathlib import Path, PurePath
from typing import Annotated, Any, Literal

from pydantic import (
    BeforeValidator,
    Field,
    Strict,
    TypeAdapter,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic.json_schema import SkipJsonSchema

from scopegate.backends.embedded import DEFAULT_MAX_PENDING_WRITES, DEFAULT_WRITER_NICE, DEFAULT_WRITER_WAIT_S
from scopegate.errors import ConfigValidationError
from scopegate.guard.cache import DEFAULT_MAX_ENTRIES, DEFAULT_TTL_S
from scopegate.guard.calllog import DEFAULT_BACKUPS, DEFAULT_MAX_BYTES
from scopegate.guard.cap import DEFAULT_FAMILY_LIMITS
from scopegate.guard.guard import DEFAULT_CALL_TIMEOUT_S, DEFAULT_GENERATION_TTL_S
from scopegate.scope import ScopeKeys
from scopegate.search.aggregation import AggregationSpec, default_name
from scopegate.search.spec import SearchSpec, SpecFields, Text, ToolName
from scopegate.validation import Problem, ProblemsFound, json_schema, model, problems_of

SCHEMA_ID = "https://scopegate.dev/schema/config-v1.json"
# server.retain_freed_memory_mb: blocks above this still come from mmap (a rare huge buffer is not kept in the
# heap); scopegate.server.allocator applies it.
MMAP_THRESHOLD_BYTES = 4 * 1024 * 1024
SYMMETRIC_ALGORITHMS = frozenset({"HS256", "HS384", "HS512"})


def _resolve_path(value: Any, info: ValidationInfo) -> Any:
    """``~`` expanded; relative paths joined to the config file's folder (``base_dir`` in the context)."""
    if isinstance(value, str):
        if not value:
            raise ValueError("'' should be non-empty")
        value = Path(os.path.expanduser(value))
    if isinstance(value, PurePath):
        base = (info.context or {}).get("base_dir")
        path = Path(value)
        return path if path.is_absolute() or base is None else Path(base) / path
    return value


def _one_or_many(value: Any) -> Any:
    return [value] if isinstance(value, str) else value


ConfigPath = Annotated[
    Path,
    BeforeValidator(_resolve_path, json_schema_input_type=Annotated[str, Field(min_length=1, max_length=4096)]),
]
Str = Annotated[str, Strict()]
Key = Annotated[str, Strict(), Field(min_length=1, max_length=128)]
Id = Annotated[str, Strict(), Field(min_length=1, max_length=256)]
NonEmpty = Annotated[str, Strict(), Field(min_length=1)]
EnvName = Annotated[str, Strict(), Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]
Url = Annotated[str, Strict(), Field(pattern=r"^https?://", max_length=2048)]
UrlPath = Annotated[str, Strict(), Field(pattern=r"^/[A-Za-z0-9/_-]*$")]
Flag = Annotated[bool, Strict()]
ModuleAttribute = Annotated[
    str, Strict(), Field(pattern=r"^[A-Za-z_][A-Za-z0-9_.]*:[A-Za-z_][A-Za-z0-9_]*$", max_length=256)
]


def _count(low: int, high: int, description: str | None = None) -> Any:
    return Field(ge=low, le=high, strict=True, description=description)


def _seconds(high: float, description: str | None = None) -> Any:
    return Field(gt=0, le=high, description=f"{description}, in seconds." if description else None)


# -- backends -----------------------------------------------------------------------------------
@model
class EmbeddedBackendConfig:
    """tantivy indexes in a local folder (no server)."""

    type: Literal["embedded"]
    path: Annotated[
        ConfigPath, Field(description="Folder holding one tantivy index per search tool, named by its index.")
    ]
    threads: Annotated[int, _count(1, 64, "Search threads")] = 2
    max_pending_writes: Annotated[int, _count(1, 1024, "Ingest/delete calls that may wait for the writer thread")] = (
        DEFAULT_MAX_PENDING_WRITES
    )
    writer_wait_s: Annotated[float, Field(ge=0, le=3600)] = Field(
        default=DEFAULT_WRITER_WAIT_S, description="How long a write waits for another process's writer lock."
    )
    reader_check_s: Annotated[float, Field(ge=0, le=60)] = Field(
        default=0.0, description="How long a reader may go without checking for a newer commit (0: every search)."
    )
    writer_nice: Annotated[int, Field(ge=0, le=19)] = Field(
        default=DEFAULT_WRITER_NICE,
        description="Nice steps below the searches at which ingest and delete run (Linux; 0: same priority).",
    )

    def index_path(self, index: str) -> Path:
        return self.path / index


@model
class AwsSigV4Config:
    """AWS Signature V4 for Amazon OpenSearch Service (``es``) or Serverless (``aoss``), signed by opensearch-py's
    own signer; credentials from the standard AWS chain (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY/
    AWS_SESSION_TOKEN, AWS_PROFILE, an instance or task role), never from this file."""

    region: Annotated[
        str, Strict(), Field(pattern=r"^[a-z]{2}(-[a-z]+)+-\d$", description="AWS region, e.g. eu-west-1.")
    ]
    service: Literal["es", "aoss"] = Field(
        default="es", description="es: Amazon OpenSearch Service; aoss: Amazon OpenSearch Serverless."
    )


@model
class RemoteBackendConfig:
    """An OpenSearch or Elasticsearch cluster."""

    type: Literal["opensearch", "elasticsearch"]
    url: Annotated[
        tuple[Url, ...],
        BeforeValidator(_one_or_many, json_schema_input_type=Url | list[Url]),
        Field(min_length=1, max_length=64, description="One node URL or a list of them."),
    ]
    username: Str | None = Field(default=None, description="HTTP basic auth user (with password or password_file).")
    password: Str | None = Field(default=None, repr=False, description="HTTP basic auth password (use ${ENV}).")
    password_file: ConfigPath | None = Field(default=None, description="A file holding the password.")
    api_key: Str | None = Field(default=None, repr=False, description="Elasticsearch API key (use ${ENV}).")
    api_key_file: ConfigPath | None = Field(default=None, description="A file holding the Elasticsearch API key.")
    bearer_token: Str | None = Field(
        default=None, repr=False, description="A bearer token sent as Authorization: Bearer (use ${ENV})."
    )
    bearer_token_file: ConfigPath | None = Field(default=None, description="A file holding the bearer token.")
    aws_sigv4: AwsSigV4Config | None = Field(
        default=None, description="Sign every request with AWS SigV4 (OpenSearch only; needs botocore)."
    )
    verify_certs: Flag = True
    ca_certs: ConfigPath | None = Field(
        default=None, description="CA bundle (PEM) the cluster's certificate is checked with."
    )
    client_cert: ConfigPath | None = Field(default=None, description="Client certificate (PEM) for mutual TLS.")
    client_key: ConfigPath | None = Field(
        default=None, repr=False, description="The client certificate's private key (PEM)."
    )
    client_key_password: Str | None = Field(
        default=None, repr=False, description="Passphrase of an encrypted client_key (use ${ENV})."
    )
    client_key_password_file: ConfigPath | None = Field(
        default=None, description="A file holding the client_key's passphrase."
    )
    server_major: Annotated[int, _count(7, 9, "Elasticsearch major version")] | None = None
    shards: Annotated[int, _count(1, 1024, "Primary shards of a new index")] = 1
    replicas: Annotated[int, _count(0, 16, "Replicas of a new index")] | None = None
    analysis: Literal["scopegate_en", "standard"] = Field(
        default="scopegate_en",
        description="Text analysis of a new index: scopegate_en (the embedded engine's chain; needs the "
        "analysis-common module) or standard (core only, e.g. Elasticsearch's minimal distribution).",
    )
    routing: Literal["none", "tenant"] = Field(
        default="none",
        description="'tenant': each tenant's documents on one shard, and its searches, fetches and deletes "
        "sent to that shard only (an index's routing is fixed when it is created: reindex to change it).",
    )
    agent: Annotated[str, Strict(), Field(pattern=r"^[a-z0-9][a-z0-9_-]{0,63}$")] | None = Field(
        default=None, description="Search through this agent's own read alias, <index>-read-<agent>."
    )
    alias_filter: Mapping[Key, NonEmpty | tuple[NonEmpty, ...]] | None = Field(
        default=None,
        description="Keyword field -> value(s) the agent's alias is filtered to (needs agent), e.g. product: billing.",
    )
    coordinating_url: (
        Annotated[
            tuple[Url, ...],
            BeforeValidator(_one_or_many, json_schema_input_type=Url | list[Url]),
            Field(min_length=1, max_length=64),
        ]
        | None
    ) = Field(
        default=None,
        description="Coordinating-only node URL(s): searches and fetches go only there; writes use url.",
    )
    dead_timeout_s: Annotated[float, _seconds(300, "How long a node that refused a connection is left out")] = 2.0

    @model_validator(mode="after")
    def _filter_needs_agent(self) -> RemoteBackendConfig:
        if self.alias_filter and self.agent is None:
            raise ValueError("alias_filter needs agent: the shared read alias is also the write alias")
        return self


BackendConfig = Annotated[EmbeddedBackendConfig | RemoteBackendConfig, Field(discriminator="type")]


def _auth_problems(at: tuple[str, str], backend: RemoteBackendConfig) -> list[Problem]:
    """One way to authenticate, each secret given once (inline or from a file), and what each engine takes."""
    problems = []
    has_password = backend.password is not None or backend.password_file is not None
    if (backend.username is None) != (not has_password):
        problems.append(Problem.at(at, "username and password (or password_file) go together"))
    for key in ("password", "api_key", "bearer_token", "client_key_password"):
        if getattr(backend, key) is not None and getattr(backend, f"{key}_file") is not None:
            problems.append(Problem.at((*at, key), f"give {key} or {key}_file, not both"))
    ways = [
        name
        for name, given in (
            ("username/password", backend.username is not None),
            ("api_key", backend.api_key is not None or backend.api_key_file is not None),
            ("bearer_token", backend.bearer_token is not None or backend.bearer_token_file is not None),
            ("aws_sigv4", backend.aws_sigv4 is not None),
        )
        if given
    ]
    if len(ways) > 1:
        problems.append(Problem.at(at, f"use either {' or '.join(sorted(ways))} (one way to authenticate)"))
    if (backend.api_key is not None or backend.api_key_file is not None) and backend.type == "opensearch":
        problems.append(Problem.at((*at, "api_key"), "OpenSearch takes username/password, a bearer token or aws_sigv4"))
    if backend.aws_sigv4 is not None and backend.type != "opensearch":
        problems.append(Problem.at((*at, "aws_sigv4"), "AWS SigV4 is for Amazon OpenSearch Service and Serverless"))
    if backend.client_key is not None and backend.client_cert is None:
        problems.append(Problem.at((*at, "client_key"), "client_key needs client_cert"))
    if (backend.client_key_password is not None or backend.client_key_password_file is not None) and (
        backend.client_key is None and backend.client_cert is None
    ):
        problems.append(Problem.at((*at, "client_key_password"), "client_key_password needs client_key"))
    return problems


# -- tools --------------------------------------------------------------------------------------
@model(kw_only=True)
class SearchToolConfig(SpecFields):
    """A search tool (and its fetch-by-id companion): a search spec on a named backend."""

    backend: Annotated[Key, Field(description="Name of an entry under `backends`.")]
    fetch: Flag = Field(default=True, description="Also serve the fetch-by-id tool (default true).")
    aggregate: AggregationSpec | None = Field(
        default=None, description="Also serve the aggregation (count) tool over this index, with these settings."
    )
    # Set from scope.state_keys when the config is validated; not a key of the file.
    scope_keys: SkipJsonSchema[ScopeKeys | None] = None

    @cached_property
    def spec(self) -> SearchSpec:
        """The :class:`SearchSpec` the tools are built from (the same class the Python API uses)."""
        fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(SpecFields)}
        return SearchSpec(**fields, scope_keys=self.scope_keys or ScopeKeys())

    def tool_names(self) -> tuple[str, ...]:
        names: tuple[str, ...] = (self.name, self.fetch_name) if self.fetch else (self.name,)
        if self.aggregate is not None:
            names += (self.aggregate.name or default_name(self.name),)
        return names


@model
class PolicyConfig:
    """Per-operation rules of an OpenAPI toolset."""

    projection: tuple[NonEmpty, ...] | None = Field(default=None, description="Response paths the model sees.")
    ownership: NonEmpty | None = Field(default=None, description="Ownership rule in its text form.")
    bind: Mapping[str, Key] = Field(default_factory=dict, description="argument -> session-state key")
    confirm: Flag | None = None
    retry: Flag = True
    description: Text | None = None
    sensitive: tuple[NonEmpty, ...] = Field(
        default=(),
        description="Arguments (or dotted paths into them) whose values are sent but never logged or echoed.",
    )


ScopeName = Annotated[str, Strict(), Field(pattern=r"^[!#-\[\]-~]{1,256}$", description="An OAuth scope.")]


@model
class ExchangeConfig:
    """A per-user token for this API from RFC 8693 token exchange at ``auth.provider`` (never the caller's token)."""

    audience: NonEmpty | None = Field(default=None, description="The API's audience at the provider (a client id).")
    resource: Url | None = Field(default=None, description="The API's resource URI (RFC 8707).")
    scopes: tuple[ScopeName, ...] = Field(
        default=(), description="Scopes to ask for; only those the caller's own token grants are requested."
    )

    @model_validator(mode="after")
    def _target(self) -> ExchangeConfig:
        if self.audience is None and self.resource is None:
            raise ValueError("give the API's audience and/or resource")
        return self


IdentityName = Annotated[
    str,
    Strict(),
    Field(pattern=r"^[^/\s]{1,256}(/[^/\s]{1,256})?$", description="'tenant/user', or 'tenant' (no user)."),
]


@model
class PerIdentityConfig:
    """The caller's own secret, chosen by the identity that authenticated the call (exact match only)."""

    env: Mapping[IdentityName, EnvName] | None = Field(
        default=None, description="identity -> environment variable holding its secret (read at start-up)."
    )
    file: ConfigPath | None = Field(
        default=None,
        description="A file {secrets: {identity: secret | {username, password}}}, readable by its owner only.",
    )
    function: ModuleAttribute | None = Field(
        default=None, description="'package.module:attribute' of fn(tenant, user) -> secret, (user, password) or None."
    )

    @model_validator(mode="after")
    def _one_store(self) -> PerIdentityConfig:
        if sum(x is not None for x in (self.env, self.file, self.function)) != 1:
            raise ValueError("give one store: env, file or function")
        return self


@model
class CredentialConfig:
    """Where a security scheme's secret comes from: the environment (service), session state, token exchange,
    or a per-identity store."""

    env: EnvName | None = Field(default=None, description="Environment variable holding the token or API key.")
    username_env: EnvName | None = Field(default=None, description="HTTP basic: variable holding the user name.")
    password_env: EnvName | None = Field(default=None, description="HTTP basic: variable holding the password.")
    state_key: Key | None = Field(default=None, description="Session-state key holding the user's own token.")
    username_state_key: Key | None = None
    exchange: ExchangeConfig | None = Field(
        default=None, description="The signed-in user's token for this API, by token exchange (needs auth.provider)."
    )
    per_identity: PerIdentityConfig | None = Field(
        default=None, description="Each caller's own secret, chosen by its verified identity (no provider needed)."
    )

    @model_validator(mode="after")
    def _one_source(self) -> CredentialConfig:
        given = (self.env, self.state_key, self.username_env, self.exchange, self.per_identity)
        sources = [s for s in given if s is not None]
        if len(sources) != 1 or (self.username_env is None) != (self.password_env is None):
            raise ValueError(
                "give one source: env, state_key, exchange, per_identity, or username_env + password_env (HTTP basic)"
            )
        return self


@model
class SecuritySchemeConfig:
    """How a credential is sent to operations the spec gives no security (the pinned spec is not edited)."""

    type: Literal["bearer", "basic", "api_key"] = Field(
        description="bearer and basic go in Authorization; api_key goes in the named header, query or cookie."
    )
    header: Key | None = None
    query: Key | None = None
    cookie: Key | None = None

    @model_validator(mode="after")
    def _one_place(self) -> SecuritySchemeConfig:
        places = sum(p is not None for p in (self.header, self.query, self.cookie))
        if self.type == "api_key" and places != 1:
            raise ValueError("an api_key is sent in exactly one of: header, query, cookie")
        if self.type != "api_key" and places:
            raise ValueError(f"a {self.type} credential goes in Authorization: give no header, query or cookie")
        return self


@model
class UploadsConfig:
    """Multipart and binary request bodies whose files the model names from the session (bounded)."""

    max_file_bytes: Annotated[int, _count(1, 1 << 30, "Largest file sent")] = 10 * 1024 * 1024
    max_total_bytes: Annotated[int, _count(1, 1 << 31, "All files of one call together")] = 25 * 1024 * 1024
    max_files: Annotated[int, _count(1, 100, "Files in one call")] = 10


@model
class CatalogConfig:
    """Catalog mode of an OpenAPI toolset."""

    max_results: Annotated[int, _count(1, 50, "Operations find_operations returns at most")] = 8
    prefix: Annotated[str, Strict(), Field(pattern=r"^[A-Za-z0-9_]{0,40}$")] = Field(
        default="", description="Put before the three tool names (two catalogs in one config need different ones)."
    )


@model
class OpenAPIConfig:
    """An OpenAPI toolset: a pinned spec, an allowlist, and how calls are made."""

    name: ToolName
    spec: Annotated[ConfigPath, Field(description="Path of the pinned OpenAPI/Swagger document.")]
    allow: tuple[NonEmpty, ...] = Field(
        default=(),
        description="operationIds or 'METHOD /path' (a missing one is a start-up error); the only way to select "
        "a state-changing operation.",
    )
    include: tuple[NonEmpty, ...] = Field(
        default=(),
        description="Rules selecting read operations too: 'tag:refunds', 'GET /v1/charges/**', 'GET,HEAD /users/*'; "
        "'*' is every read operation; a tag with spaces is quoted: 'tag:\"DNS Records\"'. "
        "Never selects POST, PUT, PATCH or DELETE.",
    )
    exclude: tuple[NonEmpty, ...] = Field(default=(), description="Rules removing operations the rules selected.")
    include_deprecated: Flag = False
    mode: Literal["flat", "catalog"] = Field(
        default="flat",
        description="flat: one tool per operation. catalog: find_operations, describe_operation and call_operation "
        "over the selected operations (for large APIs; docs/openapi-catalog.md).",
    )
    catalog: CatalogConfig = Field(default_factory=lambda: CatalogConfig())
    base_url: Url | None = Field(
        default=None,
        description="The whole base URL requests go to, path included (https://api.example.com/v1): it replaces "
        "the spec's server URL; default: the spec's first absolute server.",
    )
    policies: Mapping[str, PolicyConfig] = Field(default_factory=dict)
    credentials: Mapping[str, CredentialConfig] = Field(default_factory=dict)
    security_schemes: Mapping[Key, SecuritySchemeConfig] = Field(
        default_factory=dict,
        description="Schemes for operations the spec declares no security for; give their credentials too.",
    )
    confirm: Literal["state_changing", "always"] = Field(
        default="state_changing",
        description="Which calls need the user's approval (default state_changing); a policy's confirm wins.",
    )
    timeout_s: Annotated[float, _seconds(600, "Total time per call")] | None = None
    connect_timeout_s: Annotated[float, _seconds(60, "Connect timeout")] | None = None
    max_response_bytes: Annotated[int, _count(1, 1 << 30, "Largest response read")] | None = None
    redirects: Literal["same-origin", "none"] | None = None
    retry: Flag | None = None
    max_result_chars: Annotated[int, _count(200, 200_000, "Characters a result may take")] | None = None
    sensitive_fields: tuple[NonEmpty, ...] | None = Field(
        default=None,
        description="Field names (any depth) masked like format: password; default: password, root_pass, secret...",
    )
    allow_external_refs: Flag = Field(
        default=False,
        description="Resolve $ref to other files in the spec's folder (never outside it): a multi-file spec's root.",
    )
    strict: Flag = Field(default=False, description="Refuse to start when a tool would not carry one of its inputs.")
    uploads: UploadsConfig | None = Field(
        default=None,
        description="Declare multipart/binary bodies: the model names a session file (ADK artifact, MCP upload).",
    )

    @model_validator(mode="after")
    def _selects_something(self) -> OpenAPIConfig:
        if not self.allow and not self.include:
            raise ValueError("give an allowlist (allow) and/or include rules")
        return self


# -- auth and identity ------------------------------------------------------------------------
Claim = Annotated[str, Strict(), Field(min_length=1, max_length=256, description="Claim name; dots reach nested.")]
Algorithm = Literal[
    "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA", "HS256", "HS384", "HS512"
]


@model
class ClaimMap:
    """Which token claims give tenant, user and groups (dots reach nested claims)."""

    tenant: Claim
    user: Claim | None = "sub"
    groups: Claim | None = None


def _default_algorithms(data: dict[str, Any]) -> tuple[Algorithm, ...]:
    return ("HS256",) if data.get("secret_env") else ("RS256",)


Audiences = Annotated[
    tuple[NonEmpty, ...],
    BeforeValidator(_one_or_many, json_schema_input_type=NonEmpty | list[NonEmpty]),
    Field(min_length=1),
]


@model
class JwtConfig:
    """Bearer JWTs: one key source, the accepted algorithms, issuer, audience, claim mapping."""

    issuer: NonEmpty
    audience: Annotated[Audiences, Field(description="Accepted `aud` values (auth.resource is accepted too).")]
    claims: ClaimMap
    public_key_file: ConfigPath | None = None
    jwks_file: ConfigPath | None = None
    secret_env: EnvName | None = None
    jwks_url: Url | None = Field(default=None, description="The provider's JWKS, fetched, cached and rotated.")
    discover: Flag = Field(
        default=False, description="Take jwks_uri from the issuer's metadata (RFC 8414 / OpenID Connect Discovery)."
    )
    jwks_cache_s: Annotated[float, _seconds(86400, "How long a fetched JWKS is used")] = 300.0
    jwks_refresh_min_s: Annotated[float, Field(ge=0, le=3600)] = Field(
        default=10.0, description="Least time between JWKS fetches caused by unknown key ids, in seconds."
    )
    scope_claim: Claim = Field(default="scope", description="Claim holding the granted scopes (string or list).")
    algorithms: Annotated[tuple[Algorithm, ...], Field(min_length=1)] = Field(
        default_factory=_default_algorithms, description="Default: RS256, or HS256 with secret_env."
    )
    leeway_s: Annotated[float, Field(ge=0, le=300)] = 30.0
    max_age_s: Annotated[float, _seconds(366 * 86400, "Oldest accepted iat")] | None = None

    @field_validator("algorithms")
    @classmethod
    def _algorithm_family(cls, value: tuple[str, ...], info: ValidationInfo) -> tuple[str, ...]:
        symmetric = info.data.get("secret_env") is not None
        wrong = [a for a in value if (a in SYMMETRIC_ALGORITHMS) != symmetric]
        if wrong:
            used = "a shared secret" if symmetric else "a public key or JWKS"
            raise ValueError(f"{', '.join(wrong)} cannot be used with {used}")
        return value

    @model_validator(mode="after")
    def _one_key_source(self) -> JwtConfig:
        names = ("public_key_file", "jwks_file", "secret_env", "jwks_url")
        sources = [n for n in names if getattr(self, n) is not None] + (["discover"] if self.discover else [])
        if len(sources) != 1:
            got = f" (got {', '.join(sources)})" if sources else ""
            raise ValueError(f"set exactly one of public_key_file, jwks_file, secret_env, jwks_url, discover{got}")
        return self

    @property
    def remote(self) -> bool:
        return self.jwks_url is not None or self.discover


@model
class ProviderConfig:
    """The authorization server (identity provider), and scopegate's own client there."""

    issuer: Annotated[Url, Field(description="Its issuer identifier; metadata must name exactly this issuer.")]
    metadata_url: Url | None = Field(
        default=None, description="Default: discovered from the issuer (RFC 8414 path insertion, then OIDC)."
    )
    client_id: NonEmpty | None = Field(
        default=None, description="scopegate's client at the provider (introspection, token exchange)."
    )
    client_secret_env: EnvName | None = Field(default=None, description="Environment variable holding its secret.")
    client_auth: Literal["client_secret_basic", "client_secret_post"] = "client_secret_basic"
    timeout_s: Annotated[float, _seconds(60, "Timeout of each request to the provider")] = 5.0
    metadata_cache_s: Annotated[float, _seconds(7 * 86400, "How long fetched metadata is used")] = 3600.0

    @model_validator(mode="after")
    def _client(self) -> ProviderConfig:
        if (self.client_id is None) != (self.client_secret_env is None):
            raise ValueError("client_id and client_secret_env go together")
        return self


@model
class IntrospectionConfig:
    """Opaque tokens, checked by RFC 7662 introspection at auth.provider (its client authenticates)."""

    endpoint: Url | None = Field(default=None, description="Default: the provider metadata's introspection_endpoint.")
    audience: Audiences | None = Field(default=None, description="Accepted `aud` values (default: auth.jwt.audience).")
    claims: ClaimMap | None = Field(default=None, description="Default: auth.jwt.claims.")
    scope_claim: Claim = "scope"
    cache_s: Annotated[float, _seconds(3600, "How long an accepted answer is reused (revocation delay)")] = 60.0
    inactive_cache_s: Annotated[float, Field(ge=0, le=3600)] = Field(
        default=10.0, description="How long a refused token stays refused without asking again, in seconds."
    )
    max_entries: Annotated[int, _count(1, 10_000_000)] = 10_000
    leeway_s: Annotated[float, Field(ge=0, le=300)] = 0.0


@model
class ScopesConfig:
    """OAuth scopes per tool: a caller sees and may call only tools whose scopes its token grants."""

    required: tuple[ScopeName, ...] = Field(default=(), description="Needed for any access (the 401 challenge).")
    read: tuple[ScopeName, ...] = Field(default=(), description="Needed for read-only tools without their own rule.")
    write: tuple[ScopeName, ...] = Field(default=(), description="Needed for state-changing tools without a rule.")
    tools: Mapping[NonEmpty, tuple[ScopeName, ...]] = Field(
        default_factory=dict, description="Tool name or family (search, fetch, openapi) -> needed scopes."
    )
    implies: Mapping[ScopeName, tuple[ScopeName, ...]] = Field(
        default_factory=dict, description="A broader scope -> the narrower scopes it grants."
    )

    @property
    def enabled(self) -> bool:
        return bool(self.required or self.read or self.write or self.tools)


@model
class AuthConfig:
    """How HTTP requests are authenticated: JWTs, introspection, a token table; scopes per tool."""

    resource: Url | None = Field(
        default=None,
        description="This MCP server's canonical URI (Protected Resource Metadata `resource`; an accepted audience). "
        "Default: built from server.http.",
    )
    provider: ProviderConfig | None = None
    jwt: JwtConfig | None = None
    introspection: IntrospectionConfig | None = None
    token_table: ConfigPath | None = None
    scopes: ScopesConfig = Field(default_factory=ScopesConfig)

    @property
    def configured(self) -> bool:
        return self.jwt is not None or self.token_table is not None or self.introspection is not None

    def problems(self) -> list[Problem]:
        out: list[Problem] = []
        provider = self.provider
        if self.jwt is not None and self.jwt.discover and provider is None:
            out.append(Problem.at(("auth", "jwt", "discover"), "needs auth.provider (whose metadata names jwks_uri)"))
        if self.jwt is not None and provider is not None and self.jwt.discover and self.jwt.issuer != provider.issuer:
            out.append(Problem.at(("auth", "jwt", "issuer"), "must equal auth.provider.issuer to use its metadata"))
        if self.introspection is not None:
            at = ("auth", "introspection")
            if provider is None or provider.client_id is None:
                out.append(Problem.at(at, "needs auth.provider with client_id and client_secret_env"))
            if self.introspection.audience is None and self.jwt is None and self.resource is None:
                out.append(Problem.at((*at, "audience"), "give the accepted audience (or auth.jwt, or auth.resource)"))
            if self.introspection.claims is None and self.jwt is None:
                out.append(Problem.at((*at, "claims"), "give the claim mapping (or auth.jwt.claims)"))
        return out


@model
class StdioScope:
    """The fixed identity of a stdio server (one user per process)."""

    tenant: Id | None = None
    user: Id | None = None
    groups: tuple[Id, ...] | None = None


@model
class StateKeys:
    """Session-state keys holding the caller's tenant, user and groups."""

    tenant: Key = "tenant_id"
    user: Key | None = None
    groups: Key | None = None


@model
class ScopeConfig:
    """Where tools find the caller's scope (see docs/deployment-adk.md for the ADK serving modes)."""

    state_keys: StateKeys = Field(default_factory=StateKeys)
    source: Literal["auto", "state", "binding", "signed"] = Field(
        default="auto",
        description=(
            "Where ADK tools read scope when no binding ran: 'binding' (refuse without a scope binding), 'signed' "
            "(verify the signed scope in session state), 'state' (session state, trusted: only your server writes "
            "it); 'auto': signed when signing keys are set, else state with a one-time warning."
        ),
    )
    strict: Flag = Field(
        default=False, description="Refuse scope from client-writable session state (an error at start-up)."
    )
    signing_keys: Str | None = Field(
        default=None,
        repr=False,
        description="HMAC key ring for signed scope: 'kid:base64url-secret,...', the first signs (use ${ENV}).",
    )
    signing_keys_file: ConfigPath | None = Field(default=None, description="A file holding the key ring.")
    identity_source: ModuleAttribute | None = Field(
        default=None,
        description="'package.module:attribute' naming the identity source of a ScopeBindingPlugin built "
        "without arguments (adk --extra_plugins).",
    )
    passthrough: tuple[Key, ...] = Field(
        default=(),
        description="Non-scope state keys tools may still read when scope is bound or signed (never a scope key: "
        "state_keys and tenant_id, group_ids, user_id are refused).",
    )

    @model_validator(mode="after")
    def _one_key_source(self) -> ScopeConfig:
        if self.signing_keys is not None and self.signing_keys_file is not None:
            raise ValueError("give signing_keys or signing_keys_file, not both")
        if self.source == "signed" and self.signing_keys is None and self.signing_keys_file is None:
            raise ValueError("source 'signed' needs signing_keys or signing_keys_file")
        keys = self.state_keys
        clash = [name for name in self.passthrough if name in (keys.tenant, keys.user, keys.groups)]
        if clash:
            raise ValueError(f"passthrough names scope keys ({', '.join(clash)}): scope never comes from client state")
        return self


# -- hand-written tools -------------------------------------------------------------------------
@model
class AppToolConfig:
    """A hand-written tool: a function decorated with ``@app_tool``, named as ``package.module:attribute``."""

    function: ModuleAttribute = Field(description="'package.module:attribute' of the @app_tool function.")
    name: ToolName | None = Field(default=None, description="Serve it under this name (default: the function's).")
    description: Text | None = Field(default=None, description="What the model reads (default: the docstring).")
    uses: tuple[ToolName, ...] = Field(
        default=(), description="Other tools of this config it may call with the caller's scope (ctx.tools)."
    )
    hide: tuple[ToolName, ...] = Field(
        default=(), description="Tools of `uses` the model does not see: only this tool calls them."
    )
    credential: CredentialConfig | None = Field(
        default=None, description="Where its downstream credential (ctx.credential) comes from."
    )
    timeout_s: Annotated[float, _seconds(600, "Time the function may take")] | None = None
    max_result_chars: Annotated[int, _count(200, 200_000, "Characters a result may take")] | None = None


# -- server and guards --------------------------------------------------------------------------
@model
class HttpConfig:
    host: NonEmpty = "127.0.0.1"
    port: Annotated[int, _count(0, 65535)] = 8765
    path: UrlPath = "/mcp"
    metrics_path: UrlPath | None = "/metrics"
    allowed_hosts: tuple[NonEmpty, ...] = ()
    allowed_origins: tuple[NonEmpty, ...] = ()
    stateless: Flag = False
    json_response: Flag = False
    max_sessions: Annotated[int, _count(1, 1_000_000)] = 10_000
    max_sessions_per_tenant: Annotated[int, _count(1, 1_000_000)] | None = Field(
        default=1_000,
        description="Open sessions one tenant may hold (handshake-era sessions), so one tenant cannot take all "
        "max_sessions; null: no per-tenant limit.",
    )
    session_idle_timeout_s: Annotated[float, _seconds(7 * 86400)] = 1800.0
    max_request_bytes: Annotated[int, _count(1, 1 << 30)] = 1_000_000
    request_state_keys_env: Annotated[tuple[EnvName, ...], Field(max_length=8)] = Field(
        default=(),
        description="Environment variables holding the secrets (32+ bytes each) that seal multi-round-trip "
        "request state (confirmations); the first seals, all open, so keys rotate as [old, new] -> [new, old] "
        "-> [new]. Give every replica the same ones. Empty: a random key per process (one replica only).",
    )
    approvals_path: ConfigPath | None = Field(
        default=None,
        description="SQLite file recording the confirmation approvals already used (each approval runs one call), "
        "shared by the replicas on one host (across hosts use approvals_redis_url). Default (neither this nor "
        "approvals_redis_url): with request_state_keys_env, guards.cache.redis_url when set, else "
        "scopegate-approvals.sqlite beside the config file; without, the process's memory (its request state "
        "opens nowhere else).",
    )
    approvals_redis_url: Annotated[str, Strict(), Field(pattern=r"^rediss?://")] | None = Field(
        default=None,
        description="Redis recording used approvals instead of a file (SET NX with the state's lifetime); use one "
        "that does not evict keys (maxmemory-policy noeviction), or an evicted record lets an approval run again.",
    )
    metrics_port: Annotated[int, _count(0, 65535)] | None = Field(
        default=None, description="Serve metrics_path on this port instead of the MCP port (0: any free port)."
    )
    metrics_host: NonEmpty = Field(default="127.0.0.1", description="Interface of the metrics_port listener.")
    metrics_token_env: EnvName | None = Field(
        default=None,
        description="Environment variable holding the bearer token metrics_path requires (metrics_auth 'bearer'; "
        "a scraper's own token instead of an MCP one).",
    )
    metrics_auth: Literal["bearer", "none"] = Field(
        default="bearer",
        description="Who may read metrics_path: 'bearer' (default): a request with a bearer token, "
        "metrics_token_env's when set, else any token the MCP endpoint accepts (the same verification); 'none': "
        "anyone who reaches the listener, only with metrics_port (a listener of its own, on metrics_host). "
        "metrics_path null turns metrics off.",
    )

    @model_validator(mode="after")
    def _open_metrics_on_their_own_port(self) -> HttpConfig:
        if self.metrics_auth == "none" and self.metrics_path is not None and self.metrics_port is None:
            raise ValueError(
                "metrics_auth 'none' needs metrics_port: every MCP client reaches the MCP port, so unauthenticated "
                "metrics go on a listener of their own (metrics_port, metrics_host)"
            )
        return self


@model
class UploadsFolderConfig:
    """Each MCP user's files, under <folder>/<tenant>/<user>/: upload tools send them, resources/list shows them."""

    folder: ConfigPath


@model
class ServerConfig:
    name: Annotated[str, Strict(), Field(min_length=1, max_length=128)] = "scopegate"
    instructions: Text | None = None
    http: HttpConfig = Field(default_factory=HttpConfig)
    uploads: UploadsFolderConfig | None = Field(
        default=None, description="Per-user files an OpenAPI upload may name (MCP resources of the caller)."
    )
    retain_freed_memory_mb: Annotated[int, _count(0, 2047)] | None = Field(
        default=64,
        description="glibc only: freed heap memory the server keeps for the next call instead of returning it "
        f"to the kernel after every call (M_TRIM_THRESHOLD; blocks up to {MMAP_THRESHOLD_BYTES >> 20} MiB from "
        "the heap), so long bodies do not fault the same pages in on every search; null: the allocator's defaults.",
    )


Limit = Annotated[int, _count(0, 100_000)]


@model
class CapConfig:
    families: Mapping[str, Limit] = Field(
        default_factory=lambda: dict(DEFAULT_FAMILY_LIMITS),
        description="Calls per invocation (MCP: per session window) for each tool family: search (search and "
        "count tools), fetch (fetch-by-id), openapi, app. Default {search: 4, fetch: 4}; given, it replaces the "
        "default, and a family left out is not capped (unless `default`).",
    )
    tools: Mapping[str, Limit] = Field(
        default_factory=dict, description="Limits per tool name; a call must pass its family's limit and its own."
    )
    default: Limit | None = Field(default=None, description="The limit of every family not named in `families`.")
    window_s: Annotated[float, _seconds(86400)] = Field(
        default=60.0, description="MCP only: the per-session budget renews every window (ADK counts per invocation)."
    )


@model
class RateLimitConfig:
    rate: Annotated[float, Field(gt=0, le=1_000_000, description="Calls per second per tenant.")]
    burst: Annotated[int, _count(1, 1_000_000)]


@model
class CacheConfig:
    enabled: Flag = True
    ttl_s: Annotated[float, _seconds(30 * 86400)] = DEFAULT_TTL_S
    max_entries: Annotated[int, _count(1, 100_000_000)] = DEFAULT_MAX_ENTRIES
    redis_url: Annotated[str, Strict(), Field(pattern=r"^rediss?://")] | None = None
    families: tuple[NonEmpty, ...] = ("search", "fetch")
    generation_ttl_s: Annotated[float, Field(ge=0, le=3600)] = Field(
        default=DEFAULT_GENERATION_TTL_S, description="How long an index generation is trusted (0: every call)."
    )


@model
class LogConfig:
    path: ConfigPath
    max_bytes: Annotated[int, _count(1024, 1 << 40)] = DEFAULT_MAX_BYTES
    backups: Annotated[int, _count(0, 1000)] = DEFAULT_BACKUPS


@model
class GuardsConfig:
    enabled: Flag = True
    cap: CapConfig = Field(default_factory=CapConfig)
    rate_limit: RateLimitConfig | None = None
    cache: CacheConfig = Field(default_factory=CacheConfig)
    log: LogConfig | None = None
    metrics: Flag = True
    call_timeout_s: Annotated[float, _seconds(3600)] = DEFAULT_CALL_TIMEOUT_S


# -- the file -----------------------------------------------------------------------------------
BackendName = Annotated[str, Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")]


@model
class AppConfig:
    """Backends, search tools, OpenAPI toolsets, scope mapping, auth and guards of one scopegate app."""

    version: Literal[1]
    server: ServerConfig = Field(default_factory=ServerConfig)
    backends: Mapping[BackendName, BackendConfig] = Field(default_factory=dict)
    search_tools: tuple[SearchToolConfig, ...] = ()
    openapi: tuple[OpenAPIConfig, ...] = ()
    app_tools: tuple[AppToolConfig, ...] = ()
    scope: ScopeConfig = Field(default_factory=ScopeConfig)
    auth: AuthConfig = Field(default_factory=AuthConfig)
    stdio: StdioScope = Field(default_factory=StdioScope)
    guards: GuardsConfig = Field(default_factory=GuardsConfig)
    # The file this came from (set by the loader; not a key of the file).
    source: SkipJsonSchema[Path | None] = Field(default=None, init=False)

    @property
    def scope_keys(self) -> ScopeKeys:
        keys = self.scope.state_keys
        return ScopeKeys(tenant=keys.tenant, groups=keys.groups, user=keys.user)

    @model_validator(mode="after")
    def _cross_keys(self, info: ValidationInfo) -> AppConfig:
        # Tools built in Python (ToolApp.from_tools) come with a config of their own that lists none.
        problems = self._problems(tools_elsewhere=bool((info.context or {}).get("tools_from_python")))
        if problems:
            raise ProblemsFound(problems)
        keys = self.scope_keys
        tools = tuple(dataclasses.replace(t, scope_keys=keys) for t in self.search_tools)
        object.__setattr__(self, "search_tools", tools)
        source = (info.context or {}).get("source")
        object.__setattr__(self, "source", Path(source) if source is not None else None)
        return self

    def _problems(self, *, tools_elsewhere: bool = False) -> list[Problem]:
        problems: list[Problem] = []
        for name, backend in self.backends.items():
            if isinstance(backend, RemoteBackendConfig):
                at = ("backends", name)
                problems += _auth_problems(at, backend)
                if backend.server_major is not None and backend.type != "elasticsearch":
                    problems.append(Problem.at((*at, "server_major"), "only for elasticsearch"))
        owners: dict[str, str] = {}
        embedded_indexes: dict[tuple[str, str], str] = {}
        for i, tool in enumerate(self.search_tools):
            where = ("search_tools", i)
            label = f"search_tools[{i}]"
            if tool.scope_keys is not None:
                problems.append(Problem.at((*where, "scope_keys"), "set scope.state_keys at the top level instead"))
            if tool.group_field and self.scope.state_keys.groups is None:
                problems.append(
                    Problem.at(
                        (*where, "group_field"),
                        f"group field {tool.group_field!r} needs scope.state_keys.groups "
                        "(the session key holding group ids)",
                    )
                )
            used = self.backends.get(tool.backend)
            if used is None:
                known = ", ".join(sorted(self.backends)) or "none"
                problems.append(Problem.at((*where, "backend"), f"unknown backend {tool.backend!r}; defined: {known}"))
            elif tool.index_mode == "existing" and isinstance(used, EmbeddedBackendConfig):
                problems.append(
                    Problem.at((*where, "index_mode"), "index_mode existing is for an opensearch/elasticsearch backend")
                )
            elif (
                tool.index_mode == "existing"
                and isinstance(used, RemoteBackendConfig)
                and (used.agent is not None or used.routing != "none")
            ):
                problems.append(
                    Problem.at(
                        (*where, "index_mode"),
                        f"backend {tool.backend!r} sets agent or routing, which only a managed index has; "
                        "give the existing index its own backend entry without them",
                    )
                )
            elif isinstance(used, EmbeddedBackendConfig):
                key = (tool.backend, tool.index)
                if key in embedded_indexes:
                    problems.append(
                        Problem.at(
                            (*where, "index"),
                            f"index {tool.index!r} of embedded backend {tool.backend!r} is already used by "
                            f"{embedded_indexes[key]}; give each search tool its own index",
                        )
                    )
                embedded_indexes.setdefault(key, label)
            for name in tool.tool_names():
                if name in owners:
                    problems.append(Problem.at(where, f"tool name {name!r} is already used by {owners[name]}"))
                owners.setdefault(name, label)
        problems += self.auth.problems()
        toolsets: dict[str, str] = {}
        for i, api in enumerate(self.openapi):
            for scheme, cred in api.credentials.items():
                client = self.auth.provider.client_id if self.auth.provider is not None else None
                if cred.exchange is not None and client is None:
                    problems.append(
                        Problem.at(
                            ("openapi", i, "credentials", scheme, "exchange"),
                            "token exchange needs auth.provider with client_id and client_secret_env",
                        )
                    )
            if api.name in toolsets:
                problems.append(
                    Problem.at(
                        ("openapi", i, "name"), f"toolset name {api.name!r} is already used by {toolsets[api.name]}"
                    )
                )
            toolsets.setdefault(api.name, f"openapi[{i}]")
        for i, app_tool in enumerate(self.app_tools):
            extra = sorted(set(app_tool.hide) - set(app_tool.uses))
            if extra:
                problems.append(Problem.at(("app_tools", i, "hide"), f"{extra} must also be listed under uses"))
        if not (self.search_tools or self.openapi or self.app_tools or problems or tools_elsewhere):
            problems.append(Problem.at((), "no tools: add search_tools, openapi or app_tools"))
        return problems


def config_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a config file, generated from :class:`AppConfig`."""
    schema = json_schema(AppConfig)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": "scopegate config",
        **{k: v for k, v in schema.items() if k != "title"},
    }


def python_tools_config(*, name: str, instructions: str | None, state_keys: StateKeys) -> AppConfig:
    """The config of an app whose tools were built in Python: server name and the session-state keys only."""
    data = {
        "version": 1,
        "server": {"name": name, **({"instructions": instructions} if instructions else {})},
        "scope": {"state_keys": dataclasses.asdict(state_keys)},
    }
    try:
        return TypeAdapter(AppConfig).validate_python(data, context={"tools_from_python": True})
    except ValidationError as exc:
        raise ConfigValidationError("the tools' config", problems_of(exc, AppConfig)) from None
    except ProblemsFound as exc:
        raise ConfigValidationError("the tools' config", exc.problems) from None
