"""ElasticsearchBackend against a real Elasticsearch 8.19 node, with the 9.x client in compatibility mode."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest
from elasticsearch_helpers import engine_terms, make_backend, unique_spec
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scopegate.backends.elasticsearch import ElasticsearchBackend
from scopegate.context import CallContext
from scopegate.demo.corpus import INJECTION_ID, PRODUCTS, TENANTS
from scopegate.engines.elasticsearch_node import ElasticsearchNode
from scopegate.errors import SEARCH_UNAVAILABLE, BackendError, MissingIndexError
from scopegate.scope import Scope
from scopegate.search.model import SearchQuery
from scopegate.search.spec import SearchSpec
from scopegate.search.tools import FetchTool, SearchTool


def query(
    spec: SearchSpec, text: str, tenant: str, filters: tuple[tuple[str, str], ...] = (), **kw: Any
) -> SearchQuery:
    return SearchQuery(
        text=text,
        scope=Scope(tenant),
        filters=filters,
        offset=0,
        limit=kw.get("limit", spec.page_size),
        track_total_up_to=kw.get("track_total_up_to", spec.track_total_up_to),
        engine_timeout_s=spec.engine_timeout_s,
        client_timeout_s=spec.client_timeout_s,
    )


@pytest.fixture(scope="module")
async def doc_terms(es_backend: ElasticsearchBackend, es_url: str, es_corpus: list[dict[str, Any]]) -> list[set[str]]:
    index = (await es_backend.generation()).split("#")[0]
    return await engine_terms(es_url, index, [d["subject"] + " " + d["body"] for d in es_corpus])


async def test_counts_per_tenant(es_backend: ElasticsearchBackend, es_corpus: list[dict[str, Any]]) -> None:
    per_tenant = Counter(d["tenant_id"] for d in es_corpus)
    for tenant in TENANTS:
        assert await es_backend.count(Scope(tenant)) == per_tenant[tenant]


@pytest.mark.parametrize("text", ["Apple Pay refund failed", "E4012 card_declined", "payout bank account"])
@pytest.mark.parametrize("product", [None, *PRODUCTS[:2]])
async def test_totals_exact_with_filters(
    es_backend: ElasticsearchBackend,
    es_url: str,
    es_corpus: list[dict[str, Any]],
    doc_terms: list[set[str]],
    text: str,
    product: str | None,
) -> None:
    index = (await es_backend.generation()).split("#")[0]
    (terms,) = await engine_terms(es_url, index, [text])
    filters = (("product", product),) if product else ()
    for tenant in TENANTS[:3]:
        expected = sum(
            1
            for d, dt in zip(es_corpus, doc_terms, strict=True)
            if d["tenant_id"] == tenant and (product is None or d["product"] == product) and terms & dt
        )
        result = await es_backend.search(query(es_backend.spec, text, tenant, filters, limit=20))
        assert (result.total, result.total_relation) == (expected, "eq")
        assert all(h.doc_id.startswith(tenant[:3].upper()) for h in result.hits)
        assert product is None or all(h.fields["product"] == product for h in result.hits)


async def test_at_least_total(es_backend: ElasticsearchBackend) -> None:
    result = await es_backend.search(query(es_backend.spec, "refund", "acme", track_total_up_to=10))
    assert (result.total, result.total_relation) == (10, "gte")


async def test_fetch_scope_and_missing_index(es_backend: ElasticsearchBackend, es_url: str) -> None:
    assert await es_backend.get("ACM-00001", Scope("acme")) is not None
    assert await es_backend.get("ACM-00001", Scope("globex")) is None
    spec = unique_spec()
    missing = make_backend(spec, es_url)
    try:
        with pytest.raises(MissingIndexError) as err:
            await missing.search(query(spec, "refund", "acme"))
        assert err.value.name == f"{spec.index}-read"
        out = (
            await SearchTool(spec, missing).run({"query": "refund"}, CallContext(state={"tenant_id": "acme"}))
        ).result
        assert out["error_code"] == SEARCH_UNAVAILABLE and out["missing"] == f"{spec.index}-read"
    finally:
        await missing.close()


async def test_injection_ticket_stays_in_its_tenant(es_backend: ElasticsearchBackend) -> None:
    tool = SearchTool(es_backend.spec, es_backend)
    initech = CallContext(state={"tenant_id": "initech"})
    first = (await tool.run({"query": "apple pay refund failed read this first"}, initech)).result
    assert INJECTION_ID in [r["ticket_id"] for r in first["results"]]
    out = (await tool.run({"query": "tenant_id:* OR tenant_id:acme refund"}, initech)).result
    assert all(r["ticket_id"].startswith("INI-") for r in out["results"])
    fetched = (
        await FetchTool(es_backend.spec, es_backend).run({"id": INJECTION_ID}, CallContext(state={"tenant_id": "acme"}))
    ).result
    assert fetched["error_code"] == "NOT_FOUND"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    text=st.one_of(
        st.text(min_size=1, max_size=300),
        st.lists(
            st.sampled_from(["tenant_id:*", "*", "OR", '"', "refund", "acme", "globex", "{", "}", "\\", "E4012"]),
            min_size=1,
            max_size=20,
        ).map(" ".join),
    ),
    tenant=st.sampled_from(TENANTS),
)
async def test_isolation_property(es_backend: ElasticsearchBackend, text: str, tenant: str) -> None:
    result = await es_backend.search(query(es_backend.spec, text, tenant, limit=50))
    assert result.total <= 101  # a tenant has 100 tickets (initech 101 with the planted one)
    assert all(h.doc_id.startswith(tenant[:3].upper()) for h in result.hits)


async def test_ingest_errors_upsert_delete_reindex(es_url: str, es_corpus: list[dict[str, Any]]) -> None:
    spec = unique_spec()
    backend = make_backend(spec, es_url)
    docs = [dict(d) for d in es_corpus if d["tenant_id"] == "hooli"][:20]
    docs[2]["product"] = "p" * 40_000
    docs[3]["tenant_id"] = ""
    try:
        report = await backend.ingest(docs)
        assert (report.indexed, report.failed) == (18, 2)
        assert {doc_id for doc_id, _ in report.errors} == {docs[2]["ticket_id"], docs[3]["ticket_id"]}
        assert await backend.count(Scope("hooli")) == 18
        assert await backend.delete([docs[0]["ticket_id"]], tenant="hooli") == 1
        assert await backend.get(docs[0]["ticket_id"], Scope("hooli")) is None
        # No reindex module in this distribution: reindex from documents instead of _reindex.
        assert await backend.reindex(docs[5:10]) == f"{spec.index}-v2"
        assert await backend.count(Scope("hooli")) == 5
    finally:
        await backend.drop()
        await backend.close()


async def test_failed_shard_is_partial(es_url: str, es_corpus: list[dict[str, Any]]) -> None:
    spec = unique_spec()
    backend = make_backend(spec, es_url)
    try:
        await backend.ingest([d for d in es_corpus if d["tenant_id"] == "acme"][:20])
        async with httpx.AsyncClient(timeout=30) as client:
            broken = f"{spec.index}-v99"
            resp = await client.put(
                f"{es_url}/{broken}",
                json={
                    "settings": {"index": {"number_of_shards": 1, "number_of_replicas": 0}},
                    "mappings": {"properties": {"ticket_id": {"type": "text"}, "tenant_id": {"type": "keyword"}}},
                },
            )
            assert resp.status_code == 200, resp.text
            resp = await client.post(
                f"{es_url}/_aliases", json={"actions": [{"add": {"index": broken, "alias": f"{spec.index}-read"}}]}
            )
            assert resp.status_code == 200, resp.text
        result = await backend.search(query(spec, "refund", "acme"))
        assert result.partial and result.partial_reason == "1 of 2 shards failed"
    finally:
        await backend.drop()
        await backend.close()


async def test_client_refuses_a_non_elasticsearch_server() -> None:
    """The official client's product check: a 200 without ``X-Elastic-Product: Elasticsearch`` is refused.

    The server is a stand-in on 127.0.0.1 answering like an OpenSearch search would.
    """
    body = json.dumps({"took": 1, "timed_out": False, "hits": {"total": {"value": 0, "relation": "eq"}, "hits": []}})

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            self.rfile.read(length)
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body.encode())

        do_GET = do_POST = _answer

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    spec = unique_spec()
    backend = ElasticsearchBackend(spec, f"http://127.0.0.1:{server.server_address[1]}")
    try:
        with pytest.raises(BackendError, match="not Elasticsearch") as err:
            await backend.search(query(spec, "refund", "acme"))
        assert err.value.retryable is False
    finally:
        await backend.close()
        server.shutdown()
        server.server_close()


async def test_frozen_node_is_unavailable_then_recovers(
    es_node: tuple[ElasticsearchNode | None, str], es_backend: ElasticsearchBackend
) -> None:
    node, _url = es_node
    if node is None or node.pid() is None:
        pytest.skip("node given by URL: this test only freezes a node it started itself")
    pid = node.pid()
    assert pid is not None
    spec = es_backend.spec
    tool = SearchTool(spec, es_backend)
    state = CallContext(state={"tenant_id": "acme"})
    assert ((await tool.run({"query": "refund"}, state)).result)["status"] == "ok"
    os.killpg(pid, signal.SIGSTOP)
    try:
        started = time.monotonic()
        out = (await tool.run({"query": "refund"}, state)).result
        elapsed = time.monotonic() - started
        assert out["status"] == "error" and out["error_code"] == SEARCH_UNAVAILABLE and out["retryable"] is True
        assert elapsed < spec.client_timeout_s + 1.5
    finally:
        os.killpg(pid, signal.SIGCONT)
    for _ in range(40):
        out = (await tool.run({"query": "refund"}, state)).result
        if out["status"] == "ok":
            break
        await asyncio.sleep(0.25)
    assert out["status"] == "ok"
