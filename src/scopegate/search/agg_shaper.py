"""Raw engine counts -> the small table a model reads, with honest totals and a hint. Pure.

* Counting by a field: one row per allowed value the engine found, largest first (ties by
  value), at most ``max_buckets``; ``other`` counts the documents of the values not listed
  (beyond the row limit, or a stored value outside the allowed list: such values are never
  shown, they are document data); ``no_value`` the documents without the field. Rows, ``other``
  and ``no_value`` add up to ``total``.
* Counting by day, week or month: one row per bucket of the range, in order, zeros included.
* A count the engine may have under-counted (terms over several shards) is shown as
  ``"at least N"`` in ``count_text`` and the result says ``approximate``.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from scopegate.search.aggregation import AggregationRequest, AggregationSettings, RawAggregation, RawBucket
from scopegate.search.dates import bucket_starts, fill

NOTE = "Counts of the documents this session may see; row keys are the field's allowed values or bucket start days."
HINT_ZERO = "Nothing matches: drop a filter or widen the time range."
HINT_MORE_ROWS = "Only the {n} largest values are listed; 'other' counts the rest. Add a filter to see them."
HINT_OUTSIDE = "'other' includes documents whose {field} is not one of the allowed values."
HINT_APPROXIMATE = "Some counts are lower bounds (the engine counted shards separately)."
HINT_READ = "To read the documents of a row, call {search} with {field} set to its value."


def _row(label: str, bucket: RawBucket) -> dict[str, Any]:
    row: dict[str, Any] = {label: bucket.key, "count": bucket.count}
    if bucket.error > 0:
        row["count_text"] = f"at least {bucket.count}"
    return row


def _terms_rows(
    settings: AggregationSettings, request: AggregationRequest, raw: RawAggregation
) -> tuple[list[dict[str, Any]], int, list[str]]:
    chosen = settings.spec.filter_named(request.group_by)
    allowed = set(chosen.allowed) if chosen is not None else set()
    counted: dict[str, RawBucket] = {}
    for bucket in raw.buckets:
        if bucket.key in allowed and bucket.count > 0:
            seen = counted.get(bucket.key)
            counted[bucket.key] = bucket if seen is None else RawBucket(bucket.key, seen.count + bucket.count)
    ranked = sorted(counted.values(), key=lambda b: (-b.count, b.key))
    shown = ranked[: settings.max_buckets]
    beyond = sum(b.count for b in ranked[settings.max_buckets :])
    outside = max(0, raw.total - raw.missing - sum(b.count for b in ranked))
    hints = []
    if beyond:
        hints.append(HINT_MORE_ROWS.format(n=settings.max_buckets))
    if outside:
        hints.append(HINT_OUTSIDE.format(field=request.group_by))
    return [_row(request.group_by, b) for b in shown], beyond + outside, hints


def _date_rows(settings: AggregationSettings, request: AggregationRequest, raw: RawAggregation) -> list[dict[str, Any]]:
    assert request.interval is not None and request.since is not None and request.until is not None
    starts = bucket_starts(
        request.since, request.until + dt.timedelta(days=1), request.interval, limit=settings.max_buckets
    )
    counts: dict[dt.date, int] = {}
    errors: dict[dt.date, int] = {}
    for bucket in raw.buckets:
        day = dt.date.fromisoformat(bucket.key)
        counts[day] = counts.get(day, 0) + bucket.count
        errors[day] = max(errors.get(day, 0), bucket.error)
    return [
        _row(request.interval, RawBucket(start.isoformat(), count, errors.get(start, 0)))
        for start, count in fill(starts or (), counts)
    ]


def shape_aggregation(
    settings: AggregationSettings, request: AggregationRequest, raw: RawAggregation
) -> dict[str, Any]:
    """The result the model reads (bounded: at most ``max_buckets`` rows of short keys and numbers)."""
    out: dict[str, Any] = {"status": "ok", "group_by": request.group_by}
    if request.interval is not None:
        out["interval"] = request.interval
    out["filters"] = request.filters_dict()
    out.update(request.range_dict())
    out["total"] = raw.total
    out["total_text"] = str(raw.total)
    hints: list[str] = []
    if request.interval is not None:
        rows = _date_rows(settings, request, raw)
        other = 0
    else:
        rows, other, hints = _terms_rows(settings, request, raw)
    out["buckets"] = rows
    out["other"] = other
    if request.interval is None:
        out["no_value"] = raw.missing
    approximate = raw.error_bound > 0 or any("count_text" in r for r in rows)
    if approximate:
        out["approximate"] = True
        hints.append(HINT_APPROXIMATE)
    if raw.total == 0:
        hints = [HINT_ZERO]
    elif not hints and request.interval is None:
        hints = [HINT_READ.format(search=settings.spec.name, field=request.group_by)]
    if hints:
        out["hint"] = " ".join(hints)
    if raw.partial:
        out["partial"] = True
        out["partial_reason"] = raw.partial_reason or "the engine returned partial counts"
    out["note"] = NOTE
    return out
