"""Faults against real nodes: node stopped or frozen mid-run, slow queries, failed shards.

The node-level faults use a second, private node (this module stops and
freezes it), so the shared session node is never disturbed.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from opensearch_helpers import query, unique_spec

from scopegate.backends.opensearch import OpenSearchBackend
from scopegate.context import CallContext
from scopegate.demo.corpus import generate_tickets
from scopegate.engines.opensearch_node import NodeConfig, OpenSearchNode
from scopegate.errors import SEARCH_UNAVAILABLE, BackendError, EngineNodeError
from scopegate.search.spec import SearchSpec
from scopegate.search.tools import FetchTool, SearchTool

# A budget well under the 2.5 s default keeps the module quick; the behaviour is the same.
CLIENT_TIMEOUT_S = 1.0
# Slack for Python and the event loop on a loaded 2-core machine: the budget is a bound, not a benchmark.
SLACK_S = 1.5
STATE = CallContext(state={"tenant_id": "acme"})

pytestmark = pytest.mark.opensearch


@pytest.fixture(scope="module")
def fault_node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[OpenSearchNode, str]]:
    state_dir = Path(tmp_path_factory.mktemp("fault-node"))
    node = OpenSearchNode(NodeConfig(state_dir=state_dir, heap="512m"))
    try:
        url = node.start(clean=True, timeout_s=180)
    except EngineNodeError as exc:
        if os.environ.get("CI"):
            pytest.fail(f"second OpenSearch node for fault tests did not start: {exc}", pytrace=False)
        pytest.skip(f"second OpenSearch node for fault tests did not start: {exc}")
    try:
        yield node, url
    finally:
        pid = node.pid()
        if pid is not None:
            os.kill(pid, signal.SIGCONT)  # never leave a frozen JVM behind
        node.stop()


@pytest.fixture(scope="module")
def fault_spec() -> SearchSpec:
    return unique_spec(engine_timeout_s=0.5, client_timeout_s=CLIENT_TIMEOUT_S)


@pytest.fixture(scope="module")
async def fault_backend(
    fault_node: tuple[OpenSearchNode, str], fault_spec: SearchSpec
) -> AsyncIterator[OpenSearchBackend]:
    _node, url = fault_node
    backend = OpenSearchBackend(fault_spec, url)
    report = await backend.ingest(generate_tickets(per_tenant=50), batch_size=200)
    assert report.failed == 0
    try:
        yield backend
    finally:
        await backend.close()


async def timed(coro: Any) -> tuple[Any, float]:
    """The tool's result (what the model sees) and how long the call took."""
    started = time.monotonic()
    outcome = await coro
    return outcome.result, time.monotonic() - started


def assert_unavailable(out: dict[str, Any], elapsed: float) -> None:
    assert out["status"] == "error", out
    assert out["error_code"] == SEARCH_UNAVAILABLE
    assert out["retryable"] is True
    assert "Traceback" not in out["message"] and "127.0.0.1" not in out["message"]
    assert elapsed < CLIENT_TIMEOUT_S + SLACK_S


async def wait_ok(tool: SearchTool, args: dict[str, Any], attempts: int = 40) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for _ in range(attempts):
        out = (await tool.run(args, STATE)).result
        if out["status"] == "ok":
            return out
        await asyncio.sleep(0.25)
    return out


async def test_node_stopped_mid_run_then_recovers(
    fault_node: tuple[OpenSearchNode, str], fault_backend: OpenSearchBackend, fault_spec: SearchSpec
) -> None:
    node, url = fault_node
    search = SearchTool(fault_spec, fault_backend)
    fetch = FetchTool(fault_spec, fault_backend)
    args = {"query": "refund failed", "product": "payments"}
    before = (await search.run(args, STATE)).result
    assert before["status"] == "ok" and before["total"] > 0

    port = int(url.rsplit(":", 1)[1])
    assert node.stop()
    try:
        for _ in range(3):  # every call fails fast and structured, none raises
            out, elapsed = await timed(search.run(args, STATE))
            assert_unavailable(out, elapsed)
        out, elapsed = await timed(fetch.run({"id": "ACM-00001"}, STATE))
        assert_unavailable(out, elapsed)
        with pytest.raises(BackendError) as err:
            await fault_backend.search(query(fault_spec, "refund", "acme"))
        assert err.value.retryable
    finally:
        assert node.start(http_port=port, timeout_s=180) == url

    # Same backend object, no reconnect call: the next request simply works.
    after = await wait_ok(search, args)
    assert after["status"] == "ok"
    assert after["total"] == before["total"]
    assert [r["ticket_id"] for r in after["results"]] == [r["ticket_id"] for r in before["results"]]


async def test_frozen_node_hits_the_client_timeout(
    fault_node: tuple[OpenSearchNode, str], fault_backend: OpenSearchBackend, fault_spec: SearchSpec
) -> None:
    """SIGSTOP: the port accepts connections but nothing answers; only the client timeout ends the call."""
    node, _url = fault_node
    search = SearchTool(fault_spec, fault_backend)
    args = {"query": "payout delayed"}
    assert ((await search.run(args, STATE)).result)["status"] == "ok"
    pid = node.pid()
    assert pid is not None
    os.kill(pid, signal.SIGSTOP)
    try:
        out, elapsed = await timed(search.run(args, STATE))
        assert_unavailable(out, elapsed)
        with pytest.raises(BackendError) as err:
            await fault_backend.search(query(fault_spec, "refund", "acme"))
        assert err.value.retryable
    finally:
        os.kill(pid, signal.SIGCONT)
    assert (await wait_ok(search, args))["status"] == "ok"


async def test_slow_query_past_engine_timeout_is_partial_or_error(fault_node: tuple[OpenSearchNode, str]) -> None:
    """A 1 ms engine budget on a query matching tens of thousands of documents.

    OpenSearch either stops collecting and answers ``timed_out: true`` with what
    it found (flagged partial) or, when the budget is gone before the first
    result, fails the search (retryable BackendError). Never a silent complete answer.
    """
    _node, url = fault_node
    spec = unique_spec(engine_timeout_s=0.001, client_timeout_s=2.5)
    backend = OpenSearchBackend(spec, url)
    try:
        await backend.ingest(generate_tickets(per_tenant=30_000, tenants=("acme",)), batch_size=5_000)
        text = "refund payment customer failed invoice payout verification charged order"
        outcomes = []
        for _ in range(5):
            try:
                result = await backend.search(query(spec, text, "acme", track_total_up_to=1_000_000))
            except BackendError as exc:
                assert exc.retryable
                outcomes.append("error")
            else:
                assert result.partial, (result.total, result.total_relation)
                assert result.partial_reason and "timeout" in result.partial_reason
                assert result.total < 30_000
                outcomes.append("partial")
        # The same budget with "error" configured: a partial answer is never returned.
        strict = OpenSearchBackend(spec, url, on_partial="error")
        try:
            for _ in range(3):
                with pytest.raises(BackendError):
                    await strict.search(query(spec, text, "acme", track_total_up_to=1_000_000))
        finally:
            await strict.close()
        # A generous budget on the same data: complete.
        full = await backend.search(query(spec, text, "acme", engine_timeout_s=2.0, track_total_up_to=1_000_000))
        assert not full.partial and full.total > 20_000
        print(f"\n1 ms engine timeout outcomes: {outcomes}")
    finally:
        await backend.drop()
        await backend.close()


async def test_failed_shard_is_flagged_partial(opensearch_url: str) -> None:
    """A second index behind the alias whose id field cannot be sorted: its shard fails, the other answers."""
    spec = unique_spec()
    backend = OpenSearchBackend(spec, opensearch_url)
    broken = f"{spec.index}-v99"
    docs = list(generate_tickets(per_tenant=20, tenants=("acme",)))
    try:
        await backend.ingest(docs)
        async with httpx.AsyncClient(timeout=30) as client:
            resp = await client.put(
                f"{opensearch_url}/{broken}",
                json={
                    "settings": {"index": {"number_of_shards": 1}},
                    "mappings": {
                        "properties": {
                            "ticket_id": {"type": "text"},
                            "tenant_id": {"type": "keyword"},
                            "subject": {"type": "text"},
                            "body": {"type": "text"},
                        }
                    },
                },
            )
            assert resp.status_code == 200, resp.text
            await client.post(
                f"{opensearch_url}/{broken}/_doc/x?refresh=true",
                json={"ticket_id": "x", "tenant_id": "acme", "subject": "refund", "body": "refund"},
            )
            resp = await client.post(
                f"{opensearch_url}/_aliases",
                json={"actions": [{"add": {"index": broken, "alias": f"{spec.index}-read"}}]},
            )
            assert resp.status_code == 200, resp.text
        result = await backend.search(query(spec, "refund", "acme"))
        assert result.partial
        assert result.partial_reason == "1 of 2 shards failed"
        assert result.hits and all(h.doc_id.startswith("ACM-") for h in result.hits)
        out = (await SearchTool(spec, backend).run({"query": "refund"}, STATE)).result
        assert out["status"] == "ok" and out["partial"] is True
        strict = OpenSearchBackend(spec, opensearch_url, on_partial="error")
        try:
            with pytest.raises(BackendError, match="partial"):
                await strict.search(query(spec, "refund", "acme"))
        finally:
            await strict.close()
    finally:
        await backend.drop()
        await backend.close()


async def test_missing_index_through_the_tool(opensearch_url: str) -> None:
    spec = unique_spec()
    backend = OpenSearchBackend(spec, opensearch_url)
    try:
        out = (await SearchTool(spec, backend).run({"query": "refund"}, STATE)).result
        assert out["status"] == "error" and out["error_code"] == SEARCH_UNAVAILABLE
        assert out["retryable"] is False
        assert out["missing"] == f"{spec.index}-read"
        fetched = (await FetchTool(spec, backend).run({"id": "ACM-00001"}, STATE)).result
        assert fetched["error_code"] == SEARCH_UNAVAILABLE and fetched["missing"] == f"{spec.index}-read"
    finally:
        await backend.close()
