"""The guard's health figures computed from a call log, with a small text chart.

Same definitions as :mod:`scopegate.guard.metrics`: zero-result rate over
successful result-list calls, searches per answered question, latency
percentiles, error rate by code, cache hit rate.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from scopegate.guard.logfile import record_time
from scopegate.guard.metrics import QUANTILES, percentile, rate

REFUSALS = frozenset({"CALL_LIMIT", "RATE_LIMITED"})
BAR_WIDTH = 30


def _turn_key(record: Mapping[str, Any]) -> str | None:
    inv, ses = record.get("invocation_id"), record.get("session_id")
    if isinstance(inv, str) and inv:
        return f"i:{inv}"
    if isinstance(ses, str) and ses:
        return f"s:{ses}"
    return None


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def figures(records: Iterable[Mapping[str, Any]], *, search_families: Iterable[str] = ("search",)) -> dict[str, Any]:
    """Aggregate figures over call and answer records."""
    families = frozenset(search_families)
    calls = errors = lists = zero = lookups = hits = 0
    by_code: dict[str, int] = {}
    latencies: list[float] = []
    # Like the live metric: searches an invocation made until its first reported answer.
    searches: dict[str, int] = {}
    answered: dict[str, int] = {}
    for r in records:
        event = r.get("event", "call")
        if event == "answer":
            key = _turn_key(r)
            if key is not None and key not in answered:
                answered[key] = searches.pop(key, 0)
            continue
        if event != "call":
            continue
        calls += 1
        lat = r.get("latency_ms")
        if isinstance(lat, (int, float)) and not isinstance(lat, bool):
            latencies.append(float(lat))
        code = r.get("error_code")
        outcome = r.get("outcome", "error" if code else "ok")
        if outcome == "error":
            errors += 1
            name = str(code or "UNKNOWN")
            by_code[name] = by_code.get(name, 0) + 1
        hit = r.get("cache_hit")
        if isinstance(hit, bool):
            lookups += 1
            hits += int(hit)
        if outcome == "ok" and "page" in r and _is_int(r.get("total")):
            lists += 1
            zero += int(r["total"] == 0)
        if r.get("family") in families and code not in REFUSALS:
            key = _turn_key(r)
            if key is not None and key not in answered:
                searches[key] = searches.get(key, 0) + 1
    n_answered = len(answered)
    return {
        "calls": calls,
        "errors": errors,
        "error_rate": rate(errors, calls),
        "error_rate_by_code": {code: n / calls for code, n in sorted(by_code.items())} if calls else {},
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


def bucketed(records: Iterable[Mapping[str, Any]], start: datetime, end: datetime, n: int) -> list[Bucket]:
    """Split [start, end] into ``n`` equal buckets and compute figures in each."""
    n = max(1, n)
    span = (end - start) / n if end > start else timedelta(seconds=1)
    groups: list[list[Mapping[str, Any]]] = [[] for _ in range(n)]
    for r in records:
        t = record_time(dict(r))
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


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.1f}%"


def _ms(value: float | None) -> str:
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
    lines += [
        f"calls {total['calls']}, errors {total['errors']} ({_pct(total['error_rate']).strip()})",
        f"latency p50 {_ms(lat['p50']).strip()}, p95 {_ms(lat['p95']).strip()}, p99 {_ms(lat['p99']).strip()}",
        f"zero-result rate {_pct(total['zero_result_rate']).strip()} of {total['result_lists']} result list(s)",
        f"cache hit rate {_pct(total['cache_hit_rate']).strip()} of {total['cache_lookups']} lookup(s)",
        "searches per answered question "
        + (
            f"{total['searches_per_answered_question']:.2f} over {total['answered_questions']} answer(s)"
            if total["searches_per_answered_question"] is not None
            else "- (no answers logged)"
        ),
    ]
    if total["errors_by_code"]:
        lines.append(
            "errors by code: "
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
                f"{_label(b, fine):<16} {f['calls']:>6}  {_ms(p95):>11} "
                f"{_bar(p95, top_lat):<{BAR_WIDTH}}  {_pct(z):>6} {_bar(z, max(top_zero, 1e-9))}"
            )
    return "\n".join(lines)
