"""The stdio transport: one process, one user, scope fixed by the config or the environment."""

from __future__ import annotations

from collections.abc import Mapping

from mcp.server.stdio import stdio_server

from scopegate.config.builder import ToolApp
from scopegate.server.identity import Identity, stdio_identity
from scopegate.server.mcp_server import ScopegateMcpServer


def build_stdio_server(
    app: ToolApp, *, identity: Identity | None = None, environ: Mapping[str, str] | None = None
) -> ScopegateMcpServer:
    fixed = identity or stdio_identity(app.config.stdio, environ)
    return ScopegateMcpServer(app, transport="stdio", fixed_identity=fixed)


async def serve_stdio(
    app: ToolApp, *, identity: Identity | None = None, environ: Mapping[str, str] | None = None
) -> None:
    """Serve MCP on this process's stdin/stdout until the client closes it."""
    mcp = build_stdio_server(app, identity=identity, environ=environ)
    async with stdio_server() as (read_stream, write_stream):
        await mcp.server.run(read_stream, write_stream, mcp.server.create_initialization_options())
