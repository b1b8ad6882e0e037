"""OpenAPI toolsets: a pinned spec and an allowlist -> one safe, typed tool per operation.

    from scopegate.openapi import OperationPolicy, OperationToolset, ToolsetSettings

    orders = OperationToolset(ToolsetSettings(spec="orders.json", allow=("listOrders", "addNote")))
    # scopegate.adk.ScopegateToolset(orders) for ADK; scopegate.mcp.asgi_app(orders) for MCP

The submodules load, select, translate and snapshot specs (``loader``, ``select``, ``translate``,
``snapshot``) and run operations (``runtime``). Names here are imported on first use.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scopegate.openapi.runtime import (
        Credential,
        FromProvider,
        FromState,
        FromSubject,
        HookOwner,
        LookupOwner,
        OperationCatalog,
        OperationPolicy,
        OperationToolset,
        ResponseOwner,
        RetryPolicy,
        Secret,
        ShapeLimits,
        Timeouts,
        ToolsetSettings,
    )

__all__ = [
    "Credential",
    "FromProvider",
    "FromState",
    "FromSubject",
    "HookOwner",
    "LookupOwner",
    "OperationCatalog",
    "OperationPolicy",
    "OperationToolset",
    "ResponseOwner",
    "RetryPolicy",
    "Secret",
    "ShapeLimits",
    "Timeouts",
    "ToolsetSettings",
]


def __getattr__(name: str) -> Any:
    if name in __all__:
        return getattr(import_module("scopegate.openapi.runtime"), name)
    raise AttributeError(f"module 'scopegate.openapi' has no attribute {name!r}")
