"""Snippet parity: for the same hits, OpenSearch and the embedded engine give the same snippets.

Realistic tickets (``scopegate_lab.workload``: real paragraph blocks, stack
traces, quoted email threads, bodies up to 50 KB) go into both engines; the
workload's held-out queries run through both tools. OpenSearch returns whole
bodies in ``_source`` (chosen by measurement over highlight fragments and
script substrings: bench/results/shaping.md), so the one shaper sees the same
text whichever engine found the hit; this test holds that to equality, for
search results and for fetched documents.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from scopegate.backends.embedded import EmbeddedBackend
from scopegate.backends.opensearch import OpenSearchBackend
from scopegate.context import CallContext
from scopegate.errors import ConfigError
from scopegate.search.shaper import shape_hits
from scopegate.search.tools import FetchTool, SearchTool
from scopegate_lab.workload import SourceProfile, TicketFactory, WorkloadQuery, make_queries, workload_spec

pytestmark = pytest.mark.opensearch
TICKETS = 1_500


@pytest.fixture(scope="module")
def workload() -> tuple[list[dict[str, Any]], list[WorkloadQuery]]:
    try:
        profile = SourceProfile.load()
    except ConfigError as exc:
        pytest.skip(f"shared data not available: {exc}")
    tickets = list(TicketFactory(profile).tickets(0, TICKETS))
    present = {t["tenant_id"] for t in tickets}
    queries = [q for q in make_queries(profile, 400) if q.tenant in present and q.page == 1][:120]
    return tickets, queries


@pytest.fixture(scope="module")
async def engines(
    opensearch_url: str, workload: tuple[list[dict[str, Any]], list[WorkloadQuery]], tmp_path_factory: Any
) -> AsyncIterator[tuple[OpenSearchBackend, EmbeddedBackend]]:
    tickets, _ = workload
    spec = dataclasses.replace(workload_spec(), index=f"it-snip-{uuid.uuid4().hex[:10]}")
    remote = OpenSearchBackend(spec, opensearch_url)
    report = await remote.ingest(tickets, batch_size=500)
    assert report.failed == 0 and report.indexed == TICKETS, report.errors[:3]
    local = EmbeddedBackend(spec, Path(tmp_path_factory.mktemp("snippets")) / "index")
    assert local.ingest_sync(tickets, batch_size=1_000).indexed == TICKETS
    try:
        yield remote, local
    finally:
        await remote.drop()
        await remote.close()
        await local.close()


async def test_same_hits_get_the_same_snippets(
    engines: tuple[OpenSearchBackend, EmbeddedBackend], workload: tuple[list[dict[str, Any]], list[WorkloadQuery]]
) -> None:
    remote, local = engines
    spec = local.spec
    _, queries = workload
    tools = SearchTool(spec, remote), SearchTool(spec, local)
    compared = same_pages = long_bodies = 0
    for q in queries:
        ctx = CallContext(state={"tenant_id": q.tenant})
        query = tools[1].build_query(*_request(tools[1], q))
        # Totals may differ by a word the two analysers stem apart on real text: not this test's subject.
        raw_remote, raw_local = await remote.search(query), await local.search(query)
        local_hits = {h.doc_id: h for h in raw_local.hits}
        for hit in raw_remote.hits:
            twin = local_hits.get(hit.doc_id)
            if twin is None:
                continue
            # One hit on its own: the text each engine returned makes the same item.
            assert shape_hits(spec, [hit], raw_remote.terms, remote.analyze) == shape_hits(
                spec, [twin], raw_local.terms, local.analyze
            ), (q, hit.doc_id)
            compared += 1
            long_bodies += len(str(twin.fields.get("body", ""))) > 10_000
        results = [(await tool.run(q.arguments(), ctx)).result for tool in tools]
        assert results[0]["status"] == results[1]["status"] == "ok"
        ids = [sorted(r[spec.id_field] for r in result["results"]) for result in results]
        if ids[0] == ids[1] and ids[0]:
            # The same page: the same shaped results, whichever engine ranked them.
            by_id = [{r[spec.id_field]: r for r in result["results"]} for result in results]
            assert by_id[0] == by_id[1], q
            assert results[0]["truncated"] == results[1]["truncated"]
            same_pages += 1
    print(f"compared {compared} hits, {same_pages} identical pages, {long_bodies} bodies over 10 KB")
    assert compared >= 150 and same_pages >= 20 and long_bodies >= 5, (compared, same_pages, long_bodies)


async def test_fetched_documents_are_the_same(
    engines: tuple[OpenSearchBackend, EmbeddedBackend], workload: tuple[list[dict[str, Any]], list[WorkloadQuery]]
) -> None:
    remote, local = engines
    tickets, _ = workload
    longest = sorted(tickets, key=lambda t: len(t["body"]), reverse=True)[:10] + tickets[:10]
    for ticket in longest:
        ctx = CallContext(state={"tenant_id": ticket["tenant_id"]})
        args = {"id": ticket["ticket_id"]}
        remote_doc = (await FetchTool(local.spec, remote).run(args, ctx)).result
        local_doc = (await FetchTool(local.spec, local).run(args, ctx)).result
        assert remote_doc == local_doc and remote_doc["status"] == "ok"
    assert max(len(t["body"]) for t in longest) > local.spec.fetch_body_chars  # the bound was exercised


def _request(tool: SearchTool, q: WorkloadQuery) -> tuple[Any, Any]:
    from scopegate.scope import Scope
    from scopegate.search.model import SearchRequest
    from scopegate.search.validate import validate_search_args

    request = validate_search_args(tool.spec, q.arguments())
    assert isinstance(request, SearchRequest)
    return request, Scope(q.tenant)
