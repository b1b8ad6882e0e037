"""Config -> the same objects the Python API builds: backends, tools, guard.

Nothing here invents a tool of its own: a configured search tool *is*
``SearchTool(spec, backend)`` (+ ``FetchTool``), an OpenAPI toolset is the
OpenAPI runtime's own toolset, the guard is :class:`scopegate.guard.Guard`.
So an app written in Python and the same app written as a config file show
the model identical declarations and return identical results.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from scopegate.backends.base import SearchBackend
from scopegate.backends.embedded import EmbeddedBackend
from scopegate.config.model import (
    AppConfig,
    EmbeddedBackendConfig,
    GuardConfig,
    OpenAPIConfig,
    RemoteBackendConfig,
    SearchToolConfig,
)
from scopegate.errors import ConfigError
from scopegate.search.tools import FetchTool, SearchTool
from scopegate.tools import ScopedTool

log = logging.getLogger("scopegate.config")


class FeatureUnavailable(ConfigError):
    """A config section needs a part of scopegate that is not installed or not built yet."""


def optional_module(module: str, feature: str) -> ModuleType:
    """Import ``module`` or raise :class:`FeatureUnavailable` naming what is missing."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        missing = exc.name or module
        raise FeatureUnavailable(
            f"{feature} is not available in this installation: module {missing!r} cannot be imported ({exc})"
        ) from exc


@dataclass
class ToolApp:
    """The tools of one config, ready for an adapter (ADK, MCP), and what they hold open."""

    config: AppConfig
    tools: list[ScopedTool]
    raw_tools: list[ScopedTool]
    guard: Any = None  # scopegate.guard.Guard | None (imported lazily)
    backends: list[SearchBackend] = field(default_factory=list)
    closers: list[Any] = field(default_factory=list)

    def tool(self, name: str) -> ScopedTool:
        for t in self.tools:
            if t.name == name:
                return t
        raise KeyError(name)

    def names(self) -> list[str]:
        return [t.name for t in self.tools]

    def adk_tools(self) -> list[Any]:
        """The tools as Google ADK tools (``LlmAgent(tools=app.adk_tools())``)."""
        from scopegate.adapters.adk import AdkTool

        return [AdkTool(t) for t in self.tools]

    async def aclose(self) -> None:
        for closer in reversed(self.closers):
            try:
                result = closer()
                if hasattr(result, "__await__"):
                    await result
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
        return EmbeddedBackend(tool.spec, backend_cfg.index_path(tool.spec.index), threads=backend_cfg.threads)
    return build_remote_backend(backend_cfg, tool)


def build_remote_backend(cfg: RemoteBackendConfig, tool: SearchToolConfig) -> SearchBackend:
    """An OpenSearch or Elasticsearch backend: the same class and arguments the Python API uses."""
    options: dict[str, Any] = {"verify_certs": cfg.verify_certs}
    if cfg.ca_certs is not None:
        options["ca_certs"] = str(cfg.ca_certs)
    engine: dict[str, Any] = {}
    if cfg.shards is not None:
        engine["shards"] = cfg.shards
    if cfg.replicas is not None:
        engine["replicas"] = cfg.replicas
    urls: str | list[str] = cfg.urls[0] if len(cfg.urls) == 1 else list(cfg.urls)
    if cfg.kind == "opensearch":
        module = optional_module(
            "scopegate.backends.opensearch", "the opensearch backend (pip install scopegate[opensearch])"
        )
        if cfg.username is not None:
            options["http_auth"] = (cfg.username, cfg.password or "")
        backend: SearchBackend = module.OpenSearchBackend(tool.spec, urls, **engine, **options)
        return backend
    module = optional_module(
        "scopegate.backends.elasticsearch", "the elasticsearch backend (pip install scopegate[elasticsearch])"
    )
    if cfg.username is not None:
        options["basic_auth"] = (cfg.username, cfg.password or "")
    if cfg.api_key:
        options["api_key"] = cfg.api_key
    if cfg.server_major is not None:
        engine["server_major"] = cfg.server_major
    backend = module.ElasticsearchBackend(tool.spec, urls, **engine, **options)
    return backend


# -- guard --------------------------------------------------------------------------------
def build_guard(cfg: GuardConfig) -> Any:
    """A :class:`scopegate.guard.Guard` from the ``guards`` section, or None when disabled."""
    if not cfg.enabled:
        return None
    guard_mod = optional_module("scopegate.guard", "the guards section (call cap, cache, call log, metrics)")
    cap = guard_mod.CallCap(
        guard_mod.CapPolicy(
            family_limits=dict(cfg.family_limits), tool_limits=dict(cfg.tool_limits), default_limit=cfg.default_limit
        )
    )
    rate_limiter = guard_mod.RateLimiter(cfg.rate, cfg.burst) if cfg.rate is not None and cfg.burst else None
    cache = None
    if cfg.cache_enabled:
        local = guard_mod.MemoryStore(max_entries=cfg.cache_max_entries)
        # With Redis, a small in-process tier in front keeps the hit path ~10x faster than a search.
        store = guard_mod.TieredStore(local, guard_mod.RedisStore(url=cfg.redis_url)) if cfg.redis_url else local
        cache = guard_mod.ToolCache(store, ttl_s=cfg.cache_ttl_s, families=cfg.cache_families)
    call_log = None
    if cfg.log_path is not None:
        kwargs: dict[str, Any] = {}
        if cfg.log_max_bytes is not None:
            kwargs["max_bytes"] = cfg.log_max_bytes
        if cfg.log_backups is not None:
            kwargs["backups"] = cfg.log_backups
        call_log = guard_mod.CallLog.to_file(cfg.log_path, **kwargs)
    metrics = guard_mod.GuardMetrics() if cfg.metrics else None
    return guard_mod.Guard(
        cap=cap,
        rate_limiter=rate_limiter,
        cache=cache,
        call_log=call_log,
        metrics=metrics,
        call_timeout_s=cfg.call_timeout_s,
        generation_ttl_s=cfg.cache_generation_ttl_s,
    )


# -- OpenAPI ------------------------------------------------------------------------------
def build_openapi_tools(cfg: OpenAPIConfig, config: AppConfig) -> tuple[list[ScopedTool], list[Any]]:
    """The tools of one OpenAPI toolset and the closers it needs (its HTTP client)."""
    from scopegate.config.openapi import build_openapi_toolset

    return build_openapi_toolset(cfg, config)


# -- the app ------------------------------------------------------------------------------
def search_tools_for(tool_cfg: SearchToolConfig, backend: SearchBackend) -> list[ScopedTool]:
    tools: list[ScopedTool] = [SearchTool(tool_cfg.spec, backend)]
    if tool_cfg.fetch:
        tools.append(FetchTool(tool_cfg.spec, backend))
    return tools


def _check_unique(tools: Sequence[ScopedTool]) -> None:
    seen: set[str] = set()
    for tool in tools:
        if tool.name in seen:
            raise ConfigError(f"two tools are named {tool.name!r}; tool names must be unique across the config")
        seen.add(tool.name)


async def build_app(config: AppConfig, *, offline: bool = False, guard: Any = "config") -> ToolApp:
    """Backends, tools and guard of ``config``.

    ``offline`` builds in-memory embedded indexes and opens nothing (for
    ``scopegate check``). ``guard`` overrides the configured guard (pass
    ``None`` for raw tools). On failure, whatever was opened is closed again.
    """
    app = ToolApp(config=config, tools=[], raw_tools=[])
    try:
        for tool_cfg in config.search_tools:
            backend = build_search_backend(tool_cfg, config, offline=offline)
            app.backends.append(backend)
            app.raw_tools += search_tools_for(tool_cfg, backend)
        for api_cfg in config.openapi:
            tools, closers = build_openapi_tools(api_cfg, config)
            app.raw_tools += tools
            app.closers += closers
        _check_unique(app.raw_tools)
        app.guard = build_guard(config.guards) if guard == "config" else guard
    except BaseException:
        await app.aclose()
        raise
    app.tools = [app.guard.wrap(t) for t in app.raw_tools] if app.guard is not None else list(app.raw_tools)
    return app
