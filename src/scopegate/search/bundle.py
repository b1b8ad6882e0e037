"""The tools of one search spec over one backend: search, fetch-by-id and, when asked, counting."""

from __future__ import annotations

from scopegate.backends.base import SearchBackend
from scopegate.search.agg_tool import AggregateTool
from scopegate.search.aggregation import AggregationSpec
from scopegate.search.spec import SearchSpec
from scopegate.search.tools import FetchTool, SearchTool
from scopegate.tools import ScopedTool


def search_tools(
    spec: SearchSpec, backend: SearchBackend, *, fetch: bool = True, aggregate: AggregationSpec | bool = False
) -> list[ScopedTool]:
    """``[SearchTool, FetchTool]`` (and the counting tool with ``aggregate``: ``True`` for its defaults or an
    :class:`AggregationSpec`) — what a config's ``search_tools`` entry builds, for any adapter."""
    tools: list[ScopedTool] = [SearchTool(spec, backend)]
    if fetch:
        tools.append(FetchTool(spec, backend))
    if aggregate is not False:
        tools.append(AggregateTool(spec, backend, aggregate if isinstance(aggregate, AggregationSpec) else None))
    return tools
