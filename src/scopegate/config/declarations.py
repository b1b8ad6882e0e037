"""What each tool shows a model: name, description, parameters schema, hints.

Adapters render this one declaration: ADK as a ``FunctionDeclaration``
(``parameters_json_schema``), MCP as a ``Tool`` (``inputSchema`` +
annotations), ``scopegate check`` as JSON. Nothing is added or dropped on the
way, so every transport shows the model the same tool.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from scopegate.tools import ScopedTool


def requires_confirmation(tool: ScopedTool) -> bool:
    """Whether the user must approve each call (OpenAPI tools that change state, by default)."""
    return bool(tool.requires_confirmation)


def tool_annotations(tool: ScopedTool) -> dict[str, Any]:
    """MCP tool annotations (hints for clients): reads are read-only, state changes destructive."""
    # A search runs over our own index (a closed world); an API tool reaches an external service.
    open_world = tool.family not in ("search", "fetch")
    if tool.read_only:
        return {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True, "openWorldHint": open_world}
    return {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": False, "openWorldHint": open_world}


def declaration(tool: ScopedTool) -> dict[str, Any]:
    return {
        "name": tool.name,
        "description": tool.description,
        "parameters": tool.parameters_schema(),
        "family": tool.family,
        "read_only": bool(tool.read_only),
        "requires_confirmation": requires_confirmation(tool),
        "annotations": tool_annotations(tool),
    }


def declarations(tools: Sequence[ScopedTool]) -> list[dict[str, Any]]:
    return [declaration(t) for t in tools]
