"""Zero-downtime reindex on the real cluster: an analyser change, verified, swapped under load, rolled back.

The live index (3 shards, 1 replica, routing by tenant, ``scopegate_en``) is
read by an agent through its filtered alias on the coordinating node. The new
version uses the ``standard`` analyser (no stemming), so many totals change:
every answer during the operation must be exactly the old index's answer or
exactly the new one's, and no call may fail.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from scopegate.backends.opensearch import OpenSearchBackend
from scopegate.cli import main as scopegate_main
from scopegate.config.reindex import reindex_verified, rollback
from scopegate.context import CallContext
from scopegate.demo.corpus import TENANTS
from scopegate.guard.calllog import CallLog, MemorySink
from scopegate.guard.guard import Guard
from scopegate.guard.replay import LoggedSearch, Thresholds, collect_searches
from scopegate.search.tools import SearchTool
from scopegate_lab.cluster import LocalCluster
from scopegate_lab.load import Call, LoadRunner

from .cluster_helpers import QUERIES, ingested, loaded_spec, search_args

pytestmark = pytest.mark.cluster

AGENT_FILTER = {"product": ["payments", "billing"]}
Answer = tuple[tuple[str, ...], int]


@pytest.fixture(scope="module")
async def live(cluster: LocalCluster, cluster_corpus: list[dict[str, Any]]) -> AsyncIterator[OpenSearchBackend]:
    spec = loaded_spec()  # the agent's searches run under load through the whole reindex
    async with ingested(cluster.data_urls, cluster_corpus, spec, shards=3, replicas=1, routing="tenant") as writer:
        yield writer


@pytest.fixture(scope="module")
async def agent(cluster: LocalCluster, live: OpenSearchBackend) -> AsyncIterator[OpenSearchBackend]:
    """The agent's backend: its own filtered alias, through the coordinating node only."""
    backend = OpenSearchBackend(
        live.spec, cluster.coordinating_urls, routing="tenant", agent="support", alias_filter=AGENT_FILTER
    )
    await backend.ensure_index()
    try:
        yield backend
    finally:
        await backend.close()


def new_layout(cluster: LocalCluster, live: OpenSearchBackend) -> OpenSearchBackend:
    return OpenSearchBackend(live.spec, cluster.data_urls, shards=3, replicas=1, routing="tenant", analysis="standard")


async def answers(tool: SearchTool) -> dict[tuple[str, str], Answer]:
    out: dict[tuple[str, str], Answer] = {}
    for tenant in TENANTS:
        for text, filters in QUERIES:
            result = (await tool.run(search_args(text, filters), CallContext(state={"tenant_id": tenant}))).result
            assert result["status"] == "ok" and not result.get("partial"), result
            out[(tenant, text)] = (tuple(r["ticket_id"] for r in result["results"]), result["total"])
    return out


@pytest.fixture(scope="module")
async def call_log(agent: OpenSearchBackend) -> list[LoggedSearch]:
    """The agent's traffic as the guard logs it: the searches the verification replays."""
    sink = MemorySink()
    log = CallLog(sink)
    guard = Guard(cap=None, cache=None, call_log=log)
    tool = SearchTool(agent.spec, agent)
    for tenant in TENANTS:
        for text, filters in QUERIES:
            ctx = CallContext(state={"tenant_id": tenant}, invocation_id=f"inv-{tenant}")
            assert (await guard.call(tool, search_args(text, filters), ctx)).result["status"] == "ok"
    assert log.flush(timeout_s=10)
    calls, skipped = collect_searches(sink.records())
    assert len(calls) == len(TENANTS) * len(QUERIES) and skipped == 0
    return calls


async def test_failed_verification_swaps_nothing(
    cluster: LocalCluster, live: OpenSearchBackend, agent: OpenSearchBackend, call_log: list[LoggedSearch]
) -> None:
    before = await agent.alias_state()
    backend = new_layout(cluster, live)
    try:
        report = await reindex_verified(backend, calls=call_log, thresholds=Thresholds(max_total_changed_share=0.0))
    finally:
        await backend.close()
    text = report.render()
    print("\n" + text)
    assert not report.passed() and not report.swapped and not report.kept_new
    assert report.count_differences == {}  # same documents; the analyser changed what matches
    assert report.replay is not None and report.replay.summary()["total_changed"] > 0
    assert "share of calls with a changed total" in text and "not swapped" in text
    assert await agent.alias_state() == before
    assert [n for _, n in await live.versions()] == before.indices()  # the failed version is gone


async def test_reindex_under_load_then_rollback(
    cluster: LocalCluster,
    live: OpenSearchBackend,
    agent: OpenSearchBackend,
    call_log: list[LoggedSearch],
    owner_of: dict[str, str],
) -> None:
    tool = SearchTool(agent.spec, agent)
    old = await answers(tool)
    calls = [Call("agent", tool, t, search_args(q, f)) for t in TENANTS for q, f in QUERIES]
    runner = LoadRunner(calls, "ticket_id", guard=Guard(cap=None, cache=None), concurrency=4, seed=3)
    backend = new_layout(cluster, live)
    runner.start()
    try:
        await asyncio.sleep(1.0)
        report = await reindex_verified(backend, calls=call_log, thresholds=Thresholds(max_jaccard_drop=None))
        swapped_at = asyncio.get_running_loop().time()
        await asyncio.sleep(1.0)
    finally:
        records = await runner.stop()
        await backend.close()
    print("\n" + report.render(show=10))
    assert report.passed() and report.swapped and report.new_health == "green"
    state = await agent.alias_state()
    assert {index for index, _ in state.aliases.values()} == {report.new_index}
    assert state.aliases[agent.search_target][1]["filter"] == {
        "bool": {"filter": [{"terms": {"product": ["billing", "payments"]}}]}
    }  # the agent's filter moved with its alias
    new = await answers(tool)
    assert new != old  # the analyser change is visible...
    # ... and during the whole operation every answer was one index's, complete, never a mix or a failure.
    assert len(records) > 50
    for r in records:
        assert r.status == "ok" and not r.partial, r
        assert all(owner_of[i] == r.tenant for i in r.ids)
        answer = (r.ids, r.total)
        key = (r.tenant, str(r.args["query"]))
        assert answer in (old[key], new[key]), (key, answer, old[key], new[key])
    late = [r for r in records if r.started > swapped_at]
    assert late and all((r.ids, r.total) == new[(r.tenant, str(r.args["query"]))] for r in late)

    back_from, back_to = await rollback(live)
    assert (back_from, back_to) == (report.new_index, report.old_index)
    assert await answers(tool) == old


async def test_reindex_command(
    cluster: LocalCluster, live: OpenSearchBackend, call_log: list[LoggedSearch], tmp_path: Path
) -> None:
    """``scopegate reindex``: a dry run prints the diff and swaps nothing; a real run swaps; --rollback undoes."""
    log = tmp_path / "calls.jsonl"
    sink_lines = [
        {
            "event": "call",
            "outcome": "ok",
            "tool": c.tool,
            "tenant_id": c.scope.tenant_id,
            "query": c.query,
            "filters": dict(c.filters),
            "page": c.page,
            "ids": list(c.ids),
            "total": c.total,
            "total_relation": c.total_relation,
        }
        for c in call_log
    ]
    log.write_text("".join(json.dumps(line) + "\n" for line in sink_lines))
    base = ["reindex", "--url", ",".join(cluster.data_urls), "--index", live.spec.index, "--shards", "3"]
    base += ["--replicas", "1", "--routing", "tenant", "--analysis", "standard", "--log", str(log)]
    before = await live.alias_state()
    code = await asyncio.to_thread(scopegate_main, [*base, "--dry-run", "--max-jaccard-drop", "none"])
    assert code == 0
    assert await live.alias_state() == before
    code = await asyncio.to_thread(scopegate_main, [*base, "--max-jaccard-drop", "none"])
    assert code == 0
    moved = await live.alias_state()
    assert moved.indices() != before.indices()
    code = await asyncio.to_thread(
        scopegate_main, ["reindex", "--url", cluster.data_urls[0], "--index", live.spec.index, "--rollback"]
    )
    assert code == 0
    assert (await live.alias_state()).indices() == before.indices()
    # A reindex against an index that does not exist is a clear error (exit 3, not found), not a traceback.
    code = await asyncio.to_thread(scopegate_main, ["reindex", "--url", cluster.data_urls[0], "--index", "nope-x"])
    assert code == 3
    leftovers = httpx.get(f"{cluster.data_urls[0]}/_cat/indices/{live.spec.index}-v*", params={"format": "json"})
    assert len(leftovers.json()) >= 2
