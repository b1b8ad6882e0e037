"""Small scripted sibling tools for the app-tool unit tests (the integration tests use the real ones)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from scopegate.context import CallContext
from scopegate.scope import Scope, ScopeKeys, scope_or_none
from scopegate.tools import LogFields, ToolOutcome


@dataclass
class Recorder:
    """A sibling tool that records every call and answers with ``answer``."""

    name: str
    read_only: bool = True
    answer: dict[str, Any] = field(default_factory=lambda: {"status": "ok", "untrusted": {"data": {"id": "x"}}})
    scope_keys: ScopeKeys = field(default_factory=ScopeKeys)
    calls: list[tuple[dict[str, Any], CallContext]] = field(default_factory=list)
    description: str = "a recording tool"
    family: str = "openapi"

    @property
    def requires_confirmation(self) -> bool:
        return not self.read_only

    def parameters_schema(self) -> dict[str, Any]:
        return {"type": "object"}

    def scope_of(self, ctx: CallContext) -> Scope | None:
        return scope_or_none(ctx.state, self.scope_keys)

    def describe(self, args: Mapping[str, Any]) -> LogFields:
        return {}

    async def run(self, args: Mapping[str, Any], ctx: CallContext) -> ToolOutcome:
        self.calls.append((dict(args), ctx))
        if self.requires_confirmation and ctx.confirmed is not True:
            return ToolOutcome({"status": "error", "error_code": "CONFIRMATION_REQUIRED", "message": "ask"})
        return ToolOutcome(dict(self.answer), {"operation_id": self.name, "status": 200})
