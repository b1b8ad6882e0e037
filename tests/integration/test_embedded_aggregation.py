"""The aggregation tool on the embedded engine: counts equal a brute-force count of the caller's own documents."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import sys
from pathlib import Path
from typing import Any

import pytest
import tantivy
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parent))

from agg_backend_checks import check_counts, count
from agg_strategies import TODAY, count_args, scopes

from scopegate.backends.embedded import SPEC_FILE, EmbeddedBackend, IndexLayout, build_schema
from scopegate.context import CallContext
from scopegate.errors import ConfigError
from scopegate.scope import Scope
from scopegate.search.agg_tool import AggregateTool
from scopegate.search.spec import SearchSpec
from scopegate.search.tools import FetchTool, SearchTool
from scopegate_lab.agg_oracle import counting_spec, random_corpus

HYPOTHESIS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)


def run_count(tool: AggregateTool, args: dict[str, Any], scope: Scope) -> dict[str, Any]:
    return asyncio.run(count(tool, args, scope))


@pytest.fixture(scope="module")
def counted() -> tuple[AggregateTool, list[dict[str, Any]]]:
    spec = counting_spec()
    docs = random_corpus(seed=11, size=900)
    backend = EmbeddedBackend(spec, None)
    report = backend.ingest_sync(docs, batch_size=250)
    assert report.failed == 0, report.errors[:3]
    return AggregateTool(spec, backend, today=lambda: TODAY), docs


@HYPOTHESIS
@given(args=count_args(), scope=scopes())
async def test_counts_are_the_callers_own_documents(counted: Any, args: dict[str, Any], scope: Scope) -> None:
    tool, docs = counted
    await check_counts(tool, docs, args, scope)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), size=st.integers(0, 80), args=count_args(), scope=scopes(groups=False))
async def test_counts_on_fresh_random_corpora(seed: int, size: int, args: dict[str, Any], scope: Scope) -> None:
    """A new corpus per example (no groups this time): empty indexes, single documents, all odd values."""
    spec = counting_spec(groups=False)
    docs = random_corpus(seed, size, groups=False)
    backend = EmbeddedBackend(spec, None)
    backend.ingest_sync(docs, batch_size=50)
    await check_counts(AggregateTool(spec, backend, today=lambda: TODAY), docs, args, scope)


def test_scope_arguments_and_injected_text_cannot_widen_the_count(counted: Any) -> None:
    tool, docs = counted
    alpha = Scope("alpha", ("blue", "green", "red"), "u1")
    for args in (
        {"group_by": "status", "tenant_id": "beta"},
        {"group_by": "tenant_id"},
        {"group_by": "group_ids"},
        {"group_by": "status", "status": "open OR 1=1"},
        {"group_by": "status", "script": "doc['tenant_id']"},
        {"group_by": "created_at", "interval": "1s", "last_days": 3},
    ):
        out = run_count(tool, args, alpha)
        assert out["status"] == "error" and out["error_code"] in {"BAD_ARGUMENTS", "BAD_FILTER"}, out
    every = run_count(tool, {"group_by": "product"}, alpha)
    assert every["total"] == sum(
        1 for d in docs if d["tenant_id"] == "alpha" and set(d["group_ids"]) & {"blue", "green", "red"}
    )
    assert every["total"] < len(docs)
    out = run_count(tool, {"group_by": "status"}, Scope("alpha", ("purple",)))  # no document of that group
    assert out["total"] == 0 and out["hint"].startswith("Nothing matches")
    assert asyncio.run(tool.run({"group_by": "status"}, CallContext(state={}))).result["error_code"] == "NO_SCOPE"


def test_the_demo_question_is_answered_from_one_table(embedded: EmbeddedBackend, tickets: list[dict[str, Any]]) -> None:
    tool = AggregateTool(embedded.spec, embedded)
    out = asyncio.run(tool.run({"group_by": "status", "product": "payments"}, CallContext(state={"tenant_id": "acme"})))
    expected: dict[str, int] = {}
    for t in tickets:
        if t["tenant_id"] == "acme" and t["product"] == "payments":
            expected[t["status"]] = expected.get(t["status"], 0) + 1
    assert {r["status"]: r["count"] for r in out.result["buckets"]} == expected
    assert len(json.dumps(out.result)) < 1000
    assert out.log["group_by"] == "status" and out.log["total"] == sum(expected.values())


def test_more_values_than_rows_fold_into_other() -> None:
    spec = dataclasses.replace(counting_spec(groups=False), index="wide")
    docs = random_corpus(5, 300, groups=False)
    backend = EmbeddedBackend(spec, None)
    backend.ingest_sync(docs)
    from scopegate.search.aggregation import AggregationSpec

    tool = AggregateTool(spec, backend, AggregationSpec(max_buckets=2))
    out = run_count(tool, {"group_by": "status"}, Scope("beta"))
    assert len(out["buckets"]) == 2
    assert sum(r["count"] for r in out["buckets"]) + out["other"] + out["no_value"] == out["total"]
    assert "Only the 2 largest values are listed" in out["hint"]
    assert "not one of the allowed values" in out["hint"]  # "escalated" is stored but never shown


def test_dates_are_stored_in_one_form_and_bad_ones_are_refused(spec: SearchSpec) -> None:
    backend = EmbeddedBackend(spec, None)
    base = {"tenant_id": "t1", "subject": "s", "body": "b", "product": "payments", "status": "open"}
    report = backend.ingest_sync(
        [
            {**base, "ticket_id": "A", "created_at": "2025-03-04T23:30:00-02:00"},
            {**base, "ticket_id": "B", "created_at": "2025-03-04"},
            {**base, "ticket_id": "C", "created_at": ""},
            {**base, "ticket_id": "D", "created_at": "yesterday"},
            {**base, "ticket_id": "E", "created_at": "2025-03-04T10:00:00"},
        ]
    )
    assert report.indexed == 3 and report.failed == 2
    assert {e[0] for e in report.errors} == {"D", "E"}
    assert all("created_at" in e[1] for e in report.errors)
    fetch = FetchTool(spec, backend)
    ctx = CallContext(state={"tenant_id": "t1"})
    assert asyncio.run(fetch.run({"id": "A"}, ctx)).result["document"]["created_at"] == "2025-03-05T01:30:00Z"
    assert asyncio.run(fetch.run({"id": "B"}, ctx)).result["document"]["created_at"] == "2025-03-04T00:00:00Z"
    assert "created_at" not in asyncio.run(fetch.run({"id": "C"}, ctx)).result["document"]


def legacy_index(spec: SearchSpec, folder: Path, docs: list[dict[str, Any]]) -> None:
    """An index as scopegate wrote it before dates and aggregations: no fast keyword fields, no date field."""
    old = dataclasses.replace(spec, date_field=None)
    folder.mkdir(parents=True)
    tantivy.Index(build_schema(old, IndexLayout(frozenset(), None)), path=str(folder), reuse=True)
    EmbeddedBackend(old, folder).ingest_sync(docs)


def test_an_old_index_keeps_searching_and_the_count_tool_is_refused_with_the_reason(
    spec: SearchSpec, tickets: list[dict[str, Any]], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    folder = tmp_path / "old"
    legacy_index(spec, folder, tickets[:100])
    opened = EmbeddedBackend.open(folder)  # the stored spec: no date field
    assert opened.spec.date_field is None
    ctx = CallContext(state={"tenant_id": "acme"})
    assert asyncio.run(SearchTool(opened.spec, opened).run({"query": "refund"}, ctx)).result["status"] == "ok"
    with pytest.raises(ConfigError, match=r"not a fast field.*re-ingest into a new folder"):
        AggregateTool(opened.spec, opened)
    # Today's spec (with the date field) over the old folder: opens, warns, searches, refuses to count by date.
    with caplog.at_level(logging.WARNING, logger="scopegate.embedded"):
        upgraded = EmbeddedBackend(spec, folder)
    assert "built without the date field 'created_at'" in caplog.text
    assert asyncio.run(SearchTool(spec, upgraded).run({"query": "refund"}, ctx)).result["status"] == "ok"
    with pytest.raises(ConfigError, match="without the date field 'created_at'"):
        AggregateTool(spec, upgraded)
    assert json.loads((folder / SPEC_FILE).read_text("utf-8"))["date_field"] is None  # the file tells the truth
    assert upgraded.ingest_sync(tickets[100:110]).indexed == 10  # dates are dropped, documents are not


def test_a_dated_index_opens_without_the_date_field_but_not_with_another(
    spec: SearchSpec, tickets: list[dict[str, Any]], tmp_path: Path
) -> None:
    EmbeddedBackend(spec, tmp_path / "dated").ingest_sync(tickets[:20])
    plain = EmbeddedBackend(dataclasses.replace(spec, date_field=None), tmp_path / "dated")
    ctx = CallContext(state={"tenant_id": "acme"})
    assert asyncio.run(SearchTool(plain.spec, plain).run({"query": "refund"}, ctx)).result["status"] == "ok"
    assert EmbeddedBackend.open(tmp_path / "dated").spec.date_field == "created_at"  # the file keeps what is on disk
    with pytest.raises(ConfigError, match="different mapping"):
        EmbeddedBackend(dataclasses.replace(spec, date_field="opened_at"), tmp_path / "dated")
