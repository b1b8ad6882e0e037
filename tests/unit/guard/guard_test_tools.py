"""Small, deterministic ScopedTool implementations for guard unit tests.

They implement the protocol for real (scope from session state, structured
errors, never raise unless told to), over an in-memory list of documents, so
the guard can be tested without an engine.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from scopegate.context import CallContext
from scopegate.errors import BAD_QUERY, NO_SCOPE, tool_error
from scopegate.scope import Scope, ScopeKeys, ScopeMissing, read_scope
from scopegate.search.normalise import search_cache_args
from scopegate.tools import ToolOutcome

KEYS = ScopeKeys(tenant="tenant_id", groups="group_ids", user="user_id")


class ListSearchTool:
    """Keyword search over ``docs`` ({"id","tenant","text"}), scoped by tenant."""

    family = "search"
    read_only = True
    requires_confirmation = False
    scope_keys = KEYS

    def __init__(self, docs: list[dict[str, str]], *, name: str = "search_docs", page_size: int = 5) -> None:
        self.name = name
        self.description = "Search documents by keywords."
        self.docs = docs
        self.page_size = page_size
        self.runs = 0
        self._generation = 0

    def bump(self) -> None:
        self._generation += 1

    async def generation(self) -> str:
        return f"g{self._generation}"

    def cache_args(self, args: Mapping[str, Any]) -> Any:
        return search_cache_args(args)

    def describe(self, args: Mapping[str, Any]) -> dict[str, Any]:
        return {
            "query": " ".join(str(args.get("query", "")).lower().split()),
            "filters": {},
            "page": args.get("page", 1),
        }

    def parameters_schema(self) -> dict[str, Any]:
        return {"type": "object", "properties": {"query": {"type": "string"}, "page": {"type": "integer"}}}

    def scope_of(self, ctx: CallContext) -> Scope | None:
        try:
            return read_scope(ctx.state, KEYS)
        except ScopeMissing:
            return None

    def log_fields(self, args: Mapping[str, Any], result: Mapping[str, Any]) -> dict[str, Any]:
        fields = self.describe(args)
        if result.get("status") == "ok":
            fields.update(total=result["total"], total_relation="eq", ids=[r["id"] for r in result["results"]])
        else:
            fields["error_code"] = result.get("error_code")
        return fields

    async def run(self, args: Mapping[str, Any], ctx: CallContext) -> ToolOutcome:
        result = await self.answer(args, ctx)
        return ToolOutcome(result, self.log_fields(args, result))

    async def answer(self, args: Mapping[str, Any], ctx: CallContext) -> dict[str, Any]:
        self.runs += 1
        scope = self.scope_of(ctx)
        if scope is None:
            return tool_error(NO_SCOPE, "no tenant in this session")
        query = args.get("query")
        if not isinstance(query, str) or not query.strip():
            return tool_error(BAD_QUERY, "query is required")
        words = query.lower().split()
        page = int(args.get("page", 1))
        hits = [d for d in self.docs if d["tenant"] == scope.tenant_id and any(w in d["text"].lower() for w in words)]
        chunk = hits[(page - 1) * self.page_size : page * self.page_size]
        return {
            "status": "ok",
            "total": len(hits),
            "total_relation": "eq",
            "results": [{"id": d["id"], "text": d["text"]} for d in chunk],
        }


class RaisingTool(ListSearchTool):
    """Breaks the never-raise contract."""

    async def answer(self, args: Mapping[str, Any], ctx: CallContext) -> dict[str, Any]:
        self.runs += 1
        raise RuntimeError("secret-token-123 leaked in a stack trace")


class SlowTool(ListSearchTool):
    """Never answers within the guard's timeout."""

    async def answer(self, args: Mapping[str, Any], ctx: CallContext) -> dict[str, Any]:
        self.runs += 1
        await asyncio.sleep(30)
        return {"status": "ok", "total": 0, "total_relation": "eq", "results": []}


class NotADictTool(ListSearchTool):
    async def run(self, args: Mapping[str, Any], ctx: CallContext) -> ToolOutcome:
        self.runs += 1
        return ToolOutcome(["not", "a", "dict"])  # type: ignore[arg-type]


class WriteTool(ListSearchTool):
    """A state-changing API tool: never cached."""

    family = "openapi"
    read_only = False

    def __init__(self, docs: list[dict[str, str]]) -> None:
        super().__init__(docs, name="update_ticket")

    def describe(self, args: Mapping[str, Any]) -> dict[str, Any]:
        return {"operation_id": "updateTicket"}

    def log_fields(self, args: Mapping[str, Any], result: Mapping[str, Any]) -> dict[str, Any]:
        return {"operation_id": "updateTicket", "http_status": 200 if result.get("status") == "ok" else 400}


def docs() -> list[dict[str, str]]:
    out = []
    for tenant in ("acme", "globex"):
        for i in range(12):
            out.append({"id": f"{tenant}-{i}", "tenant": tenant, "text": f"refund failed card {i} {tenant}"})
        out.append({"id": f"{tenant}-p", "tenant": tenant, "text": "payout delayed"})
    return out


def ctx(tenant: str | None = "acme", *, invocation: str | None = "inv-1", **state: Any) -> CallContext:
    st: dict[str, Any] = dict(state)
    if tenant is not None:
        st["tenant_id"] = tenant
    return CallContext(state=st, invocation_id=invocation, session_id="sess-1")
