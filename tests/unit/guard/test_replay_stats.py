"""Pure parts of replay and stats: comparisons, thresholds, log parsing, charts."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from scopegate.cli import cli, main
from scopegate.cli.core import undocumented
from scopegate.errors import ConfigError
from scopegate.guard.logfile import ReadStats, iter_records, parse_duration, parse_time
from scopegate.guard.replay import (
    CallDiff,
    LoggedSearch,
    ReplayReport,
    Thresholds,
    collect_searches,
    jaccard_at,
    logged_search_from_record,
    rank_changes,
    render_table,
    sample_searches,
)
from scopegate.guard.stats import bucketed, figures, render
from scopegate.scope import Scope


def rec(**kw: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "v": 1,
        "event": "call",
        "ts": "2025-03-01T10:00:00+00:00",
        "tool": "search_tickets",
        "family": "search",
        "tenant_id": "acme",
        "group_ids": [],
        "user_id": None,
        "query": "refund failed",
        "filters": {},
        "page": 1,
        "total": 3,
        "total_relation": "eq",
        "ids": ["A", "B", "C"],
        "latency_ms": 1.0,
        "cache_hit": False,
        "outcome": "ok",
        "error_code": None,
        "invocation_id": "i1",
    }
    base.update(kw)
    return base


def call(ids: list[str], total: int | None = None) -> LoggedSearch:
    return LoggedSearch("s", Scope("acme"), "q", (), 1, tuple(ids), len(ids) if total is None else total, "eq")


def test_jaccard_at_5() -> None:
    assert jaccard_at([], []) == 1.0
    assert jaccard_at(["a", "b"], ["b", "a"]) == 1.0
    assert jaccard_at(["a", "b"], ["c"]) == 0.0
    assert jaccard_at(["a", "b", "c", "d", "e", "X"], ["a", "b", "c", "d", "e", "Y"]) == 1.0  # only the top 5
    assert jaccard_at(["a", "b", "c"], ["a", "b", "d"]) == pytest.approx(2 / 4)


def test_rank_changes() -> None:
    changes = rank_changes(["a", "b", "c"], ["b", "a", "d"])
    as_tuples = [(c.doc_id, c.old_rank, c.new_rank) for c in changes]
    assert as_tuples == [("a", 1, 2), ("b", 2, 1), ("c", 3, None), ("d", None, 3)]
    assert rank_changes(["a"], ["a"]) == []


def test_zero_flips_and_total_deltas() -> None:
    assert CallDiff(call(["a"]), new_ids=(), new_total=0).zero_flip == "to_zero"
    assert CallDiff(call([]), new_ids=("a",), new_total=1).zero_flip == "from_zero"
    assert CallDiff(call(["a"], 10), new_ids=("a",), new_total=7).total_delta == -3
    assert CallDiff(call(["a"]), error_code="SEARCH_UNAVAILABLE").zero_flip is None


def test_thresholds_and_verdicts() -> None:
    same = CallDiff(call(["a", "b"]), new_ids=("a", "b"), new_total=2, jaccard5=1.0)
    moved = CallDiff(call(["a", "b"]), new_ids=("b", "c"), new_total=2, jaccard5=1 / 3)
    lost = CallDiff(call(["a"]), new_ids=(), new_total=0, jaccard5=0.0)
    assert ReplayReport([same, same]).passed()
    report = ReplayReport([same, moved, lost])
    summary = report.summary()
    assert summary["mean_jaccard_at_5"] == pytest.approx((1 + 1 / 3 + 0) / 3)
    assert summary["to_zero"] == 1 and summary["top5_changed"] == 2
    violations = report.violations()
    assert any("Jaccard" in v for v in violations) and any("lost all" in v for v in violations)
    lenient = ReplayReport([same, moved, lost], thresholds=Thresholds(max_jaccard_drop=None, max_to_zero=None))
    assert lenient.passed()
    assert not ReplayReport([]).passed()  # nothing replayed is not a pass
    failing = ReplayReport([CallDiff(call(["a"]), error_code="INDEX_MISSING")])
    assert any("now fail" in v for v in failing.violations())
    table = render_table(report)
    assert "FAIL" in table and "to_zero" in table
    assert json.loads(json.dumps(report.as_dict()))["passed"] is False


def test_records_that_are_not_replayable_are_skipped() -> None:
    good = rec()
    assert logged_search_from_record(good) is not None
    for bad in (
        rec(outcome="error", error_code="CALL_LIMIT"),
        rec(event="answer"),
        rec(tenant_id=None),
        rec(tenant_id=""),
        rec(query=""),
        rec(page=0),
        rec(page=True),
        rec(ids=None),
        rec(filters=["x"]),
    ):
        assert logged_search_from_record(bad) is None, bad
    calls, skipped = collect_searches(
        [good, rec(ids=["Z"]), rec(tool="other"), rec(outcome="error")], tool="search_tickets"
    )
    assert len(calls) == 1 and calls[0].ids == ("Z",) and skipped == 2  # dedup keeps the latest
    calls, _ = collect_searches([good, rec(tenant_id="globex"), rec(group_ids=["g"]), rec(filters={"status": "open"})])
    assert len(calls) == 4


def test_sampling_is_reproducible() -> None:
    calls = [call([str(i)]) for i in range(50)]
    a = sample_searches(calls, 10, seed=3)
    assert a == sample_searches(calls, 10, seed=3) and len(a) == 10
    assert sample_searches(calls, 100) == calls and sample_searches(calls, None) == calls


def test_durations_and_times() -> None:
    assert parse_duration("90s") == timedelta(seconds=90)
    assert parse_duration("1.5h") == timedelta(minutes=90)
    now = datetime(2025, 3, 1, 12, tzinfo=UTC)
    assert parse_time("2h", now=now) == datetime(2025, 3, 1, 10, tzinfo=UTC)
    assert parse_time("2025-03-01T10:00:00") == datetime(2025, 3, 1, 10, tzinfo=UTC)
    assert parse_time("2025-03-01T10:00:00Z") == datetime(2025, 3, 1, 10, tzinfo=UTC)
    for bad in ("", "1y", "-1h", "0s", "yesterday", "1h; rm -rf /"):
        with pytest.raises(ConfigError):
            parse_time(bad) if bad != "0s" else parse_duration(bad)


def test_iter_records_skips_garbage(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    path.write_bytes(
        b"\n".join(
            [
                json.dumps(rec()).encode(),
                b"not json",
                b"[1,2]",
                b"\xff\xfe",
                b"x" * 1_100_000,
                json.dumps(rec(ts="2025-03-01T12:00:00+00:00")).encode(),
                json.dumps(rec(ts=None)).encode(),
            ]
        )
    )
    stats = ReadStats()
    assert len(list(iter_records([path], stats=stats))) == 3
    assert stats.bad_lines == 4
    since = datetime(2025, 3, 1, 11, tzinfo=UTC)
    assert [r["ts"] for r in iter_records([path], since=since)] == ["2025-03-01T12:00:00+00:00"]
    with pytest.raises(ConfigError):
        list(iter_records([tmp_path / "missing.jsonl"]))


def test_stats_figures_and_chart() -> None:
    t0 = datetime(2025, 3, 1, 10, tzinfo=UTC)
    records = []
    for minute in range(60):
        ts = (t0 + timedelta(minutes=minute)).isoformat()
        zero = minute >= 30  # the second half has only zero-result searches
        records.append(rec(ts=ts, latency_ms=float(minute), total=0 if zero else 3, invocation_id=f"i{minute // 2}"))
    records.append(rec(ts=t0.isoformat(), outcome="error", error_code="CALL_LIMIT", invocation_id="i0"))
    records.append(rec(ts=t0.isoformat(), outcome="error", error_code="BAD_QUERY", page=None, total=None))
    records += [{"event": "answer", "ts": t0.isoformat(), "invocation_id": f"i{k}"} for k in range(30)]
    f = figures(records)
    assert f["calls"] == 62 and f["executed"] == 61 and f["errors"] == 1
    assert f["zero_result_rate"] == pytest.approx(30 / 60)
    assert f["errors_by_code"] == {"BAD_QUERY": 1} and f["refused_by_code"] == {"CALL_LIMIT": 1}
    # 60 searches over 30 answered invocations (+1 BAD_QUERY in i1); the CALL_LIMIT refusal is not a search
    assert f["searches_per_answered_question"] == pytest.approx(61 / 30)
    buckets = bucketed(records, t0, t0 + timedelta(minutes=60), 4)
    assert [b.figures["zero_result_rate"] for b in buckets] == [0.0, 0.0, 1.0, 1.0]
    assert buckets[0].figures["latency_ms"]["p95"] < buckets[3].figures["latency_ms"]["p95"]
    chart = render(f, buckets)
    lines = chart.splitlines()
    assert any("zero-result rate" in line for line in lines)
    assert len([line for line in lines if line.startswith("03-01 ")]) == 4
    assert "█" in chart


def test_every_command_and_option_has_help() -> None:
    assert {"replay", "stats"} <= set(cli.commands)
    helps = {name: c.get_short_help_str() for name, c in cli.commands.items()}
    for name in ("replay", "stats"):
        assert helps[name], name
        assert undocumented(cli.commands[name]) == []


def test_replay_usage_errors(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    log = tmp_path / "l.jsonl"
    log.write_text(json.dumps(rec()) + "\n")
    assert main(["replay", str(log)]) == 2  # neither --index nor --factory
    assert main(["replay", str(log), "--index", str(tmp_path / "nope")]) == 2
    assert "scopegate replay:" in capsys.readouterr().err
    assert main(["replay", str(log), "--factory", "no_such_module_xyz:make"]) == 2
    assert main(["stats", str(tmp_path / "missing.jsonl")]) == 2
    assert main(["stats", str(log), "--window", "soon"]) == 2


def test_stats_separates_refusals_and_confirmations_from_executed_calls() -> None:
    # Issue 19: `stats` counted confirmations and cap refusals as errors and mixed their ~0.03 ms latencies
    # into p50, so a healthy log looked broken and fast.
    t0 = datetime(2025, 3, 1, 10, tzinfo=UTC).isoformat()
    executed = [rec(ts=t0, latency_ms=40.0 + i, total=3, invocation_id="i1") for i in range(4)]
    executed.append(rec(ts=t0, latency_ms=50.0, outcome="error", error_code="NOT_FOUND", page=None, total=None))
    not_run = [
        rec(ts=t0, latency_ms=0.03, outcome="error", error_code=code, page=None, total=None)
        for code in ["CALL_LIMIT"] * 3 + ["RATE_LIMITED", "CONFIRMATION_REQUIRED", "CONFIRMATION_REQUIRED"]
    ]
    not_run.append(rec(ts=t0, latency_ms=0.02, outcome="error", error_code="CONFIRMATION_REJECTED", family="openapi"))
    f = figures(executed + not_run)
    assert (f["calls"], f["executed"], f["refused"], f["confirmations"]) == (12, 5, 4, 3)
    assert f["refused_by_code"] == {"CALL_LIMIT": 3, "RATE_LIMITED": 1}
    assert f["confirmations_by_code"] == {"CONFIRMATION_REJECTED": 1, "CONFIRMATION_REQUIRED": 2}
    assert f["errors"] == 1 and f["errors_by_code"] == {"NOT_FOUND": 1}
    assert f["error_rate"] == pytest.approx(1 / 5) and f["error_rate_by_code"] == {"NOT_FOUND": pytest.approx(1 / 5)}
    assert f["latency_ms"]["p50"] == pytest.approx(42.0)  # the median of the executed calls only
    text = render(f, [])
    assert "calls 12: 5 executed, 4 refused by the guard, 3 asked for confirmation" in text
    assert "errors 1 (20.0% of executed calls)" in text
