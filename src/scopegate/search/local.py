"""Run the search and fetch tools on an embedded index folder, as a model would (``scopegate search|get``).

The scope is the operator's, given as a :class:`~scopegate.scope.Scope`; it is written into session state
under the index's stored spec's ``scope_keys``, exactly where an ADK or MCP session would carry it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from scopegate.context import CallContext
from scopegate.errors import ScopeNotCarried
from scopegate.scope import Scope, ScopeKeys, state_for

ToolKind = Literal["search", "fetch"]


def session_state(keys: ScopeKeys, scope: Scope) -> dict[str, Any]:
    """State for ``scope`` under ``keys``; refuses groups or a user that ``keys`` would silently drop."""
    if scope.group_ids and keys.groups is None:
        raise ScopeNotCarried("the index's spec has no groups scope key (scope_keys.groups), so groups do not apply")
    if scope.user_id is not None and keys.user is None:
        raise ScopeNotCarried("the index's spec has no user scope key (scope_keys.user), so a user does not apply")
    return state_for(scope, keys)


async def run_index_tool(index: str | Path, kind: ToolKind, args: Mapping[str, Any], scope: Scope) -> dict[str, Any]:
    """Open the index with its stored spec and call its search or fetch tool once in ``scope``."""
    from scopegate.backends.embedded import EmbeddedBackend
    from scopegate.search.tools import FetchTool, SearchTool

    backend = EmbeddedBackend.open(index)
    try:
        state = session_state(backend.spec.scope_keys, scope)
        tool = SearchTool(backend.spec, backend) if kind == "search" else FetchTool(backend.spec, backend)
        return (await tool.run(dict(args), CallContext(state=state))).result
    finally:
        await backend.close()
