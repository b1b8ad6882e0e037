"""The framework-neutral tool protocol that adapters (ADK, MCP) and guards wrap.

A tool takes the model's arguments and a :class:`CallContext` and returns a
JSON-able dict: a result, or an error envelope. ``run`` never raises.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

from scopegate.context import CallContext
from scopegate.scope import Scope


@runtime_checkable
class ScopedTool(Protocol):
    name: str
    description: str
    # Tools in one family share a call cap (e.g. "search" for search and fetch, "openapi").
    family: str
    # True for searches and reads; False for anything that changes state.
    read_only: bool

    def parameters_schema(self) -> dict[str, Any]:
        """JSON Schema (2020-12 subset) of the arguments the model may send."""
        ...

    def scope_of(self, ctx: CallContext) -> Scope | None:
        """The caller's scope as this tool reads it, or None when it cannot be read."""
        ...

    def log_fields(self, args: Mapping[str, Any], result: Mapping[str, Any]) -> dict[str, Any]:
        """Tool-specific call-log fields (normalised query, filters, ids, operationId, ...).

        Must not return secrets or personal data.
        """
        ...

    async def run(self, args: Mapping[str, Any], ctx: CallContext) -> dict[str, Any]:
        """Validate, scope, execute, shape. Never raises."""
        ...
