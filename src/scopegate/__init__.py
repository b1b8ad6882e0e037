"""scopegate: safe, typed, tenant-scoped tools for LLM agents over search engines and REST APIs.

The model supplies words; the server supplies scope. The public API is small:

* here: the search spec and its tools (``SearchSpec``, ``SearchTool``, ``search_tools``), the backends,
  the guard, hand-written tools (``app_tool``) and ``load_config``, which builds a config file's tools
  synchronously (the same ``ToolApp`` for an ADK agent module and for ``scopegate serve``);
* ``scopegate.adk``: the one ADK toolset, the scope-binding and guard plugins;
* ``scopegate.mcp``: serve tools over MCP from Python, or mount them into an ASGI app;
* ``scopegate.openapi``: OpenAPI toolsets;
* ``scopegate.errors``: the one exception tree (every exception derives from ``ScopegateError``).

Every name is imported on first use, so ``import scopegate`` costs a few milliseconds and a process
loads only the parts it touches. Names that used to live here (the exceptions, the ADK helpers) still
resolve for one release, with a ``DeprecationWarning`` naming their new home.
"""

from __future__ import annotations

import warnings
from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scopegate.apptools import AppContext, app_tool
    from scopegate.backends.base import IngestReport, SearchBackend
    from scopegate.backends.elasticsearch import ElasticsearchBackend
    from scopegate.backends.embedded import EmbeddedBackend
    from scopegate.backends.opensearch import OpenSearchBackend
    from scopegate.config.builder import ToolApp, load_config
    from scopegate.context import CallContext
    from scopegate.errors import ScopegateError
    from scopegate.guard import Guard
    from scopegate.ingest.mapping import FieldMapping
    from scopegate.scope import Scope, ScopeKeys
    from scopegate.search.agg_tool import AggregateTool
    from scopegate.search.aggregation import AggregationSpec
    from scopegate.search.bundle import search_tools
    from scopegate.search.spec import KeywordFilter, SearchSpec, TextField
    from scopegate.search.tools import FetchTool, SearchTool
    from scopegate.tools import Cacheable, ScopedTool, ToolOutcome

__version__ = "0.1.0"

# name -> module: the public API, imported on first access.
_PUBLIC = {
    "AggregateTool": "scopegate.search.agg_tool",
    "AggregationSpec": "scopegate.search.aggregation",
    "AppContext": "scopegate.apptools",
    "Cacheable": "scopegate.tools",
    "CallContext": "scopegate.context",
    "ElasticsearchBackend": "scopegate.backends.elasticsearch",
    "EmbeddedBackend": "scopegate.backends.embedded",
    "FetchTool": "scopegate.search.tools",
    "FieldMapping": "scopegate.ingest.mapping",
    "Guard": "scopegate.guard",
    "IngestReport": "scopegate.backends.base",
    "KeywordFilter": "scopegate.search.spec",
    "OpenSearchBackend": "scopegate.backends.opensearch",
    "Scope": "scopegate.scope",
    "ScopeKeys": "scopegate.scope",
    "ScopedTool": "scopegate.tools",
    "ScopegateError": "scopegate.errors",
    "SearchBackend": "scopegate.backends.base",
    "SearchSpec": "scopegate.search.spec",
    "SearchTool": "scopegate.search.tools",
    "TextField": "scopegate.search.spec",
    "ToolApp": "scopegate.config.builder",
    "ToolOutcome": "scopegate.tools",
    "app_tool": "scopegate.apptools",
    "load_config": "scopegate.config.builder",
    "search_tools": "scopegate.search.bundle",
}

# Names that lived here before 0.2: still resolved for one release, with a warning naming the new home.
_MOVED = {
    **{
        name: ("scopegate.errors", f"scopegate.errors.{name}")
        for name in (
            "ArgumentsInvalid",
            "BackendError",
            "CompositionError",
            "ConfigError",
            "ConfigValidationError",
            "ConfirmationRequired",
            "CredentialUnavailable",
            "DocumentError",
            "EngineNodeError",
            "FeatureUnavailable",
            "FieldUnavailable",
            "IdentityError",
            "IngestError",
            "KeyRefreshPending",
            "MissingExtraError",
            "MissingIndexError",
            "MissingOperationsError",
            "NoCredentials",
            "OpenAPIError",
            "ProblemsFound",
            "ProviderUnavailable",
            "RefError",
            "ResponseUnreadable",
            "ScopeMissing",
            "ScopeNotCarried",
            "ScopeTrustWarning",
            "SelectionError",
            "SignatureInvalid",
            "SpecLoadError",
            "ToolError",
            "ToolFailure",
            "TranslationError",
            "UnknownNameError",
            "UnsupportedOperation",
        )
    },
    "GuardedTool": ("scopegate.guard", "scopegate.guard.GuardedTool"),
    "ScopegateToolset": ("scopegate.adk", "scopegate.adk.ScopegateToolset"),
    "AdkTool": ("scopegate.adapters.adk", "scopegate.adk.ScopegateToolset(tools)"),
    "adk_tools": ("scopegate.adapters.adk", "scopegate.adk.ScopegateToolset(tools, guard=guard)"),
    "adk_search_tools": (
        "scopegate.adapters.adk",
        "scopegate.adk.ScopegateToolset(scopegate.search_tools(spec, backend), guard=guard)",
    ),
}

__all__ = [
    "AggregateTool",
    "AggregationSpec",
    "AppContext",
    "Cacheable",
    "CallContext",
    "ElasticsearchBackend",
    "EmbeddedBackend",
    "FetchTool",
    "FieldMapping",
    "Guard",
    "IngestReport",
    "KeywordFilter",
    "OpenSearchBackend",
    "Scope",
    "ScopeKeys",
    "ScopedTool",
    "ScopegateError",
    "SearchBackend",
    "SearchSpec",
    "SearchTool",
    "TextField",
    "ToolApp",
    "ToolOutcome",
    "__version__",
    "app_tool",
    "load_config",
    "search_tools",
]


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is not None:
        value = getattr(import_module(module), name)
    elif name in _MOVED:
        module, instead = _MOVED[name]
        warnings.warn(
            f"scopegate.{name} is deprecated and goes in 0.3; use {instead}", DeprecationWarning, stacklevel=2
        )
        value = getattr(import_module(module), name)
    else:
        raise AttributeError(f"module 'scopegate' has no attribute {name!r}")
    if name in _PUBLIC:
        globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__() -> list[str]:
    return __all__
