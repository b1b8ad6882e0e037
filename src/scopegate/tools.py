"""The framework-neutral tool protocol that adapters (ADK, MCP) and guards wrap.

A tool takes the model's arguments and a :class:`CallContext` and returns a
:class:`ToolOutcome`: the JSON-able dict the model sees (a result or an error
envelope) and the call-log fields of that call. ``run`` never raises.

Everything an adapter or the guard needs from a tool is declared here: there
are no optional attributes discovered with ``getattr``. Tools whose results
may be cached also implement :class:`Cacheable`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from scopegate.context import CallContext
from scopegate.scope import Scope, ScopeKeys

LogFields = Mapping[str, Any]


@dataclass(frozen=True)
class ToolOutcome:
    """What one call produced.

    ``result`` is what the model sees. ``log`` holds tool-specific call-log
    fields (normalised query, filters, ids, operationId, HTTP status, ...),
    computed during the call from what the tool already validated; it never
    holds secrets or argument values unless a setting asks for them.
    """

    result: dict[str, Any]
    log: LogFields = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.result.get("status") != "error"

    @property
    def error_code(self) -> str | None:
        code = self.result.get("error_code")
        return None if self.ok or code is None else str(code)


@runtime_checkable
class ScopedTool(Protocol):
    name: str
    description: str
    # Tools in one family share a call cap (e.g. "search" for search and fetch, "openapi").
    family: str
    # True for searches and reads; False for anything that changes state.
    read_only: bool
    # True when every call needs the user's approval first (ADK request_confirmation,
    # MCP elicitation); the tool answers CONFIRMATION_REQUIRED until ctx.confirmed is set.
    requires_confirmation: bool
    # The session-state keys this tool reads its scope from (``scope_of`` is their reader).
    scope_keys: ScopeKeys

    def parameters_schema(self) -> dict[str, Any]:
        """JSON Schema (2020-12 subset) of the arguments the model may send."""
        ...

    def scope_of(self, ctx: CallContext) -> Scope | None:
        """The caller's scope as this tool reads it, or None when it cannot be read."""
        ...

    def describe(self, args: Mapping[str, Any]) -> LogFields:
        """Call-log fields for a call refused before it ran (call cap, rate limit).

        What was asked, read from the arguments alone (normalised query, argument
        names): no validation, no I/O, never secrets or argument values.
        """
        ...

    async def run(self, args: Mapping[str, Any], ctx: CallContext) -> ToolOutcome:
        """Validate, scope, execute, shape. Never raises."""
        ...


@runtime_checkable
class Cacheable(Protocol):
    """A read-only tool whose results the guard may cache.

    ``cache_args`` is what the cache key encodes of the arguments (normalised,
    so equivalent calls share an entry); ``generation`` changes whenever the
    data behind the tool changes, so an entry computed at another generation is
    never served.
    """

    def cache_args(self, args: Mapping[str, Any]) -> Any: ...

    async def generation(self) -> str: ...


Closer = Callable[[], Awaitable[None]]


@runtime_checkable
class ToolSource(Protocol):
    """Something that holds tools and what they keep open: a built config (``ToolApp``), an OpenAPI
    toolset (its HTTP client). Adapters accept these beside plain tools and close them with the adapter."""

    @property
    def tools(self) -> Sequence[ScopedTool]: ...

    async def aclose(self) -> None: ...


def gather_tools(items: ToolSource | Iterable[ScopedTool | ToolSource]) -> tuple[list[ScopedTool], list[Closer]]:
    """The tools of ``items`` in order, and the closers of the sources among them (each once)."""
    if isinstance(items, ToolSource):
        items = [items]
    tools: list[ScopedTool] = []
    closers: list[Closer] = []
    for item in items:
        if isinstance(item, ToolSource) and not isinstance(item, ScopedTool):
            tools.extend(item.tools)
            if item.aclose not in closers:
                closers.append(item.aclose)
        else:
            tools.append(item)
    return tools, closers


class ToolWrapper(Protocol):
    """Something that wraps a tool in rules of its own (a ``Guard``: cap, cache, call log, metrics)."""

    def wrap(self, tool: ScopedTool) -> ScopedTool: ...
