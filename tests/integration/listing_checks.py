"""Filter-only listing and id-shaped queries: checks every backend runs (imported by module name).

A remote engine's module calls these with its own backend over the generated ticket corpus. They
check what the search tool promises (issue 38): an empty query with a filter lists the caller's
matching documents, newest first, with the engine's own total; an empty query without a filter
is a structured error with a hint; a query that is one of the caller's ids finds that document,
and another tenant's id finds nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from scopegate.backends.base import SearchBackend
from scopegate.context import CallContext
from scopegate.search.tools import SearchTool


async def search(backend: SearchBackend, args: dict[str, Any], tenant: str) -> dict[str, Any]:
    tool = SearchTool(backend.spec, backend)
    return (await tool.run(args, CallContext(state={"tenant_id": tenant}))).result


def _expected(corpus: Sequence[dict[str, Any]], tenant: str, **filters: str) -> list[dict[str, Any]]:
    rows = [r for r in corpus if r["tenant_id"] == tenant and all(r.get(k) == v for k, v in filters.items())]
    return sorted(rows, key=lambda r: (r["created_at"], r["ticket_id"]), reverse=True)


async def check_listing(backend: SearchBackend, corpus: Sequence[dict[str, Any]], tenant: str) -> None:
    expected = _expected(corpus, tenant, status="pending", product="identity")
    assert expected, "the corpus needs pending identity tickets"
    out = await search(backend, {"query": "", "status": "pending", "product": "identity"}, tenant)
    assert out["status"] == "ok", out
    assert out["total"] == len(expected)  # counted in the engine, inside the scope
    ids = [r["ticket_id"] for r in out["results"]]
    owner = {r["ticket_id"]: r for r in corpus}
    assert all(owner[i]["tenant_id"] == tenant and owner[i]["status"] == "pending" for i in ids)
    dates = [owner[i]["created_at"] for i in ids]
    assert dates == sorted(dates, reverse=True)  # newest first
    assert dates[0] == expected[0]["created_at"]
    assert out["order"] == "newest first"
    # Leaving query out with a filter lists too; page 2 continues the same order.
    second = await search(backend, {"status": "pending", "product": "identity", "page": 2}, tenant)
    if len(expected) > backend.spec.page_size:
        later = [owner[r["ticket_id"]]["created_at"] for r in second["results"]]
        assert later and max(later) <= dates[-1]


async def check_empty_query_without_filter(backend: SearchBackend, tenant: str) -> None:
    out = await search(backend, {"query": "  "}, tenant)
    assert out["status"] == "error" and out["error_code"] == "BAD_QUERY"
    assert "leave query empty and set" in out["hint"]


async def check_id_query(backend: SearchBackend, corpus: Sequence[dict[str, Any]], tenant: str) -> None:
    mine = next(r for r in corpus if r["tenant_id"] == tenant)
    theirs = next(r for r in corpus if r["tenant_id"] != tenant)
    found = await search(backend, {"query": mine["ticket_id"].lower()}, tenant)
    assert [r["ticket_id"] for r in found["results"]] == [mine["ticket_id"]]
    assert backend.spec.fetch_name in found["hint"]
    other = await search(backend, {"query": theirs["ticket_id"]}, tenant)
    assert other["total"] == 0 and other["results"] == []  # scope holds: another tenant's id finds nothing
    assert backend.spec.fetch_name in other["hint"] and "case included" in other["hint"]
