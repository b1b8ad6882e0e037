"""The MCP server: ``scopegate serve CONFIG`` over stdio or streamable HTTP (official ``mcp`` SDK)."""
