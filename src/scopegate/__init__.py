"""scopegate: safe, typed, tenant-scoped tools for LLM agents over search engines and REST APIs.

The public core is importable from here. Names from heavier parts (the ADK
adapter, the config and OpenAPI layers) are resolved on first use, so
``import scopegate`` does not pay for importing google-adk (about 0.4 s) in
processes that never touch ADK (the CLI, MCP servers).

Every exception scopegate raises to application code derives from
:class:`ScopegateError` and is exported here.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

from scopegate.backends.base import IngestReport, SearchBackend
from scopegate.backends.embedded import EmbeddedBackend
from scopegate.context import CallContext
from scopegate.documents import DocumentError
from scopegate.errors import (
    ArgumentsInvalid,
    BackendError,
    CompositionError,
    ConfigError,
    ConfirmationRequired,
    CredentialUnavailable,
    EngineNodeError,
    FieldUnavailable,
    IdentityError,
    IngestError,
    KeyRefreshPending,
    MissingExtraError,
    MissingIndexError,
    NoCredentials,
    ProviderUnavailable,
    ResponseUnreadable,
    ScopegateError,
    ScopeMissing,
    ScopeNotCarried,
    ScopeTrustWarning,
    ToolError,
    ToolFailure,
    UnknownNameError,
)
from scopegate.guard import Guard, GuardedTool
from scopegate.identity.signing import SignatureInvalid
from scopegate.ingest.mapping import FieldMapping
from scopegate.scope import Scope, ScopeKeys
from scopegate.search.agg_tool import AggregateTool
from scopegate.search.aggregation import AggregationSpec
from scopegate.search.spec import KeywordFilter, SearchSpec, TextField
from scopegate.search.tools import FetchTool, SearchTool
from scopegate.tools import Cacheable, ScopedTool, ToolOutcome

if TYPE_CHECKING:
    from scopegate.adapters.adk import AdkTool, ScopegateToolset, adk_search_tools, adk_tools
    from scopegate.config.builder import FeatureUnavailable
    from scopegate.openapi.errors import (
        MissingOperationsError,
        OpenAPIError,
        RefError,
        SelectionError,
        SpecLoadError,
        TranslationError,
    )
    from scopegate.openapi.runtime.request import UnsupportedOperation
    from scopegate.validation import ConfigValidationError, ProblemsFound

# name -> module, imported on first access (see the module docstring).
_LAZY = {
    "AdkTool": "scopegate.adapters.adk",
    "ScopegateToolset": "scopegate.adapters.adk",
    "adk_search_tools": "scopegate.adapters.adk",
    "adk_tools": "scopegate.adapters.adk",
    "FeatureUnavailable": "scopegate.config.builder",
    "ConfigValidationError": "scopegate.validation",
    "ProblemsFound": "scopegate.validation",
    "MissingOperationsError": "scopegate.openapi.errors",
    "OpenAPIError": "scopegate.openapi.errors",
    "RefError": "scopegate.openapi.errors",
    "SelectionError": "scopegate.openapi.errors",
    "SpecLoadError": "scopegate.openapi.errors",
    "TranslationError": "scopegate.openapi.errors",
    "UnsupportedOperation": "scopegate.openapi.runtime.request",
}

__all__ = [
    "AdkTool",
    "AggregateTool",
    "AggregationSpec",
    "ArgumentsInvalid",
    "BackendError",
    "Cacheable",
    "CallContext",
    "CompositionError",
    "ConfigError",
    "ConfigValidationError",
    "ConfirmationRequired",
    "CredentialUnavailable",
    "DocumentError",
    "EmbeddedBackend",
    "EngineNodeError",
    "FeatureUnavailable",
    "FetchTool",
    "FieldMapping",
    "FieldUnavailable",
    "Guard",
    "GuardedTool",
    "IdentityError",
    "IngestError",
    "IngestReport",
    "KeyRefreshPending",
    "KeywordFilter",
    "MissingExtraError",
    "MissingIndexError",
    "MissingOperationsError",
    "NoCredentials",
    "OpenAPIError",
    "ProblemsFound",
    "ProviderUnavailable",
    "RefError",
    "ResponseUnreadable",
    "Scope",
    "ScopeKeys",
    "ScopeMissing",
    "ScopeNotCarried",
    "ScopeTrustWarning",
    "ScopedTool",
    "ScopegateError",
    "ScopegateToolset",
    "SearchBackend",
    "SearchSpec",
    "SearchTool",
    "SelectionError",
    "SignatureInvalid",
    "SpecLoadError",
    "TextField",
    "ToolError",
    "ToolFailure",
    "ToolOutcome",
    "TranslationError",
    "UnknownNameError",
    "UnsupportedOperation",
    "adk_search_tools",
    "adk_tools",
]
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'scopegate' has no attribute {name!r}")
    return getattr(import_module(module), name)
