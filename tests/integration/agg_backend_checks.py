"""The aggregation tests every remote engine runs (imported by module name).

An engine's test module defines the fixture ``make_remote`` (spec, **options -> backend) and
imports the ``counted`` fixture and the ``test_*`` functions below. They check what
the embedded engine's tests check: counts equal a brute-force count of the caller's own documents
(hypothesis varies the scope and the request over a corpus with odd values, blanks and dates in
several notations), the results equal the embedded engine's for the same corpus, and an index
without the date field is refused with the field's name.
"""

from __future__ import annotations

import dataclasses
import itertools
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from agg_strategies import TODAY, count_args, scopes
from hypothesis import HealthCheck, given, settings

from scopegate.backends.base import SearchBackend
from scopegate.backends.embedded import EmbeddedBackend
from scopegate.context import CallContext
from scopegate.scope import Scope, state_for
from scopegate.search.agg_tool import AggregateTool
from scopegate.search.aggregation import AggregationRequest, validate_aggregation_args
from scopegate.search.spec import SearchSpec
from scopegate_lab.agg_oracle import counting_spec, mismatches, random_corpus

PARITY_ARGS: list[dict[str, Any]] = [
    *({"group_by": g, **f} for g, f in itertools.product(["status", "product"], [{}, {"product": "payments"}])),
    {"group_by": "status", "status": "open"},
    {"group_by": "product", "since": "2025-02-01", "until": "2025-02-28"},
    {"group_by": "status", "last_days": 10},
    *(
        {"group_by": "created_at", "interval": i, "since": s, "until": u}
        for i, s, u in (
            ("day", "2025-03-01", "2025-03-31"),
            ("week", "2025-01-01", "2025-04-30"),
            ("month", "2025-01-01", "2025-04-30"),
            ("week", "2025-02-26", "2025-03-05"),
        )
    ),
    {"group_by": "created_at", "interval": "month", "since": "2024-12-15", "until": "2025-01-10", "status": "open"},
]


async def count(tool: AggregateTool, args: dict[str, Any], scope: Scope) -> dict[str, Any]:
    return (await tool.run(args, CallContext(state=state_for(scope, tool.scope_keys)))).result


async def check_counts(tool: AggregateTool, docs: list[dict[str, Any]], args: dict[str, Any], scope: Scope) -> None:
    request = validate_aggregation_args(tool.settings, args, TODAY)
    result = await count(tool, args, scope)
    if isinstance(request, AggregationRequest) and tool.spec.group_field and not scope.group_ids:
        assert result["error_code"] == "NO_SCOPE"
        return
    if not isinstance(request, AggregationRequest):
        assert result == request
        return
    assert mismatches(tool.spec, docs, scope, request, result) == [], (args, scope, result)


async def check_parity(remote: SearchBackend, docs: list[dict[str, Any]], scopes: list[Scope]) -> int:
    """The remote engine and the embedded engine answer every parity question identically; returns how many."""
    embedded = EmbeddedBackend(dataclasses.replace(remote.spec), None)
    embedded.ingest_sync(docs, batch_size=500)
    here = AggregateTool(embedded.spec, embedded, today=lambda: TODAY)
    there = AggregateTool(remote.spec, remote, today=lambda: TODAY)
    compared = 0
    for scope in scopes:
        for args in PARITY_ARGS:
            mine, theirs = await count(here, args, scope), await count(there, args, scope)
            assert mine == theirs, (args, scope)
            assert mine["status"] == "ok", mine
            compared += 1
    await embedded.close()
    return compared


def fresh(spec: SearchSpec) -> SearchSpec:
    """``spec`` on a new index name: tests never share indices."""
    return dataclasses.replace(spec, index=f"agg-{uuid.uuid4().hex[:10]}")


@pytest.fixture(scope="module")
async def counted(make_remote: Callable[..., Any]) -> AsyncIterator[tuple[AggregateTool, list[dict[str, Any]]]]:
    """The random corpus on three shards (terms counts are merged across shards, as on a cluster); dropped after."""
    backend = make_remote(fresh(counting_spec()), shards=3)
    docs = random_corpus(seed=11, size=900)
    report = await backend.ingest(docs, batch_size=300)
    assert report.failed == 0, report.errors[:3]
    try:
        yield AggregateTool(backend.spec, backend, today=lambda: TODAY), docs
    finally:
        await backend.drop()
        await backend.close()


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(args=count_args(), scope=scopes())
async def test_counts_are_the_callers_own_documents(counted: Any, args: dict[str, Any], scope: Scope) -> None:
    tool, docs = counted
    await check_counts(tool, docs, args, scope)


async def test_counts_equal_the_embedded_engines(counted: Any) -> None:
    tool, docs = counted
    groups = ("blue", "green", "red")
    compared = await check_parity(tool.backend, docs, [Scope(t, groups, "u1") for t in ("alpha", "beta", "gamma")])
    assert compared >= 36


async def test_an_index_without_the_date_field_is_refused_by_name(make_remote: Callable[[SearchSpec], Any]) -> None:
    """Today's spec (with a date field) over an index built without it: counts by field work, by date are refused."""
    spec = fresh(counting_spec(groups=False))
    old = make_remote(dataclasses.replace(spec, date_field=None))
    docs = [{k: v for k, v in d.items() if k != "created_at"} for d in random_corpus(3, 40, groups=False)]
    await old.ingest(docs)
    backend = make_remote(spec)
    try:
        tool = AggregateTool(backend.spec, backend, today=lambda: TODAY)
        assert (await count(tool, {"group_by": "status"}, Scope("alpha")))["status"] == "ok"
        dated = await count(tool, {"group_by": "status", "last_days": 30}, Scope("alpha"))
        assert dated["error_code"] == "SEARCH_UNAVAILABLE" and "'created_at'" in dated["message"]
        assert dated["retryable"] is False
    finally:
        await old.drop()
        await old.close()
        await backend.close()
