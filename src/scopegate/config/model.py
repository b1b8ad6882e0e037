"""The typed form of a validated config, and the checks that span several keys.

:func:`parse_config` turns the schema-valid dict from :mod:`.loader` into
frozen dataclasses: search tools become real :class:`SearchSpec` objects (the
same class the Python API uses), relative paths are resolved against the
config file's folder, and cross-key problems (a tool naming an unknown
backend, two tools with one name, a group field without a groups key) are
reported with the key path, all at once.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from scopegate.config.loader import ConfigValidationError, Problem, format_path, load_raw
from scopegate.errors import ConfigError
from scopegate.scope import ScopeKeys
from scopegate.search.spec import SearchSpec, spec_from_dict

DEFAULT_FAMILY_LIMITS: Mapping[str, int] = {"search": 4}
DEFAULT_WINDOW_S = 60.0
SYMMETRIC_ALGORITHMS = frozenset({"HS256", "HS384", "HS512"})


@dataclass(frozen=True)
class EmbeddedBackendConfig:
    name: str
    path: Path
    threads: int = 2
    kind: Literal["embedded"] = "embedded"

    def index_path(self, index: str) -> Path:
        return self.path / index


@dataclass(frozen=True)
class RemoteBackendConfig:
    name: str
    kind: Literal["opensearch", "elasticsearch"]
    urls: tuple[str, ...]
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    api_key: str | None = field(default=None, repr=False)
    verify_certs: bool = True
    ca_certs: Path | None = None
    server_major: int | None = None
    shards: int | None = None
    replicas: int | None = None


BackendConfig = EmbeddedBackendConfig | RemoteBackendConfig


@dataclass(frozen=True)
class SearchToolConfig:
    backend: str
    spec: SearchSpec
    fetch: bool = True

    def tool_names(self) -> tuple[str, ...]:
        return (self.spec.name, self.spec.fetch_name) if self.fetch else (self.spec.name,)


@dataclass(frozen=True)
class OpenAPIConfig:
    """An OpenAPI toolset as configured; turned into ToolsetSettings by the builder."""

    name: str
    spec: Path
    allow: tuple[str, ...]
    base_url: str | None = None
    policies: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    credentials: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    confirm: Literal["state_changing", "always"] = "state_changing"
    timeout_s: float | None = None
    connect_timeout_s: float | None = None
    max_response_bytes: int | None = None
    redirects: str | None = None
    retry: bool | None = None
    max_result_chars: int | None = None


@dataclass(frozen=True)
class ClaimMap:
    """Which token claims give tenant, user and groups (dots reach nested claims)."""

    tenant: str
    user: str | None = "sub"
    groups: str | None = None


@dataclass(frozen=True)
class JwtConfig:
    issuer: str
    audience: tuple[str, ...]
    claims: ClaimMap
    public_key_file: Path | None = None
    jwks_file: Path | None = None
    secret_env: str | None = None
    algorithms: tuple[str, ...] = ("RS256",)
    leeway_s: float = 30.0
    max_age_s: float | None = None


@dataclass(frozen=True)
class AuthConfig:
    jwt: JwtConfig | None = None
    token_table: Path | None = None

    @property
    def configured(self) -> bool:
        return self.jwt is not None or self.token_table is not None


@dataclass(frozen=True)
class StdioScope:
    """The fixed identity of a stdio server (one user per process)."""

    tenant: str | None = None
    user: str | None = None
    groups: tuple[str, ...] | None = None


@dataclass(frozen=True)
class GuardConfig:
    enabled: bool = True
    family_limits: Mapping[str, int] = field(default_factory=lambda: dict(DEFAULT_FAMILY_LIMITS))
    tool_limits: Mapping[str, int] = field(default_factory=dict)
    default_limit: int | None = None
    window_s: float = DEFAULT_WINDOW_S
    rate: float | None = None
    burst: int | None = None
    cache_enabled: bool = True
    cache_ttl_s: float = 300.0
    cache_max_entries: int = 10_000
    # How long a backend's index generation is trusted before it is read again (0: every call).
    cache_generation_ttl_s: float = 1.0
    cache_families: tuple[str, ...] = ("search",)
    redis_url: str | None = None
    log_path: Path | None = None
    log_max_bytes: int | None = None
    log_backups: int | None = None
    metrics: bool = True
    call_timeout_s: float = 30.0


@dataclass(frozen=True)
class HttpConfig:
    host: str = "127.0.0.1"
    port: int = 8765
    path: str = "/mcp"
    metrics_path: str | None = "/metrics"
    allowed_hosts: tuple[str, ...] = ()
    allowed_origins: tuple[str, ...] = ()
    stateless: bool = False
    json_response: bool = False
    max_sessions: int = 10_000
    session_idle_timeout_s: float = 1800.0
    max_request_bytes: int = 1_000_000


@dataclass(frozen=True)
class AppConfig:
    """Everything one config file describes."""

    name: str = "scopegate"
    instructions: str | None = None
    source: Path | None = None
    http: HttpConfig = field(default_factory=HttpConfig)
    backends: Mapping[str, BackendConfig] = field(default_factory=dict)
    search_tools: tuple[SearchToolConfig, ...] = ()
    openapi: tuple[OpenAPIConfig, ...] = ()
    scope_keys: ScopeKeys = field(default_factory=ScopeKeys)
    auth: AuthConfig = field(default_factory=AuthConfig)
    stdio: StdioScope = field(default_factory=StdioScope)
    guards: GuardConfig = field(default_factory=GuardConfig)


# -- parsing ------------------------------------------------------------------------------
def _path(base: Path, value: str) -> Path:
    p = Path(os.path.expanduser(value))
    return p if p.is_absolute() else (base / p)


def _opt_path(base: Path, value: Any) -> Path | None:
    return _path(base, value) if isinstance(value, str) else None


def _backend(name: str, raw: Mapping[str, Any], base: Path) -> BackendConfig:
    if raw["type"] == "embedded":
        return EmbeddedBackendConfig(name=name, path=_path(base, raw["path"]), threads=int(raw.get("threads", 2)))
    urls = raw["url"]
    return RemoteBackendConfig(
        name=name,
        kind=raw["type"],
        urls=(urls,) if isinstance(urls, str) else tuple(urls),
        username=raw.get("username"),
        password=raw.get("password"),
        api_key=raw.get("api_key"),
        verify_certs=bool(raw.get("verify_certs", True)),
        ca_certs=_opt_path(base, raw.get("ca_certs")),
        server_major=raw.get("server_major"),
        shards=raw.get("shards"),
        replicas=raw.get("replicas"),
    )


def _search_tool(
    raw: Mapping[str, Any], scope_keys: ScopeKeys, where: str, problems: list[Problem]
) -> SearchToolConfig | None:
    spec_data = {k: v for k, v in raw.items() if k not in ("backend", "fetch")}
    spec_data["scope_keys"] = {"tenant": scope_keys.tenant, "groups": scope_keys.groups, "user": scope_keys.user}
    try:
        spec = spec_from_dict(spec_data)
    except ConfigError as exc:
        problems.append(Problem(where, str(exc)))
        return None
    if spec.group_field and scope_keys.groups is None:
        problems.append(
            Problem(
                f"{where}.group_field",
                f"group field {spec.group_field!r} needs scope.state_keys.groups (the session key holding group ids)",
            )
        )
    return SearchToolConfig(backend=str(raw["backend"]), spec=spec, fetch=bool(raw.get("fetch", True)))


def _jwt(raw: Mapping[str, Any], base: Path, problems: list[Problem]) -> JwtConfig:
    where = "auth.jwt"
    sources = [k for k in ("public_key_file", "jwks_file", "secret_env") if k in raw]
    if len(sources) != 1:
        problems.append(
            Problem(
                where,
                "set exactly one of public_key_file, jwks_file, secret_env"
                + (f" (got {', '.join(sources)})" if sources else ""),
            )
        )
    symmetric = "secret_env" in raw
    default_algs = ("HS256",) if symmetric else ("RS256",)
    algorithms = tuple(raw.get("algorithms", default_algs))
    wrong = [a for a in algorithms if (a in SYMMETRIC_ALGORITHMS) != symmetric]
    if wrong:
        problems.append(
            Problem(
                f"{where}.algorithms",
                f"{', '.join(wrong)} cannot be used with {'a shared secret' if symmetric else 'a public key or JWKS'}",
            )
        )
    audience = raw["audience"]
    claims = raw["claims"]
    return JwtConfig(
        issuer=str(raw["issuer"]),
        audience=(audience,) if isinstance(audience, str) else tuple(audience),
        claims=ClaimMap(tenant=claims["tenant"], user=claims.get("user", "sub"), groups=claims.get("groups")),
        public_key_file=_opt_path(base, raw.get("public_key_file")),
        jwks_file=_opt_path(base, raw.get("jwks_file")),
        secret_env=raw.get("secret_env"),
        algorithms=algorithms,
        leeway_s=float(raw.get("leeway_s", 30.0)),
        max_age_s=raw.get("max_age_s"),
    )


def _guards(raw: Mapping[str, Any], base: Path) -> GuardConfig:
    cap = raw.get("cap", {})
    rate = raw.get("rate_limit")
    cache = raw.get("cache", {})
    log = raw.get("log")
    defaults = GuardConfig()
    return GuardConfig(
        enabled=bool(raw.get("enabled", True)),
        family_limits=dict(cap.get("families", DEFAULT_FAMILY_LIMITS)),
        tool_limits=dict(cap.get("tools", {})),
        default_limit=cap.get("default"),
        window_s=float(cap.get("window_s", DEFAULT_WINDOW_S)),
        rate=float(rate["rate"]) if rate else None,
        burst=int(rate["burst"]) if rate else None,
        cache_enabled=bool(cache.get("enabled", True)),
        cache_ttl_s=float(cache.get("ttl_s", defaults.cache_ttl_s)),
        cache_max_entries=int(cache.get("max_entries", defaults.cache_max_entries)),
        cache_generation_ttl_s=float(cache.get("generation_ttl_s", defaults.cache_generation_ttl_s)),
        cache_families=tuple(cache.get("families", defaults.cache_families)),
        redis_url=cache.get("redis_url"),
        log_path=_path(base, log["path"]) if log else None,
        log_max_bytes=log.get("max_bytes") if log else None,
        log_backups=log.get("backups") if log else None,
        metrics=bool(raw.get("metrics", True)),
        call_timeout_s=float(raw.get("call_timeout_s", defaults.call_timeout_s)),
    )


def _http(raw: Mapping[str, Any]) -> HttpConfig:
    d = HttpConfig()
    return HttpConfig(
        host=str(raw.get("host", d.host)),
        port=int(raw.get("port", d.port)),
        path=str(raw.get("path", d.path)),
        metrics_path=raw.get("metrics_path", d.metrics_path),
        allowed_hosts=tuple(raw.get("allowed_hosts", ())),
        allowed_origins=tuple(raw.get("allowed_origins", ())),
        stateless=bool(raw.get("stateless", d.stateless)),
        json_response=bool(raw.get("json_response", d.json_response)),
        max_sessions=int(raw.get("max_sessions", d.max_sessions)),
        session_idle_timeout_s=float(raw.get("session_idle_timeout_s", d.session_idle_timeout_s)),
        max_request_bytes=int(raw.get("max_request_bytes", d.max_request_bytes)),
    )


def parse_config(
    data: Mapping[str, Any], *, base_dir: str | os.PathLike[str] = ".", source: str = "<config>"
) -> AppConfig:
    """Schema-valid dict -> :class:`AppConfig`; raises :class:`ConfigValidationError` listing every problem."""
    base = Path(base_dir)
    problems: list[Problem] = []
    keys_raw = data.get("scope", {}).get("state_keys", {})
    scope_keys = ScopeKeys(
        tenant=keys_raw.get("tenant", "tenant_id"), groups=keys_raw.get("groups"), user=keys_raw.get("user")
    )

    backends = {name: _backend(name, raw, base) for name, raw in data.get("backends", {}).items()}
    for name, backend in backends.items():
        if isinstance(backend, RemoteBackendConfig):
            where = format_path(["backends", name])
            if (backend.username is None) != (backend.password is None):
                problems.append(Problem(where, "username and password go together"))
            if backend.api_key and backend.username:
                problems.append(Problem(where, "use either api_key or username/password"))
            if backend.api_key and backend.kind == "opensearch":
                problems.append(Problem(f"{where}.api_key", "OpenSearch takes username/password, not api_key"))
            if backend.server_major is not None and backend.kind != "elasticsearch":
                problems.append(Problem(f"{where}.server_major", "only for elasticsearch"))

    search_tools: list[SearchToolConfig] = []
    owners: dict[str, str] = {}
    embedded_indexes: dict[tuple[str, str], str] = {}
    for i, raw in enumerate(data.get("search_tools", [])):
        where = format_path(["search_tools", i])
        tool = _search_tool(raw, scope_keys, where, problems)
        if raw["backend"] not in backends:
            known = ", ".join(sorted(backends)) or "none"
            problems.append(Problem(f"{where}.backend", f"unknown backend {raw['backend']!r}; defined: {known}"))
        if tool is None:
            continue
        used = backends.get(tool.backend)
        if isinstance(used, EmbeddedBackendConfig):
            key = (tool.backend, tool.spec.index)
            if key in embedded_indexes:
                problems.append(
                    Problem(
                        f"{where}.index",
                        f"index {tool.spec.index!r} of embedded backend {tool.backend!r} is already used by "
                        f"{embedded_indexes[key]}; give each search tool its own index",
                    )
                )
            embedded_indexes.setdefault(key, where)
        for name in tool.tool_names():
            if name in owners:
                problems.append(Problem(where, f"tool name {name!r} is already used by {owners[name]}"))
            owners.setdefault(name, where)
        search_tools.append(tool)

    openapi: list[OpenAPIConfig] = []
    toolset_names: dict[str, str] = {}
    for i, raw in enumerate(data.get("openapi", [])):
        where = format_path(["openapi", i])
        if raw["name"] in toolset_names:
            problems.append(
                Problem(
                    f"{where}.name", f"toolset name {raw['name']!r} is already used by {toolset_names[raw['name']]}"
                )
            )
        toolset_names.setdefault(raw["name"], where)
        for scheme, cred in raw.get("credentials", {}).items():
            sources = [k for k in ("env", "state_key", "username_env") if k in cred]
            if len(sources) != 1 or (("username_env" in cred) != ("password_env" in cred)):
                problems.append(
                    Problem(
                        f"{where}.credentials.{scheme}",
                        "give one source: env, state_key, or username_env + password_env (HTTP basic)",
                    )
                )
        openapi.append(
            OpenAPIConfig(
                name=raw["name"],
                spec=_path(base, raw["spec"]),
                allow=tuple(raw["allow"]),
                base_url=raw.get("base_url"),
                policies=dict(raw.get("policies", {})),
                credentials=dict(raw.get("credentials", {})),
                confirm=raw.get("confirm", "state_changing"),
                timeout_s=raw.get("timeout_s"),
                connect_timeout_s=raw.get("connect_timeout_s"),
                max_response_bytes=raw.get("max_response_bytes"),
                redirects=raw.get("redirects"),
                retry=raw.get("retry"),
                max_result_chars=raw.get("max_result_chars"),
            )
        )

    if not search_tools and not openapi and not problems:
        problems.append(Problem("(top level)", "no tools: add search_tools or openapi"))

    auth_raw = data.get("auth", {})
    auth = AuthConfig(
        jwt=_jwt(auth_raw["jwt"], base, problems) if "jwt" in auth_raw else None,
        token_table=_opt_path(base, auth_raw.get("token_table")),
    )
    stdio_raw = data.get("stdio", {})
    stdio = StdioScope(
        tenant=stdio_raw.get("tenant"),
        user=stdio_raw.get("user"),
        groups=tuple(stdio_raw["groups"]) if "groups" in stdio_raw else None,
    )
    server = data.get("server", {})
    if problems:
        raise ConfigValidationError(source, problems)
    return AppConfig(
        name=str(server.get("name", "scopegate")),
        instructions=server.get("instructions"),
        source=Path(source) if source != "<config>" else None,
        http=_http(server.get("http", {})),
        backends=backends,
        search_tools=tuple(search_tools),
        openapi=tuple(openapi),
        scope_keys=scope_keys,
        auth=auth,
        stdio=stdio,
        guards=_guards(data.get("guards", {}), base),
    )


def load_config(path: str | os.PathLike[str], environ: Mapping[str, str] | None = None) -> AppConfig:
    """Read, expand ``${ENV}``, validate and parse a config file (YAML, TOML or JSON)."""
    raw = load_raw(path, environ)
    p = Path(path)
    return parse_config(raw, base_dir=p.resolve().parent, source=str(p))
