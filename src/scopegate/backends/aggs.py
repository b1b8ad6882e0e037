"""Aggregation request bodies and response parsing for OpenSearch and Elasticsearch. No I/O.

One ``_search`` with ``size: 0`` per call::

    bool.filter: term tenant | terms groups | term per chosen filter | range on the date field
    aggs.counts: terms (field, only the enumerated values, size = their number, per-bucket error)
               | date_histogram (calendar_interval day/week/month, time_zone UTC, yyyy-MM-dd keys)
    aggs.no_value: missing (terms only)
    track_total_hits: true (the aggregation visits every match anyway), timeout

Nothing in a body comes from the model but enumerated values it picked and dates the server
parsed: no scripts, no field names but the spec's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scopegate.backends.dsl import format_timeout, parse_total, partial_reason, scope_filters
from scopegate.backends.fieldmap import IDENTITY, FieldMap
from scopegate.search.aggregation import AggregationQuery, RawAggregation, RawBucket
from scopegate.search.dates import day_of_epoch_ms, epoch_ms
from scopegate.search.spec import SearchSpec

CALENDAR_INTERVALS = {"day": "day", "week": "week", "month": "month"}


def aggregation_filters(spec: SearchSpec, query: AggregationQuery, fm: FieldMap = IDENTITY) -> list[dict[str, Any]]:
    """Scope, the chosen filters and the time range ``[start, end)`` as filter clauses (engine paths of ``fm``)."""
    filters = scope_filters(spec, query.scope, fm)
    filters += [{"term": {fm.q(name): value}} for name, value in query.filters]
    if query.date_field is not None and query.start is not None and query.end is not None:
        filters.append(
            {
                "range": {
                    # Epoch milliseconds: a date-only bound would be widened to the end of its day for some operators.
                    fm.q(query.date_field): {
                        "gte": epoch_ms(query.start),
                        "lt": epoch_ms(query.end),
                        "format": "epoch_millis",
                    }
                }
            }
        )
    return filters


def aggregation_body(spec: SearchSpec, query: AggregationQuery, fm: FieldMap = IDENTITY) -> dict[str, Any]:
    """The ``_search`` body counting ``query`` (see the module docstring); ``fm``: an existing index's paths."""
    aggs: dict[str, Any]
    field = fm.q(query.field)
    if query.kind == "terms":
        aggs = {
            "counts": {
                "terms": {
                    "field": field,
                    "size": max(1, len(query.values)),
                    "include": list(query.values),
                    "min_doc_count": 1,
                    "show_term_doc_count_error": True,
                }
            },
            "no_value": {"missing": {"field": field}},
        }
    else:
        assert query.interval is not None
        aggs = {
            "counts": {
                "date_histogram": {
                    "field": field,
                    "calendar_interval": CALENDAR_INTERVALS[query.interval],
                    "time_zone": "UTC",
                    "min_doc_count": 1,
                }
            }
        }
    return {
        "size": 0,
        "track_total_hits": True,
        "timeout": format_timeout(query.engine_timeout_s),
        "query": {"bool": {"filter": aggregation_filters(spec, query, fm)}},
        "aggs": aggs,
    }


def _int(value: Any) -> int:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0


def parse_aggregation_response(query: AggregationQuery, response: Mapping[str, Any]) -> RawAggregation:
    """Engine response -> :class:`RawAggregation` (bucket errors kept, partial flagged)."""
    total, _relation = parse_total(response.get("hits") or {})
    aggs = response.get("aggregations") or {}
    counts: Mapping[str, Any] = aggs.get("counts") or {}
    buckets: list[RawBucket] = []
    for bucket in counts.get("buckets") or []:
        key = str(bucket.get("key")) if query.kind == "terms" else day_of_epoch_ms(bucket.get("key")).isoformat()
        error = max(0, _int(bucket.get("doc_count_error_upper_bound")))
        buckets.append(RawBucket(key, _int(bucket.get("doc_count")), error))
    reason = partial_reason(response)
    took = response.get("took")
    return RawAggregation(
        total=total,
        buckets=tuple(buckets),
        missing=_int((aggs.get("no_value") or {}).get("doc_count")),
        error_bound=max(0, _int(counts.get("doc_count_error_upper_bound"))),
        partial=reason is not None,
        partial_reason=reason,
        took_ms=float(took) if isinstance(took, int | float) else None,
    )


def mapping_problems(spec: SearchSpec, mapping: Mapping[str, Any], fields: list[str]) -> list[tuple[str, str]]:
    """(field, why) for each of ``fields`` that a ``_mapping`` response does not map as countable."""
    problems: list[tuple[str, str]] = []
    for index, body in sorted(mapping.items()):
        props = ((body or {}).get("mappings") or {}).get("properties") or {}
        for name in fields:
            wanted = "date" if name == spec.date_field else "keyword"
            found = (props.get(name) or {}).get("type")
            if found != wanted:
                what = f"is mapped as {found}" if found else "is not mapped"
                problems.append((name, f"{what} in index {index!r}, not as {wanted}; re-index to count by it"))
    return problems
