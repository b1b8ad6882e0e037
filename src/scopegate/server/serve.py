"""``scopegate serve CONFIG``: build a config's tools and serve them over MCP (stdio or streamable HTTP)."""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Literal

from scopegate.config.builder import ToolApp, build_app
from scopegate.config.loader import load_config
from scopegate.config.model import AppConfig
from scopegate.errors import ConfigError

Transport = Literal["stdio", "http"]
Say = Callable[[str], None]
Prepare = Callable[[ToolApp], Awaitable[object]]


def load_serve_config(path: str | os.PathLike[str], transport: Transport) -> AppConfig:
    """The config, refused before anything starts when ``transport`` cannot serve it safely."""
    config = load_config(path)
    if transport == "http" and not config.auth.configured:
        raise ConfigError(
            "HTTP needs auth: configure auth.jwt, auth.introspection and/or auth.token_table (stdio needs none)"
        )
    if transport == "stdio":
        from scopegate.server.identity import stdio_identity

        stdio_identity(config.stdio)  # refuse to start without a fixed identity
    return config


def _warn_empty_indexes(app: ToolApp, say: Say) -> None:
    from scopegate.backends.embedded import EmbeddedBackend

    for backend in app.backends:
        if isinstance(backend, EmbeddedBackend) and backend.count_sync() == 0:
            say(f"scopegate: warning: the embedded index {backend.path} is empty (serving it: --allow-empty)")


async def _check_remote_indexes(app: ToolApp, allow: bool, say: Say) -> None:
    """The live mapping check of every remote index (:mod:`scopegate.server.remote_indexes`) before serving."""
    from scopegate.server.remote_indexes import remote_index_states

    states = await remote_index_states(app.config, app.backends)
    errors = [line for state in states for line in state.errors]
    for line in [line for state in states for line in state.warnings] + (errors if allow else []):
        say(f"scopegate: warning: {line}")
    if errors and not allow:
        raise ConfigError(
            f"{len(errors)} index problem(s): " + "; ".join(errors) + " (--allow-index-problems serves anyway)"
        )


async def serve_config(
    config: AppConfig,
    *,
    transport: Transport = "stdio",
    host: str | None = None,
    port: int | None = None,
    prepare: Prepare | None = None,
    allow_empty: bool = False,
    allow_index_problems: bool = False,
    log_level: str = "warning",
    say: Say,
) -> None:
    """Serve until stopped. ``host``/``port`` override ``server.http``; ``prepare(app)`` runs once the tools
    are built, before serving (``--demo-data`` fills empty embedded indexes with it). A missing or empty
    embedded index is refused (ConfigError) unless ``prepare`` or ``allow_empty``. ``say`` gets the
    operator's messages (stderr: on stdio, stdout is the protocol). Every OpenSearch/Elasticsearch
    index's mapping is checked first: an error refuses to start unless ``allow_index_problems`` (then it is
    printed as a warning)."""
    # The mcp extra first: without it nothing can be served, whatever the indexes hold.
    from scopegate.server.http_app import serve_http
    from scopegate.server.stdio_app import serve_stdio

    if config.server.retain_freed_memory_mb is not None:
        from scopegate.server.allocator import retain_freed_memory

        retain_freed_memory(config.server.retain_freed_memory_mb * 1024 * 1024)
    if not (prepare or allow_empty):
        from scopegate.server.indexes import refuse_unready

        refuse_unready(config, config_path=str(config.source or "CONFIG"))
    http = config.server.http
    http = replace(http, host=host or http.host, port=port if port is not None else http.port)
    resource = None
    if transport == "http":
        from scopegate.config.identity import default_resource

        resource = default_resource(http)
    app: ToolApp = await build_app(config, resource=resource)
    try:
        await _check_remote_indexes(app, allow_index_problems, say)
        if prepare is not None:
            await prepare(app)
        _warn_empty_indexes(app, say)
        if transport == "stdio":
            await serve_stdio(app)
            return
        say(f"scopegate: MCP over streamable HTTP on http://{http.host}:{http.port}{http.path}")
        if http.host not in ("127.0.0.1", "localhost", "::1") and not http.allowed_hosts:
            say(
                "scopegate: warning: DNS-rebinding protection (Host header check) is off; "
                "set server.http.allowed_hosts, and terminate TLS in front of this server"
            )
        await serve_http(app, host=http.host, port=http.port, http=http, log_level=log_level)
    finally:
        await app.aclose()
