"""Config -> the same objects the Python API builds: backends, tools, guard.

Nothing here invents a tool of its own: a configured search tool *is*
``SearchTool(spec, backend)`` (+ ``FetchTool``), an OpenAPI toolset is the
OpenAPI runtime's own toolset, the guard is :class:`scopegate.guard.Guard`.
So an app written in Python and the same app written as a config file show
the model identical declarations and return identical results. Every call
below is typed; the optional engine clients are imported where they are used,
and a missing one is a :class:`FeatureUnavailable` naming the pip extra.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypedDict

from scopegate.backends.base import SearchBackend
from scopegate.backends.embedded import EmbeddedBackend
from scopegate.config.apptools import build_app_tools
from scopegate.config.identity import IdentityServices, build_identity
from scopegate.config.loader import load_config as read_config
from scopegate.config.model import (
    AppConfig,
    AwsSigV4Config,
    EmbeddedBackendConfig,
    GuardsConfig,
    RemoteBackendConfig,
    SearchToolConfig,
    StateKeys,
    python_tools_config,
)
from scopegate.config.openapi import build_openapi_toolset
from scopegate.config.tls import client_tls_options
from scopegate.errors import (
    ConfigError,
    UnknownNameError,
)
from scopegate.errors import (
    FeatureUnavailable as FeatureUnavailable,
)
from scopegate.guard import (
    CallCap,
    CallLog,
    CapPolicy,
    Guard,
    GuardedTool,
    GuardMetrics,
    MemoryStore,
    RateLimiter,
    RedisStore,
    TieredStore,
    ToolCache,
)
from scopegate.scope import ScopeKeys
from scopegate.search.bundle import search_tools
from scopegate.search.spec import SearchSpec
from scopegate.tools import Closer, ScopedTool, ToolSource, gather_tools

log = logging.getLogger("scopegate.config")


@dataclass
class ToolApp:
    """The tools of one app, ready for an adapter, and what they hold open.

    Built from a config file (:func:`load_config`) or from tools built in Python (:meth:`from_tools`);
    either way the same object feeds ``scopegate.adk.ScopegateToolset(app)`` and ``scopegate.mcp``.
    """

    config: AppConfig
    tools: list[ScopedTool]
    raw_tools: list[ScopedTool]
    guard: Guard | None = None
    backends: list[SearchBackend] = field(default_factory=list)
    closers: list[Closer] = field(default_factory=list)
    # Token verification, tool scopes and per-user credentials (the auth section), shared by MCP and ADK.
    identity: IdentityServices | None = None

    def tool(self, name: str) -> ScopedTool:
        for t in self.tools:
            if t.name == name:
                return t
        raise UnknownNameError("tool", name, self.names())

    def names(self) -> list[str]:
        return [t.name for t in self.tools]

    @classmethod
    def from_tools(
        cls,
        tools: ToolSource | Sequence[ScopedTool | ToolSource],
        *,
        guard: Guard | None = None,
        name: str = "scopegate",
        instructions: str | None = None,
    ) -> ToolApp:
        """An app of tools built in Python (and of sources such as an OpenAPI toolset, closed with the app).

        ``guard`` wraps every tool not already guarded. The session-state keys the tools read their scope
        from must agree (they become the app's ``scope.state_keys``); the MCP server maps a caller's
        identity onto them."""
        raw, closers = gather_tools(tools)
        if not raw:
            raise ConfigError("an app needs at least one tool")
        _check_unique(raw)
        keys = {t.scope_keys for t in raw}
        if len(keys) > 1:
            listed = "; ".join(f"{t.name}: {t.scope_keys}" for t in raw)
            raise ConfigError(f"the tools read their scope from different session-state keys ({listed})")
        key: ScopeKeys = keys.pop()
        state_keys = StateKeys(tenant=key.tenant, user=key.user, groups=key.groups)
        config = python_tools_config(name=name, instructions=instructions, state_keys=state_keys)
        wrapped = [guard.wrap(t) if guard is not None and not isinstance(t, GuardedTool) else t for t in raw]
        return cls(config=config, tools=wrapped, raw_tools=raw, guard=guard, closers=list(closers))

    def adk_tools(self, granted_scopes: Callable[[Any], Iterable[str] | None] | None = None) -> list[Any]:
        """Deprecated (goes in 0.3): use ``scopegate.adk.ScopegateToolset(app, granted_scopes=...)``."""
        import warnings

        from scopegate.adapters.adk import AdkTool, ScopeCheck  # layer exemption: this deprecated shim only
        from scopegate.adapters.adk_scope import ScopePolicy

        warnings.warn(
            "ToolApp.adk_tools() is deprecated and goes in 0.3; use scopegate.adk.ScopegateToolset(app)",
            DeprecationWarning,
            stacklevel=2,
        )
        policy = ScopePolicy.from_config(self.config.scope)
        check: ScopeCheck | None = None
        if granted_scopes is not None and self.identity is not None and self.identity.scopes.enabled:
            rules = self.identity.scopes

            def check(tool_context: Any) -> Callable[[str, str, bool], bool]:
                return rules.checker(granted_scopes(tool_context) or ())

        return [AdkTool(t, scope_policy=policy, scope_check=check) for t in self.tools]

    async def aclose(self) -> None:
        for closer in reversed(self.closers):
            try:
                await closer()
            except Exception:
                log.exception("error while closing %r", closer)
        for backend in self.backends:
            try:
                await backend.close()
            except Exception:
                log.exception("error while closing a backend")
        if self.guard is not None:
            await self.guard.aclose()


# -- backends -----------------------------------------------------------------------------
def build_search_backend(tool: SearchToolConfig, config: AppConfig, *, offline: bool = False) -> SearchBackend:
    """The backend a search tool runs on. ``offline``: never touch disk or network (``check``)."""
    backend_cfg = config.backends[tool.backend]
    if isinstance(backend_cfg, EmbeddedBackendConfig):
        if offline:
            return EmbeddedBackend(tool.spec, None, threads=1)
        return EmbeddedBackend(
            tool.spec,
            backend_cfg.index_path(tool.spec.index),
            threads=backend_cfg.threads,
            max_pending_writes=backend_cfg.max_pending_writes,
            writer_wait_s=backend_cfg.writer_wait_s,
            reader_check_s=backend_cfg.reader_check_s,
            writer_nice=backend_cfg.writer_nice,
        )
    return build_remote_backend(backend_cfg, tool.spec)


class _EngineArgs(TypedDict):
    """What both engine backends take from a ``backends`` entry (the client options included)."""

    analysis: str
    shards: int
    replicas: int | None
    routing: Literal["none", "tenant"]
    agent: str | None
    alias_filter: dict[str, str | tuple[str, ...]] | None
    coordinating_url: list[str] | None
    dead_timeout_s: float


def _secret(inline: str | None, path: Path | None) -> str | None:
    """A secret given inline (``${ENV}`` expanded) or read from a file (trailing newline dropped)."""
    if path is None:
        return inline
    try:
        return path.read_text("utf-8").rstrip("\r\n")
    except OSError as exc:
        raise ConfigError(f"cannot read the secret file {path}: {exc.strerror}") from None


def _sigv4_auth(cfg: AwsSigV4Config) -> Any:
    """opensearch-py's own async SigV4 signer, with credentials from the standard AWS chain (botocore)."""
    try:
        import botocore.session
        from opensearchpy import AWSV4SignerAsyncAuth
    except ImportError as exc:
        raise FeatureUnavailable.missing("backends.*.aws_sigv4", "aws", exc) from exc
    credentials = botocore.session.Session().get_credentials()
    if credentials is None:
        raise ConfigError("aws_sigv4: no AWS credentials found (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, a profile "
                          "or an instance role)")  # fmt: skip
    return AWSV4SignerAsyncAuth(credentials, cfg.region, cfg.service)


def build_remote_backend(cfg: RemoteBackendConfig, spec: SearchSpec) -> SearchBackend:
    """An OpenSearch or Elasticsearch backend: the same class and arguments the Python API uses."""
    urls: str | list[str] = cfg.url[0] if len(cfg.url) == 1 else list(cfg.url)
    key_password = _secret(cfg.client_key_password, cfg.client_key_password_file)
    tls = client_tls_options(cfg.verify_certs, cfg.ca_certs, cfg.client_cert, cfg.client_key, key_password)
    common: _EngineArgs = {
        "analysis": cfg.analysis,
        "shards": cfg.shards,
        "replicas": cfg.replicas,
        "routing": cfg.routing,
        "agent": cfg.agent,
        "alias_filter": dict(cfg.alias_filter) if cfg.alias_filter else None,
        "coordinating_url": list(cfg.coordinating_url) if cfg.coordinating_url else None,
        "dead_timeout_s": cfg.dead_timeout_s,
    }
    password = _secret(cfg.password, cfg.password_file)
    credentials = (cfg.username, password or "") if cfg.username is not None else None
    bearer = _secret(cfg.bearer_token, cfg.bearer_token_file)
    if cfg.type == "opensearch":
        try:
            from scopegate.backends.opensearch import OpenSearchBackend
        except ImportError as exc:
            raise FeatureUnavailable.missing("the opensearch backend", "opensearch", exc) from exc
        extra: dict[str, Any] = {"http_auth": credentials}
        if cfg.aws_sigv4 is not None:
            from opensearchpy import AsyncHttpConnection

            # The async signer is a callable http_auth, which AsyncHttpConnection calls per request
            # (the default aiohttp connection takes basic auth only).
            extra = {"http_auth": _sigv4_auth(cfg.aws_sigv4), "connection_class": AsyncHttpConnection}
        if bearer is not None:
            extra["headers"] = {"authorization": f"Bearer {bearer}"}
        return OpenSearchBackend(spec, urls, **extra, **common, **tls)
    try:
        from scopegate.backends.elasticsearch import CLIENT_MAJOR, ElasticsearchBackend
    except ImportError as exc:
        raise FeatureUnavailable.missing("the elasticsearch backend", "elasticsearch", exc) from exc
    major = cfg.server_major or CLIENT_MAJOR
    api_key = _secret(cfg.api_key, cfg.api_key_file)
    return ElasticsearchBackend(
        spec, urls, basic_auth=credentials, api_key=api_key, bearer_auth=bearer, server_major=major, **common, **tls
    )


# -- guard --------------------------------------------------------------------------------
def build_guard(cfg: GuardsConfig) -> Guard | None:
    """A :class:`Guard` from the ``guards`` section, or None when disabled."""
    if not cfg.enabled:
        return None
    cap = CallCap(
        CapPolicy(family_limits=dict(cfg.cap.families), tool_limits=dict(cfg.cap.tools), default_limit=cfg.cap.default)
    )
    rate = cfg.rate_limit
    cache = None
    if cfg.cache.enabled:
        local = MemoryStore(max_entries=cfg.cache.max_entries)
        store: MemoryStore | TieredStore = local
        if cfg.cache.redis_url is not None:
            try:
                remote = RedisStore(url=cfg.cache.redis_url)
            except ImportError as exc:
                raise FeatureUnavailable.missing("guards.cache.redis_url", "redis", exc) from exc
            # A small in-process tier in front keeps the hit path ~10x faster than a search.
            store = TieredStore(local, remote)
        cache = ToolCache(store, ttl_s=cfg.cache.ttl_s, families=cfg.cache.families)
    call_log = None
    if cfg.log is not None:
        call_log = CallLog.to_file(cfg.log.path, max_bytes=cfg.log.max_bytes, backups=cfg.log.backups)
    return Guard(
        cap=cap,
        rate_limiter=RateLimiter(rate.rate, rate.burst) if rate is not None else None,
        cache=cache,
        call_log=call_log,
        metrics=GuardMetrics() if cfg.metrics else None,
        call_timeout_s=cfg.call_timeout_s,
        generation_ttl_s=cfg.cache.generation_ttl_s,
    )


# -- the app ------------------------------------------------------------------------------
def search_tools_for(tool_cfg: SearchToolConfig, backend: SearchBackend) -> list[ScopedTool]:
    aggregate = tool_cfg.aggregate if tool_cfg.aggregate is not None else False
    return search_tools(tool_cfg.spec, backend, fetch=tool_cfg.fetch, aggregate=aggregate)


def _check_unique(tools: Sequence[ScopedTool]) -> None:
    seen: set[str] = set()
    for tool in tools:
        if tool.name in seen:
            raise ConfigError(f"two tools are named {tool.name!r}; tool names must be unique across the config")
        seen.add(tool.name)


def build_tool_app(
    config: AppConfig,
    *,
    offline: bool = False,
    guard: Guard | Literal["config"] | None = "config",
    resource: str | None = None,
) -> ToolApp:
    """Backends, tools, guard and identity services of ``config``, built synchronously.

    Nothing here waits on the network: engine clients connect on their first request, so this runs
    anywhere, inside a running event loop too (ADK imports agent modules in its own). ``offline`` builds
    in-memory embedded indexes and opens nothing (for ``scopegate check``). ``guard`` overrides the
    configured guard (``None`` for raw tools). ``resource`` is the MCP server's own URI when
    ``auth.resource`` is unset (an accepted token audience). On failure, whatever was opened is closed.
    """
    app = ToolApp(config=config, tools=[], raw_tools=[])
    try:
        app.identity = build_identity(config.auth, resource=resource)
        app.closers.append(app.identity.aclose)
        # Built first: a catalog's operations run under it behind call_operation.
        app.guard = build_guard(config.guards) if guard == "config" else guard
        wrap = app.guard.wrap if app.guard is not None else None
        for tool_cfg in config.search_tools:
            backend = build_search_backend(tool_cfg, config, offline=offline)
            app.backends.append(backend)
            app.raw_tools += search_tools_for(tool_cfg, backend)
        for api_cfg in config.openapi:
            tools, closers = build_openapi_toolset(api_cfg, config.scope_keys, identity=app.identity, wrap=wrap)
            app.raw_tools += tools
            app.closers += closers
        _check_unique(app.raw_tools)
        if config.app_tools:
            written, hidden = build_app_tools(config.app_tools, config.scope_keys, app.raw_tools)
            # Tools only the app tools call (``hide``) are not served; the app tools hold them.
            app.raw_tools = [t for t in app.raw_tools if t.name not in hidden] + list(written)
            _check_unique(app.raw_tools)
    except BaseException:
        _close_soon(app)
        raise
    app.tools = [wrap(t) for t in app.raw_tools] if wrap is not None else list(app.raw_tools)
    return app


def _close_soon(app: ToolApp) -> None:
    """Close a half-built app: now when no event loop runs here, else as a task of the running loop."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        asyncio.run(app.aclose())
        return
    task = loop.create_task(app.aclose())
    _CLOSING.add(task)
    task.add_done_callback(_CLOSING.discard)


_CLOSING: set[asyncio.Task[None]] = set()


async def build_app(
    config: AppConfig,
    *,
    offline: bool = False,
    guard: Guard | Literal["config"] | None = "config",
    resource: str | None = None,
) -> ToolApp:
    """:func:`build_tool_app` for async callers (it awaits nothing; kept for code that awaited it)."""
    return build_tool_app(config, offline=offline, guard=guard, resource=resource)


def load_config(
    path: str | os.PathLike[str],
    *,
    environ: Mapping[str, str] | None = None,
    guard: Guard | Literal["config"] | None = "config",
) -> ToolApp:
    """Read a config file (YAML, TOML or JSON; ``${ENV}`` expanded, validated) and build its tools.

    Synchronous, so one file feeds an ADK agent module (``tools=[ScopegateToolset(app)]``) and
    ``scopegate serve`` alike; errors name the bad key and its line (:class:`ConfigValidationError`)."""
    return build_tool_app(read_config(path, environ), guard=guard)
