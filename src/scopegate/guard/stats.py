"""The guard's health figures computed from a call log, with a small text chart.

Same definitions as :mod:`scopegate.guard.metrics`: zero-result rate over
successful result-list calls, searches per answered question, latency
percentiles, error rate by code, cache hit rate. Calls that did not run are
counted apart: refusals by the guard (``CALL_LIMIT``, ``RATE_LIMITED``) and
confirmation requests (``CONFIRMATION_*``: the call waits for the user). They
are not errors of the tool, and their ~0.03 ms latencies are not in the
percentiles, which describe executed calls only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from scopegate.guard.logfile import ReadStats, iter_records, record_time
from scopegate.guard.metrics import CONFIRMATIONS, QUANTILES, REFUSALS, SEARCH_FAMILIES, percentile, rate

BAR_WIDTH = 30


def turn_key(record: Mapping[str, Any]) -> str | None:
    inv, ses = record.get("invocation_id"), record.get("session_id")
    if isinstance(inv, str) and inv:
        return f"i:{inv}"
    if isinstance(ses, str) and ses:
        return f"s:{ses}"
    return None


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def is_result_list(record: Mapping[str, Any]) -> bool:
    """A successful result-list call: the unit of the zero-result rate (fetch-by-id has no page)."""
    code = record.get("error_code")
    outcome = record.get("outcome", "error" if code else "ok")
    return outcome == "ok" and "page" in record and _is_int(record.get("total"))


def figures(
    records: Iterable[Mapping[str, Any]], *, search_families: Iterable[str] = SEARCH_FAMILIES
) -> dict[str, Any]:
    """Aggregate figures over call and answer records."""
    families = frozenset(search_families)
    calls = errors = lists = zero = lookups = hits = 0
    by_code: dict[str, int] = {}
    refused: dict[str, int] = {}
    confirmations: dict[str, int] = {}
    latencies: list[float] = []
    # Like the live metric: searches an invocation made until its first reported answer.
    searches: dict[str, int] = {}
    answered: dict[str, int] = {}
    for r in records:
        event = r.get("event", "call")
        if event == "answer":
            key = turn_key(r)
            if key is not None and key not in answered:
                answered[key] = searches.pop(key, 0)
            continue
        if event != "call":
            continue
        calls += 1
        code = r.get("error_code")
        if code in REFUSALS or code in CONFIRMATIONS:  # not run: counted apart, no latency, not an error
            kept = refused if code in REFUSALS else confirmations
            kept[str(code)] = kept.get(str(code), 0) + 1
            continue
        lat = r.get("latency_ms")
        if isinstance(lat, (int, float)) and not isinstance(lat, bool):
            latencies.append(float(lat))
        outcome = r.get("outcome", "error" if code else "ok")
        if outcome == "error":
            errors += 1
            name = str(code or "UNKNOWN")
            by_code[name] = by_code.get(name, 0) + 1
        hit = r.get("cache_hit")
        if isinstance(hit, bool):
            lookups += 1
            hits += int(hit)
        if is_result_list(r):
            lists += 1
            zero += int(r["total"] == 0)
        if r.get("family") in families:
            key = turn_key(r)
            if key is not None and key not in answered:
                searches[key] = searches.get(key, 0) + 1
    n_answered = len(answered)
    executed = calls - sum(refused.values()) - sum(confirmations.values())
    return {
        "calls": calls,
        "executed": executed,
        "refused": sum(refused.values()),
        "refused_by_code": dict(sorted(refused.items())),
        "confirmations": sum(confirmations.values()),
        "confirmations_by_code": dict(sorted(confirmations.items())),
        "errors": errors,
        "error_rate": rate(errors, executed),
        "error_rate_by_code": {code: n / executed for code, n in sorted(by_code.items())} if executed else {},
        "errors_by_code": dict(sorted(by_code.items())),
        "result_lists": lists,
        "zero_results": zero,
        "zero_result_rate": rate(zero, lists),
        "cache_lookups": lookups,
        "cache_hits": hits,
        "cache_hit_rate": rate(hits, lookups),
        "answered_questions": n_answered,
        "searches_per_answered_question": rate(sum(answered.values()), n_answered),
        "latency_ms": {f"p{round(q * 100)}": percentile(latencies, q) for q in QUANTILES},
    }


@dataclass
class Bucket:
    start: datetime
    end: datetime
    figures: dict[str, Any]


def bucketed(
    records: Iterable[Mapping[str, Any]],
    start: datetime,
    end: datetime,
    n: int,
    *,
    time_of: Callable[[Mapping[str, Any]], datetime | None] | None = None,
) -> list[Bucket]:
    """Split [start, end] into ``n`` equal buckets and compute figures in each; a record goes to the bucket of
    ``time_of(record)`` (default: its own time)."""
    n = max(1, n)
    span = (end - start) / n if end > start else timedelta(seconds=1)
    groups: list[list[Mapping[str, Any]]] = [[] for _ in range(n)]
    for r in records:
        t = time_of(r) if time_of is not None else record_time(dict(r))
        if t is None or t < start or t > end:
            continue
        i = min(n - 1, int((t - start) / span)) if span.total_seconds() > 0 else 0
        groups[i].append(r)
    return [Bucket(start + span * i, start + span * (i + 1), figures(g)) for i, g in enumerate(groups)]


def _bar(value: float | None, top: float) -> str:
    if value is None or top <= 0:
        return ""
    filled = round(BAR_WIDTH * min(1.0, value / top))
    return "█" * filled if filled else ("▏" if value > 0 else "")


def pct_text(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.1f}%"


def ms_text(value: float | None) -> str:
    if value is None:
        return "-"
    if value < 1:
        return f"{value:.3f} ms"
    if value < 10_000:
        return f"{value:.1f} ms"
    return f"{value / 1000:.1f} s"


def _label(bucket: Bucket, fine: bool) -> str:
    if fine:
        return bucket.start.strftime("%H:%M:%S.%f")[:-3]
    return bucket.start.strftime("%m-%d %H:%M:%S")


def render(total: Mapping[str, Any], buckets: list[Bucket], *, title: str = "") -> str:
    lat = total["latency_ms"]
    lines = [title] if title else []
    not_run = ", ".join(f"{c} {n}" for c, n in {**total["refused_by_code"], **total["confirmations_by_code"]}.items())
    lines += [
        f"calls {total['calls']}: {total['executed']} executed, {total['refused']} refused by the guard, "
        f"{total['confirmations']} asked for confirmation" + (f" ({not_run})" if not_run else ""),
        f"errors {total['errors']} ({pct_text(total['error_rate']).strip()} of executed calls)",
        f"latency p50 {ms_text(lat['p50'])}, p95 {ms_text(lat['p95'])}, p99 {ms_text(lat['p99'])}",
        f"zero-result rate {pct_text(total['zero_result_rate']).strip()} of {total['result_lists']} result list(s)",
        f"cache hit rate {pct_text(total['cache_hit_rate']).strip()} of {total['cache_lookups']} lookup(s)",
        "searches per answered question "
        + (
            f"{total['searches_per_answered_question']:.2f} over {total['answered_questions']} answer(s)"
            if total["searches_per_answered_question"] is not None
            else "- (no answers logged)"
        ),
    ]
    if total["errors_by_code"]:
        lines.append(
            "errors by code (executed calls): "
            + ", ".join(
                f"{c} {n} ({total['error_rate_by_code'][c] * 100:.1f}%)" for c, n in total["errors_by_code"].items()
            )
        )
    if buckets:
        top_lat = max((b.figures["latency_ms"]["p95"] or 0.0) for b in buckets)
        top_zero = max((b.figures["zero_result_rate"] or 0.0) for b in buckets)
        fine = (buckets[0].end - buckets[0].start).total_seconds() < 1
        lines.append("")
        lines.append(f"{'from (UTC)':<16} {'calls':>6}  {'p95 latency':>11} {'':<{BAR_WIDTH}}  {'zero':>6} ")
        for b in buckets:
            f = b.figures
            p95 = f["latency_ms"]["p95"]
            z = f["zero_result_rate"]
            lines.append(
                f"{_label(b, fine):<16} {f['calls']:>6}  {ms_text(p95):>11} "
                f"{_bar(p95, top_lat):<{BAR_WIDTH}}  {pct_text(z):>6} {_bar(z, max(top_zero, 1e-9))}"
            )
    return "\n".join(lines)


# -- from a call log (``scopegate stats``) ---------------------------------------------------
@dataclass(frozen=True)
class LogStats:
    figures: dict[str, Any]
    buckets: list[Bucket]
    window: dict[str, Any]  # from, until, records, lines, bad_lines

    def as_dict(self) -> dict[str, Any]:
        return {
            "window": self.window,
            "figures": self.figures,
            "buckets": [{"from": b.start.isoformat(), "until": b.end.isoformat(), **b.figures} for b in self.buckets],
        }

    def render(self) -> str:
        w = self.window
        title = f"{w['records']} record(s) from {w['from'] or '-'} to {w['until']}"
        if w["bad_lines"]:
            title += f" ({w['bad_lines']} malformed line(s) skipped)"
        return render(self.figures, self.buckets, title=title)


def stats_from_log(
    paths: Sequence[str | Path], *, window: timedelta | None, until: datetime | None = None, buckets: int = 12
) -> LogStats:
    """Figures over the records within ``window`` (None: all) before ``until`` (default: the newest record)."""
    chosen = read_window(paths, window=window, until=until)
    series = bucketed(chosen.records, chosen.start, chosen.end, buckets) if chosen.start and chosen.records else []
    return LogStats(figures(chosen.records), series, chosen.info())


@dataclass(frozen=True)
class LogWindow:
    """The records of call-log files within a time window, and how the files read."""

    records: list[dict[str, Any]]
    start: datetime | None  # None: no record has a time
    end: datetime
    read: ReadStats

    def info(self) -> dict[str, Any]:
        return {
            "from": self.start.isoformat() if self.start else None,
            "until": self.end.isoformat(),
            "records": len(self.records),
            "lines": self.read.lines,
            "bad_lines": self.read.bad_lines,
        }


def read_window(paths: Sequence[str | Path], *, window: timedelta | None, until: datetime | None) -> LogWindow:
    """The records of ``paths`` within ``window`` (None: all) before ``until`` (default: the newest record)."""
    read = ReadStats()
    records = list(iter_records(paths, stats=read))
    times = [t for t in (record_time(r) for r in records) if t is not None]
    end = until if until is not None else (max(times) if times else datetime.now(UTC))
    first = min(times) if times else None
    start = first
    if window is not None:
        start = end - window
        if first is not None and first > start:
            start = first  # the log is shorter than the window: chart only the part that has data
    chosen = [r for r in records if (t := record_time(r)) is not None and (start is None or t >= start) and t <= end]
    return LogWindow(chosen, start, end, read)
