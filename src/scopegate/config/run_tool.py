"""Call one configured search tool as a model would, from the command line (``scopegate search|get|count
--config FILE --tool NAME``), on whatever backend the config gives it: embedded, OpenSearch or Elasticsearch.

The tool is built exactly as ``scopegate serve`` builds it (:func:`~scopegate.config.builder.build_search_backend`,
the same :class:`~scopegate.search.tools.SearchTool`), without the guard: the operator's smoke test of a
cluster, in the scope the operator names (written into session state under the config's ``scope.state_keys``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Literal

from scopegate.backends.embedded import EmbeddedBackend
from scopegate.backends.engine_common import EngineBackend
from scopegate.config.builder import build_search_backend
from scopegate.config.loader import load_config
from scopegate.config.model import AppConfig, SearchToolConfig
from scopegate.context import CallContext
from scopegate.errors import ConfigError, UnknownNameError
from scopegate.scope import Scope
from scopegate.search.local import session_state
from scopegate.search.tools import FetchTool, SearchTool

ConfigToolKind = Literal["search", "fetch", "count"]


def tool_config(config: AppConfig, name: str | None) -> SearchToolConfig:
    """The search tool called (or whose fetch tool is called) ``name``; the only one when ``name`` is None."""
    tools = config.search_tools
    if name is None:
        if len(tools) != 1:
            raise ConfigError(f"the config has {len(tools)} search tools: name one with --tool")
        return tools[0]
    for tool in tools:
        if name in (tool.name, tool.fetch_name):
            return tool
    raise UnknownNameError("search tool", name, [t.name for t in tools])


async def run_config_tool(
    path: str | os.PathLike[str], tool: str | None, kind: ConfigToolKind, args: Mapping[str, Any], scope: Scope
) -> dict[str, Any]:
    """The result of one call of the configured tool ``tool`` in ``scope`` (count: ``{"status", "count"}``)."""
    config = load_config(path)
    chosen = tool_config(config, tool)
    state = session_state(chosen.spec.scope_keys, scope)
    backend = build_search_backend(chosen, config)
    try:
        if kind == "count":
            if isinstance(backend, EmbeddedBackend):
                return {"status": "ok", "tool": chosen.name, "count": backend.count_sync(scope)}
            if isinstance(backend, EngineBackend):
                return {"status": "ok", "tool": chosen.name, "count": await backend.count(scope)}
            raise ConfigError(f"{chosen.name}: this backend cannot count")
        runner = SearchTool(chosen.spec, backend) if kind == "search" else FetchTool(chosen.spec, backend)
        return (await runner.run(dict(args), CallContext(state=state))).result
    finally:
        await backend.close()
