"""Helpers of the cluster tests (imported by module name: pytest puts this folder on sys.path)."""

from __future__ import annotations

import contextlib
import dataclasses
import uuid
from collections.abc import AsyncIterator, Iterable
from typing import Any

import httpx

from scopegate.backends.opensearch import OpenSearchBackend
from scopegate.demo.corpus import ticket_spec
from scopegate.search.spec import SearchSpec

LOADED_ENGINE_TIMEOUT_S = 3.0
LOADED_CLIENT_TIMEOUT_S = 4.0
QUERIES: tuple[tuple[str, dict[str, str]], ...] = (
    ("refund failed", {}),
    ("apple pay refund", {"product": "payments"}),
    ("payout delayed bank", {}),
    ("invoice total wrong", {"status": "open"}),
    ("E4012", {}),
    ("selfie check fails", {"product": "identity"}),
    ("customer charged twice", {}),
    ("verification document", {"status": "solved"}),
)


def cluster_spec(**changes: Any) -> SearchSpec:
    """The ticket spec on a fresh index name, so tests never share indices."""
    return dataclasses.replace(ticket_spec(), index=f"cl-{uuid.uuid4().hex[:10]}", **changes)


def loaded_spec() -> SearchSpec:
    """A fresh spec with budgets for calls under load on a shared 2-core machine (engine 3 s, client 4 s):
    the tests under load are about failures and swaps, and a slow moment must not look like one."""
    return cluster_spec(engine_timeout_s=LOADED_ENGINE_TIMEOUT_S, client_timeout_s=LOADED_CLIENT_TIMEOUT_S)


def search_args(text: str, filters: dict[str, str]) -> dict[str, Any]:
    return {"query": text, **filters}


def shard_query_totals(url: str, index: str) -> dict[str, int]:
    """Queries run per shard id (primary and replica copies summed) of ``index``."""
    resp = httpx.get(f"{url}/{index}/_stats/search", params={"level": "shards"}, timeout=30)
    resp.raise_for_status()
    (stats,) = resp.json()["indices"].values()
    return {
        shard: sum(int(copy["search"]["query_total"]) for copy in copies) for shard, copies in stats["shards"].items()
    }


def changed(before: dict[str, int], after: dict[str, int]) -> set[str]:
    return {shard for shard, total in after.items() if total != before.get(shard, 0)}


def http_opened(url: str, names: Iterable[str]) -> dict[str, int]:
    """HTTP connections each named node has accepted so far."""
    resp = httpx.get(f"{url}/_nodes/stats/http", timeout=30)
    resp.raise_for_status()
    wanted = set(names)
    return {
        node["name"]: int(node["http"]["total_opened"])
        for node in resp.json()["nodes"].values()
        if node["name"] in wanted
    }


@contextlib.asynccontextmanager
async def ingested(
    urls: list[str], corpus: list[dict[str, Any]], spec: SearchSpec | None = None, **layout: Any
) -> AsyncIterator[OpenSearchBackend]:
    """A fresh index with ``layout`` (shards, replicas, routing, ...) holding ``corpus``, green; dropped after."""
    backend = OpenSearchBackend(spec or cluster_spec(), urls, **layout)
    try:
        report = await backend.ingest(corpus, batch_size=500)
        assert report.failed == 0 and report.indexed == len(corpus), report.errors[:3]
        assert await backend.wait_for_health() == "green"
        yield backend
    finally:
        await backend.drop()
        await backend.close()
