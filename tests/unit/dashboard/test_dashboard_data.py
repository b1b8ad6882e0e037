"""The dashboard's numbers from call-log records (pure)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from scopegate.dashboard.data import (
    LATENCY_BOUNDS_MS,
    build_dashboard,
    dashboard_from_log,
    latency_histogram,
    per_tool,
    time_series,
    top_zero_queries,
)
from scopegate.guard.metrics import LATENCY_BUCKETS_S
from scopegate.guard.stats import figures

T0 = datetime(2025, 3, 1, 10, tzinfo=UTC)


def at(minutes: float) -> str:
    return (T0 + timedelta(minutes=minutes)).isoformat()


def call(minutes: float, **kw: Any) -> dict[str, Any]:
    """A logged search call (the fields the dashboard reads); ``kw`` overrides."""
    fields = dict(tool="search_tickets", family="search", query="refund failed", page=1, total=3, latency_ms=2.0)
    return {
        "event": "call",
        "ts": at(minutes),
        **fields,
        "cache_hit": False,
        "outcome": "ok",
        "invocation_id": "i1",
        **kw,
    }


def answer(minutes: float, invocation: str) -> dict[str, Any]:
    return {"v": 1, "event": "answer", "ts": at(minutes), "invocation_id": invocation}


def test_the_three_numbers_per_bucket() -> None:
    records = [
        # first half hour: two searches of i1, one found nothing; latencies 1 and 3 ms
        call(1, latency_ms=1.0),
        call(2, latency_ms=3.0, total=0, query="kubernetes"),
        # second half hour: i2 searches once (10 ms) and answers; i1 answers now too
        call(40, latency_ms=10.0, invocation_id="i2"),
        answer(41, "i2"),
        answer(42, "i1"),
    ]
    series = time_series(records, T0, T0 + timedelta(minutes=60), 2)
    assert [b["calls"] for b in series] == [2, 1]
    assert [b["zero_result_rate"] for b in series] == [0.5, 0.0]
    assert series[0]["p95_latency_ms"] == pytest.approx(1.0 + 0.95 * 2.0)
    assert series[1]["p95_latency_ms"] == 10.0
    # i1 answered in the second bucket with both of its searches from the first one: (2 + 1) / 2
    assert [b["searches_per_answered_question"] for b in series] == [None, 1.5]
    assert [b["answered_questions"] for b in series] == [0, 2]
    assert series[0]["from"] == T0.isoformat() and series[1]["until"] == at(60)


def test_top_zero_result_queries() -> None:
    records = [
        call(1, total=0, query="helm chart", ts="2025-03-01T10:01:00+00:00"),
        call(2, total=0, query="helm chart", tool="search_docs", ts="2025-03-01T10:05:00+00:00"),
        call(3, total=0, query="aardvark"),
        call(4, total=0, query="zebra"),
        call(5, total=5, query="refund"),  # found something
        call(6, total=None, page=None, query="T-1", tool="get_ticket"),  # a fetch: no result list
        call(7, total=0, outcome="error", error_code="BAD_QUERY", query="the"),
        {"event": "answer", "ts": at(8), "invocation_id": "i1", "total": 0, "page": 1, "query": "no"},
    ]
    top = top_zero_queries(records, top=2)
    assert [(q.query, q.count, q.tools) for q in top] == [
        ("helm chart", 2, ("search_docs", "search_tickets")),
        ("aardvark", 1, ("search_tickets",)),  # ties: alphabetical
    ]
    assert top[0].last_seen == "2025-03-01T10:05:00+00:00"
    assert [q.query for q in top_zero_queries(records)] == ["helm chart", "aardvark", "zebra"]
    assert top_zero_queries(records, top=0) == []


def test_histogram_uses_the_prometheus_buckets() -> None:
    assert len(LATENCY_BOUNDS_MS) == len(LATENCY_BUCKETS_S)
    hist = dict(latency_histogram([0.1, 0.5, 0.50001, 1.0, 20_000.0]))
    assert hist["0.5"] == 2  # le: a value on the bound counts in that bucket
    assert hist["1"] == 2
    assert hist["+Inf"] == 1
    assert sum(hist.values()) == 5


def test_per_tool_histograms_leave_out_calls_the_tool_never_ran() -> None:
    records = [
        call(1, latency_ms=4.0),
        call(2, latency_ms=0.01, outcome="error", error_code="CALL_LIMIT"),
        call(3, latency_ms=0.02, outcome="error", error_code="RATE_LIMITED"),
        call(4, latency_ms=30.0, tool="get_ticket", page=None),
        call(5, latency_ms=float("nan"), tool="get_ticket", page=None),
        call(6, latency_ms=True, tool="get_ticket", page=None),
    ]
    tools = {t.tool: t for t in per_tool(records)}
    assert sorted(tools) == ["get_ticket", "search_tickets"]
    search = tools["search_tickets"]
    assert search.figures["calls"] == 3 and search.figures["errors_by_code"] == {}
    assert search.figures["refused_by_code"] == {"CALL_LIMIT": 1, "RATE_LIMITED": 1}
    assert sum(n for _, n in search.histogram) == 1 and dict(search.histogram)["5"] == 1
    assert sum(n for _, n in tools["get_ticket"].histogram) == 1  # NaN and a boolean are not latencies


def test_whole_dashboard_uses_the_stats_figures() -> None:
    records = [call(m, total=0 if m % 4 == 0 else 2, latency_ms=float(m)) for m in range(20)]
    records.append(answer(21, "i1"))
    d = build_dashboard(records, start=T0, end=T0 + timedelta(minutes=21), buckets=3)
    assert d.figures == figures(records)
    assert len(d.series) == 3 and sum(b["calls"] for b in d.series) == 20
    assert d.top_zero_queries[0].count == 5
    out = d.as_dict()
    assert json.loads(json.dumps(out, allow_nan=False)) == out
    assert out["tools"][0]["histogram"][-1] == {"le_ms": "+Inf", "count": 0}


def test_empty_log(tmp_path: Path) -> None:
    path = tmp_path / "calls.jsonl"
    path.write_text("not json\n{}\n", "utf-8")
    d = dashboard_from_log([path])
    assert d.series == [] and d.tools == [] and d.top_zero_queries == []
    assert d.figures["calls"] == 0
    assert d.window["bad_lines"] == 1 and d.notes == ["1 malformed line(s) skipped"]


def test_window_from_the_log(tmp_path: Path) -> None:
    path = tmp_path / "calls.jsonl"
    lines = [call(m, latency_ms=float(m)) for m in range(0, 120, 10)]
    path.write_text("".join(json.dumps(r) + "\n" for r in lines), "utf-8")
    d = dashboard_from_log([path], window=timedelta(minutes=30), buckets=3)
    assert d.figures["calls"] == 4  # 80, 90, 100, 110 (the window ends at the newest record)
    assert d.window["from"] == at(80) and d.window["until"] == at(110)
    assert [b["calls"] for b in d.series] == [1, 1, 2]
