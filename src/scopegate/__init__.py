"""scopegate: safe, typed, tenant-scoped tools for LLM agents over search engines and REST APIs.

The public core is importable from here; optional parts (OpenSearch,
Elasticsearch, OpenAPI, guards, MCP server) live in their own subpackages.
"""

from scopegate.adapters.adk import AdkTool, adk_search_tools
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
