"""scopegate: safe, typed, tenant-scoped tools for LLM agents over search engines and REST APIs.

The public core is importable from here. The ADK adapter names are resolved on
first use, so ``import scopegate`` does not pay for importing google-adk
(about 0.4 s) in processes that never touch ADK (the CLI, MCP servers).
"""

from typing import TYPE_CHECKING, Any

from scopegate.backends.base import IngestReport, SearchBackend
from scopegate.backends.embedded import EmbeddedBackend
from scopegate.context import CallContext
from scopegate.errors import BackendError, ConfigError, IngestError, MissingIndexError, ScopegateError, ToolError
from scopegate.guard import Guard, GuardedTool
from scopegate.ingest.mapping import FieldMapping
from scopegate.scope import Scope, ScopeKeys
from scopegate.search.spec import KeywordFilter, SearchSpec, TextField
from scopegate.search.tools import FetchTool, SearchTool
from scopegate.tools import ScopedTool

if TYPE_CHECKING:
    from scopegate.adapters.adk import AdkTool, adk_search_tools

__all__ = [
    "AdkTool",
    "BackendError",
    "CallContext",
    "ConfigError",
    "EmbeddedBackend",
    "FetchTool",
    "FieldMapping",
    "Guard",
    "GuardedTool",
    "IngestError",
    "IngestReport",
    "KeywordFilter",
    "MissingIndexError",
    "Scope",
    "ScopeKeys",
    "ScopedTool",
    "ScopegateError",
    "SearchBackend",
    "SearchSpec",
    "SearchTool",
    "TextField",
    "ToolError",
    "adk_search_tools",
]
__version__ = "0.1.0"

_ADK_NAMES = {"AdkTool", "adk_search_tools"}


def __getattr__(name: str) -> Any:
    if name in _ADK_NAMES:
        from scopegate.adapters import adk

        return getattr(adk, name)
    raise AttributeError(f"module 'scopegate' has no attribute {name!r}")
