"""Pure conversions between scopegate tools and MCP wire objects.

* a tool -> ``mcp_types.Tool``: the tool's own name, description and
  parameters schema (byte-for-byte the ADK declaration) plus annotations;
* a result dict -> ``CallToolResult``: the dict as structured content, the
  same dict as compact JSON text (what a text-only client shows the model,
  and what an ADK model reads), ``isError`` for error envelopes.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import mcp_types as types

from scopegate.config.declarations import tool_annotations
from scopegate.errors import tool_error
from scopegate.tools import ScopedTool

UNKNOWN_TOOL = "UNKNOWN_TOOL"
MAX_LISTED_TOOLS = 50


def mcp_tool(tool: ScopedTool) -> types.Tool:
    hints = tool_annotations(tool)
    return types.Tool(
        name=tool.name,
        description=tool.description,
        input_schema=tool.parameters_schema(),
        annotations=types.ToolAnnotations(
            read_only_hint=hints["readOnlyHint"],
            destructive_hint=hints["destructiveHint"],
            idempotent_hint=hints["idempotentHint"],
            open_world_hint=hints["openWorldHint"],
        ),
    )


def compact_text(result: Mapping[str, Any]) -> str:
    """The result as one line of JSON (UTF-8 kept readable, no padding)."""
    return json.dumps(result, ensure_ascii=False, separators=(",", ":"), default=str)


def call_result(result: Mapping[str, Any]) -> types.CallToolResult:
    """A tool's result dict as an MCP result: structured content + compact text, isError for envelopes."""
    data = dict(result)
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=compact_text(data))],
        structured_content=data,
        is_error=data.get("status") == "error",
    )


def unknown_tool(name: str, known: Sequence[str]) -> dict[str, Any]:
    shown = sorted(known)[:MAX_LISTED_TOOLS]
    return tool_error(
        UNKNOWN_TOOL,
        f"there is no tool named {name[:80]!r} on this server; call one of the listed tools",
        allowed=shown,
    )
