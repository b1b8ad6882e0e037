"""Google ADK adapter: scopegate tools as native ADK ``BaseTool`` objects.

The adapter only translates: ADK's ``ToolContext`` becomes a
:class:`~scopegate.context.CallContext` (session state, invocation and session
ids) and the neutral tool does the rest. The model's schema is the tool's own
``parameters_schema()``; the tool context never appears in it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from google.adk.tools.base_tool import BaseTool
from google.adk.tools.tool_context import ToolContext
from google.genai import types

from scopegate.backends.base import SearchBackend
from scopegate.context import CallContext
from scopegate.search.spec import SearchSpec
from scopegate.search.tools import FetchTool, SearchTool
from scopegate.tools import ScopedTool


def call_context_from_adk(tool_context: ToolContext, *, confirmed: bool | None = None) -> CallContext:
    """Session state and ids from ADK; a plain dict copy, so a tool cannot write back."""
    state: Mapping[str, Any] = tool_context.state.to_dict()
    session = tool_context.session
    return CallContext(
        state=state,
        invocation_id=tool_context.invocation_id,
        session_id=getattr(session, "id", None),
        confirmed=confirmed,
        # Lets the ADK plugin and guard-wrapped tools count one call once.
        extra={"call_id": tool_context.function_call_id},
    )


class AdkTool(BaseTool):
    """Any :class:`ScopedTool` (search, fetch, guarded tools) as an ADK tool."""

    def __init__(self, tool: ScopedTool) -> None:
        super().__init__(name=tool.name, description=tool.description)
        self.tool = tool

    def _get_declaration(self) -> types.FunctionDeclaration:
        return types.FunctionDeclaration(
            name=self.tool.name,
            description=self.tool.description,
            parameters_json_schema=self.tool.parameters_schema(),
        )

    async def run_async(self, *, args: dict[str, Any], tool_context: ToolContext) -> Any:
        return await self.tool.run(args, call_context_from_adk(tool_context))


def adk_search_tools(spec: SearchSpec, backend: SearchBackend) -> list[AdkTool]:
    """The search tool and its fetch-by-id companion, ready for ``LlmAgent(tools=...)``."""
    return [AdkTool(SearchTool(spec, backend)), AdkTool(FetchTool(spec, backend))]
