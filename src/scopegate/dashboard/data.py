"""What the dashboard shows, computed from call-log records (pure: records in, numbers out).

Every figure comes from :mod:`scopegate.guard.stats` (the definitions ``scopegate stats`` and the live
Prometheus metrics share); this module only groups records the ways the page needs:

* over time: the three numbers of the seeds (zero-result rate, searches per answered question, p95
  tool latency) per time bucket. An answered question counts in the bucket of its answer, with every
  search it made, also those made in an earlier bucket;
* the queries that most often found nothing (the vocabulary-drift signal), with the tools they went to;
* errors by code, cache hit rate;
* per tool: figures and a latency histogram on the Prometheus buckets of ``scopegate_tool_latency_seconds``.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from scopegate.guard.logfile import record_time
from scopegate.guard.metrics import CONFIRMATIONS, LATENCY_BUCKETS_S, REFUSALS
from scopegate.guard.stats import bucketed, figures, is_result_list, read_window, turn_key

DEFAULT_BUCKETS = 24
DEFAULT_TOP = 20
# Calls the guard answered without running the tool (as in the stats): their latency is not the tool's.
NOT_EXECUTED = REFUSALS | CONFIRMATIONS
LATENCY_BOUNDS_MS = tuple(bound * 1000.0 for bound in LATENCY_BUCKETS_S)


@dataclass(frozen=True)
class ZeroQuery:
    query: str
    count: int
    tools: tuple[str, ...]
    last_seen: str | None

    def as_dict(self) -> dict[str, Any]:
        return {"query": self.query, "count": self.count, "tools": list(self.tools), "last_seen": self.last_seen}


@dataclass(frozen=True)
class ToolLatency:
    tool: str
    figures: dict[str, Any]
    histogram: list[tuple[str, int]]  # (upper bound label in ms, calls in the bucket), not cumulative

    def as_dict(self) -> dict[str, Any]:
        return {
            "tool": self.tool,
            "figures": self.figures,
            "histogram": [{"le_ms": le, "count": n} for le, n in self.histogram],
        }


@dataclass(frozen=True)
class Dashboard:
    window: dict[str, Any]
    figures: dict[str, Any]
    series: list[dict[str, Any]]
    top_zero_queries: list[ZeroQuery]
    tools: list[ToolLatency]
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "window": self.window,
            "figures": self.figures,
            "series": self.series,
            "top_zero_queries": [q.as_dict() for q in self.top_zero_queries],
            "tools": [t.as_dict() for t in self.tools],
        }


def _calls(records: Iterable[Mapping[str, Any]]) -> Iterable[Mapping[str, Any]]:
    return (r for r in records if r.get("event", "call") == "call")


def _latency(record: Mapping[str, Any]) -> float | None:
    value = record.get("latency_ms")
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0:
        return float(value)
    return None


def _bound_label(ms: float) -> str:
    return f"{ms:g}"


def latency_histogram(latencies_ms: Iterable[float]) -> list[tuple[str, int]]:
    """Counts per Prometheus latency bucket (``le``: a value on a bound counts in that bucket), then ``+Inf``."""
    counts = [0] * (len(LATENCY_BOUNDS_MS) + 1)
    for value in latencies_ms:
        counts[bisect_left(LATENCY_BOUNDS_MS, value)] += 1
    labels = [_bound_label(b) for b in LATENCY_BOUNDS_MS] + ["+Inf"]
    return list(zip(labels, counts, strict=True))


def top_zero_queries(records: Iterable[Mapping[str, Any]], top: int = DEFAULT_TOP) -> list[ZeroQuery]:
    """The logged (normalised) queries whose result list was empty, most frequent first."""
    counts: dict[str, int] = {}
    tools: dict[str, set[str]] = {}
    last: dict[str, str] = {}
    for r in _calls(records):
        if not is_result_list(r) or r.get("total") != 0:
            continue
        query = r.get("query")
        if not isinstance(query, str):
            continue
        counts[query] = counts.get(query, 0) + 1
        tools.setdefault(query, set()).add(str(r.get("tool") or "?"))
        ts = r.get("ts")
        if isinstance(ts, str) and ts > last.get(query, ""):
            last[query] = ts
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))[: max(0, top)]
    return [ZeroQuery(q, n, tuple(sorted(tools[q])), last.get(q)) for q, n in ranked]


def per_tool(records: Iterable[Mapping[str, Any]]) -> list[ToolLatency]:
    """Figures and the latency histogram of each tool (histograms count calls the tool ran)."""
    by_tool: dict[str, list[Mapping[str, Any]]] = {}
    for r in _calls(records):
        by_tool.setdefault(str(r.get("tool") or "?"), []).append(r)
    out = []
    for tool, rows in sorted(by_tool.items()):
        ran = (_latency(r) for r in rows if r.get("error_code") not in NOT_EXECUTED)
        out.append(ToolLatency(tool, figures(rows), latency_histogram(v for v in ran if v is not None)))
    return out


def _answer_times(records: Iterable[Mapping[str, Any]]) -> dict[str, datetime]:
    """The time of each invocation's first answer record."""
    out: dict[str, datetime] = {}
    for r in records:
        if r.get("event") != "answer":
            continue
        key, t = turn_key(r), record_time(dict(r))
        if key is not None and t is not None and key not in out:
            out[key] = t
    return out


def time_series(
    records: Sequence[Mapping[str, Any]], start: datetime, end: datetime, buckets: int
) -> list[dict[str, Any]]:
    """The three numbers per time bucket; searches per answered question by the time of each answer."""
    by_time = bucketed(records, start, end, buckets)
    answered_at = _answer_times(records)

    def answer_time(r: Mapping[str, Any]) -> datetime | None:
        key = turn_key(r)
        return answered_at.get(key, record_time(dict(r))) if key is not None else record_time(dict(r))

    by_answer = bucketed(records, start, end, buckets, time_of=answer_time)
    return [
        {
            "from": b.start.isoformat(),
            "until": b.end.isoformat(),
            "calls": b.figures["calls"],
            "p95_latency_ms": b.figures["latency_ms"]["p95"],
            "zero_result_rate": b.figures["zero_result_rate"],
            "result_lists": b.figures["result_lists"],
            "searches_per_answered_question": a.figures["searches_per_answered_question"],
            "answered_questions": a.figures["answered_questions"],
        }
        for b, a in zip(by_time, by_answer, strict=True)
    ]


def build_dashboard(
    records: Sequence[Mapping[str, Any]],
    *,
    start: datetime | None,
    end: datetime,
    buckets: int = DEFAULT_BUCKETS,
    top: int = DEFAULT_TOP,
    window: Mapping[str, Any] | None = None,
) -> Dashboard:
    """The dashboard of ``records`` (already within [start, end])."""
    series = time_series(records, start, end, buckets) if start is not None and records else []
    info: dict[str, Any] = dict(window) if window is not None else {"from": start.isoformat() if start else None}
    info.setdefault("until", end.isoformat())
    info.setdefault("records", len(records))
    notes = []
    if info.get("bad_lines"):
        notes.append(f"{info['bad_lines']} malformed line(s) skipped")
    return Dashboard(info, figures(records), series, top_zero_queries(records, top), per_tool(records), notes)


def dashboard_from_log(
    paths: Sequence[str | Path],
    *,
    window: timedelta | None = None,
    until: datetime | None = None,
    buckets: int = DEFAULT_BUCKETS,
    top: int = DEFAULT_TOP,
) -> Dashboard:
    """The dashboard of the call-log files ``paths`` (JSON lines, rotated files oldest first)."""
    chosen = read_window(paths, window=window, until=until)
    return build_dashboard(
        chosen.records, start=chosen.start, end=chosen.end, buckets=buckets, top=top, window=chosen.info()
    )
