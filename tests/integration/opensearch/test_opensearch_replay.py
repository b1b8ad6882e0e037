"""Replay and diff against the real OpenSearch node: an unchanged mapping passes, a boost change is caught."""

from __future__ import annotations

import dataclasses
from typing import Any

from opensearch_helpers import unique_spec

from scopegate.backends.opensearch import OpenSearchBackend
from scopegate.context import CallContext
from scopegate.guard.calllog import CallLog, MemorySink
from scopegate.guard.guard import Guard
from scopegate.guard.replay import collect_searches, replay
from scopegate.search.spec import SearchSpec, TextField
from scopegate.search.tools import SearchTool

WORKLOAD = [
    ("apple pay refund failed", "payments"),
    ("E4012", None),
    ("payout delayed bank", "payouts"),
    ("invoice total wrong", None),
    ("selfie check fails", "identity"),
    ("refund", None),
    ("card_declined", "payments"),
    ("zzzz-no-such-word", None),
]
TENANTS = ("acme", "globex", "initech")


async def _log_workload(tool: SearchTool) -> list[dict[str, Any]]:
    sink = MemorySink()
    call_log = CallLog(sink)
    guard = Guard(call_log=call_log, cache=None, cap=None)
    for tenant in TENANTS:
        for text, product in WORKLOAD:
            args: dict[str, Any] = {"query": text}
            if product:
                args["product"] = product
            out = (
                await guard.call(tool, args, CallContext(state={"tenant_id": tenant}, invocation_id=f"inv-{tenant}"))
            ).result
            assert out["status"] == "ok", out
    assert call_log.flush(timeout_s=10)  # the call log is written by a background thread
    return sink.records()


async def test_replay_on_opensearch(opensearch_url: str, corpus: list[dict[str, Any]]) -> None:
    # best_fields: boosts are query-time settings there (under combined_fields they are part of the index).
    os_spec = unique_spec(field_combination="best_fields")
    os_backend = OpenSearchBackend(os_spec, opensearch_url)
    assert (await os_backend.ingest(corpus, batch_size=1000)).indexed == len(corpus)
    try:
        await _check_replay(os_backend, os_spec, opensearch_url)
    finally:
        await os_backend.drop()
        await os_backend.close()


async def _check_replay(os_backend: OpenSearchBackend, os_spec: SearchSpec, opensearch_url: str) -> None:
    records = await _log_workload(SearchTool(os_spec, os_backend))
    calls, skipped = collect_searches(records)
    assert len(calls) == len(TENANTS) * len(WORKLOAD) and skipped == 0

    same = await replay(SearchTool(os_spec, os_backend), calls)
    assert same.passed(), same.violations()
    s = same.summary()
    assert s["mean_jaccard_at_5"] == 1.0 and s["total_changed"] == 0 and s["errors"] == 0

    # Same index, other boosts: OpenSearch applies boosts at query time, so this is a mapping-level change.
    boosted_spec = dataclasses.replace(os_spec, text_fields=(TextField("subject", 0.2), TextField("body", 4.0)))
    boosted = OpenSearchBackend(boosted_spec, opensearch_url)
    try:
        changed = await replay(SearchTool(boosted_spec, boosted), calls)
    finally:
        await boosted.close()
    c = changed.summary()
    assert not changed.passed() and any("Jaccard" in v for v in changed.violations())
    assert c["top5_changed"] > 0
    # A boost change reorders; it does not change what matches, and scope is kept per call.
    assert c["total_changed"] == 0 and c["to_zero"] == c["from_zero"] == 0
