"""Issue 38 on the embedded engine: filter-only listing, id-shaped queries, the fetch tool's NOT_FOUND."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from listing_checks import check_empty_query_without_filter, check_id_query, check_listing

from scopegate.backends.embedded import EmbeddedBackend
from scopegate.context import CallContext
from scopegate.demo.corpus import generate_tickets, ticket_spec
from scopegate.search.tools import FetchTool


@pytest.fixture(scope="module")
def corpus() -> list[dict[str, Any]]:
    return list(generate_tickets(per_tenant=200))


@pytest.fixture
async def backend(tmp_path: Path, corpus: list[dict[str, Any]]) -> AsyncIterator[EmbeddedBackend]:
    backend = EmbeddedBackend(ticket_spec(), tmp_path / "tickets")
    report = await backend.ingest(iter(corpus), batch_size=1000)
    assert report.failed == 0
    try:
        yield backend
    finally:
        await backend.close()


async def test_an_empty_query_with_a_filter_lists_newest_first(
    backend: EmbeddedBackend, corpus: list[dict[str, Any]]
) -> None:
    await check_listing(backend, corpus, "acme")


async def test_an_empty_query_without_a_filter_is_an_error_with_a_hint(backend: EmbeddedBackend) -> None:
    await check_empty_query_without_filter(backend, "acme")


async def test_an_id_shaped_query_finds_the_document_or_points_to_the_fetch_tool(
    backend: EmbeddedBackend, corpus: list[dict[str, Any]]
) -> None:
    await check_id_query(backend, corpus, "acme")


async def test_fetch_not_found_says_what_is_wrong_with_the_ids_form(
    backend: EmbeddedBackend, corpus: list[dict[str, Any]]
) -> None:
    tool = FetchTool(backend.spec, backend)
    mine = next(r["ticket_id"] for r in corpus if r["tenant_id"] == "acme")
    theirs = next(r["ticket_id"] for r in corpus if r["tenant_id"] != "acme")
    ctx = CallContext(state={"tenant_id": "acme"})
    lower = (await tool.run({"id": mine.lower()}, ctx)).result
    assert lower["error_code"] == "NOT_FOUND" and "case included" in lower["message"]
    assert lower["did_you_mean"] == mine
    # Another tenant's id, in any case: the same NOT_FOUND as an absent id, no suggestion.
    for other in (theirs, theirs.lower()):
        out = (await tool.run({"id": other}, ctx)).result
        assert out["error_code"] == "NOT_FOUND" and "did_you_mean" not in out
        assert "exactly as a search result showed it" in out["hint"]


async def test_results_mark_stored_text_by_field_not_by_a_sentence(backend: EmbeddedBackend) -> None:
    out = (
        await FetchTool(backend.spec, backend).run({"id": "ACM-00001"}, CallContext(state={"tenant_id": "acme"}))
    ).result
    assert "note" not in out and "body" in out["untrusted_fields"]


async def test_the_declaration_offers_the_listing_and_a_filtered_miss_points_to_it(backend: EmbeddedBackend) -> None:
    from listing_checks import search

    query = backend.spec.json_schema()["properties"]["query"]
    assert query["minLength"] == 0 and "Empty with a filter set" in query["description"]
    out = await search(backend, {"query": "zzqx", "status": "pending"}, "acme")
    assert out["total"] == 0 and "empty query with the same filters" in out["hint"]
