"""The typed aggregation tool's surface: its settings, its arguments, and the engine-neutral query. Pure.

The model counts documents by *one* enumerated field (a filter of the search spec) or by day,
week or month of the spec's date field, narrowed by the same enumerated filters as the search
tool and an optional bounded time range. It never names a field that is not enumerated here,
never writes a script, a query or an aggregation: the server builds one terms or date-histogram
aggregation inside the caller's scope (:mod:`scopegate.backends.aggs`, and
:meth:`scopegate.backends.embedded.EmbeddedBackend.aggregate_sync`).

:class:`AggregationSpec` is a typed model like the search spec (a config file's
``search_tools[].aggregate`` entry is the same keys); :func:`resolve` checks it against the
search spec and fills the defaults that depend on it.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import Field

from scopegate.errors import BAD_ARGUMENTS, ConfigError, tool_error
from scopegate.scope import Scope
from scopegate.search.dates import INTERVALS, BadDate, Interval, bucket_starts, parse_day
from scopegate.search.spec import FieldName, SearchSpec, Text, ToolName
from scopegate.search.validate import validate_filters
from scopegate.text import preview
from scopegate.validation import model

RANGE_ARGUMENTS = ("since", "until", "last_days")
FIXED_ARGUMENTS = ("group_by", "interval", *RANGE_ARGUMENTS)
MAX_BUCKETS = 100
MAX_RANGE_DAYS = 3660


@model
class AggregationSpec:
    """What the aggregation tool lets the model count by, and its bounds (defaults come from the search spec)."""

    name: ToolName | None = Field(
        default=None, description="Tool name; default: count_ and the search tool's name without search_."
    )
    description: Text | None = Field(default=None, description="What the tool counts, as the model reads it.")
    group_by: tuple[FieldName, ...] = Field(
        default=(), description="Fields the model may count by: filter names and/or the date field; default: all."
    )
    intervals: Annotated[tuple[Literal["day", "week", "month"], ...], Field(min_length=1)] = Field(
        default=INTERVALS, description="Bucket sizes allowed when counting by the date field (UTC; weeks from Monday)."
    )
    max_buckets: Annotated[int, Field(ge=1, le=MAX_BUCKETS, strict=True)] = Field(
        default=31, description="Most rows a result lists; the rest is counted under 'other'."
    )
    max_range_days: Annotated[int, Field(ge=1, le=MAX_RANGE_DAYS, strict=True)] = Field(
        default=366, description="Longest time range, in days."
    )


@dataclass(frozen=True)
class AggregationSettings:
    """An :class:`AggregationSpec` resolved against its search spec: every default filled, every name checked."""

    spec: SearchSpec
    name: str
    description: str
    group_by: tuple[str, ...]
    intervals: tuple[Interval, ...]
    max_buckets: int
    max_range_days: int

    @property
    def date_field(self) -> str | None:
        return self.spec.date_field

    @property
    def counts_by_date(self) -> bool:
        return self.spec.date_field is not None and self.spec.date_field in self.group_by

    def argument_names(self) -> tuple[str, ...]:
        names = ["group_by"]
        if self.counts_by_date:
            names.append("interval")
        names += [f.name for f in self.spec.filters]
        if self.spec.date_field is not None:
            names += RANGE_ARGUMENTS
        return tuple(names)

    def json_schema(self) -> dict[str, Any]:
        """The parameters the model sees: group_by, interval, the search filters, a time range. Nothing else."""
        date = self.spec.date_field
        props: dict[str, Any] = {
            "group_by": {
                "type": "string",
                "enum": list(self.group_by),
                "description": "Count per value of this field"
                + (f", or per {'/'.join(self.intervals)} of {date} (then set interval)" if self.counts_by_date else "")
                + ".",
            }
        }
        if self.counts_by_date:
            props["interval"] = {
                "type": "string",
                "enum": list(self.intervals),
                # No "default": a client that sends every property (strict function calling) would send it
                # with every count; the server picks the first interval when it is left out.
                "description": f"Only when group_by is {date}: bucket size (calendar day, ISO week from Monday "
                f"or month, UTC); default {self.intervals[0]}. Ignored for other group_by values.",
            }
        props.update(self.spec.filter_properties())
        if date is not None:
            props["since"] = {
                "type": "string",
                "format": "date",
                "description": f"Count only documents whose {date} is on or after this day (YYYY-MM-DD, UTC).",
            }
            props["until"] = {
                "type": "string",
                "format": "date",
                "description": f"Count only documents whose {date} is on or before this day (YYYY-MM-DD, UTC); "
                "default: today.",
            }
            props["last_days"] = {
                "type": "integer",
                "minimum": 1,
                "maximum": self.max_range_days,
                "description": "Instead of since/until: the last N days, today included.",
            }
        return {"type": "object", "properties": props, "required": ["group_by"], "additionalProperties": False}


def default_name(search_tool: str) -> str:
    """``search_tickets`` -> ``count_tickets``."""
    return f"count_{search_tool.removeprefix('search_') or search_tool}"[:64]


def resolve(spec: SearchSpec, settings: AggregationSpec | None = None) -> AggregationSettings:
    """Check ``settings`` against ``spec``; raises :class:`ConfigError` naming what is wrong."""
    cfg = settings or AggregationSpec()
    where = f"aggregation tool of {spec.name!r}"
    filter_names = tuple(f.name for f in spec.filters)
    countable = (*filter_names, *((spec.date_field,) if spec.date_field else ()))
    group_by = cfg.group_by or countable
    if not group_by:
        raise ConfigError(f"{where}: the search spec has no filters and no date_field, so there is nothing to count by")
    unknown = [g for g in group_by if g not in countable]
    if unknown:
        raise ConfigError(
            f"{where}: cannot count by {', '.join(map(repr, unknown))}: only enumerated filters and the date field "
            f"can be counted by ({', '.join(countable) or 'none'})"
        )
    if len(set(group_by)) != len(group_by):
        raise ConfigError(f"{where}: group_by lists a field twice")
    clashes = sorted(set(filter_names) & set(FIXED_ARGUMENTS))
    if clashes:
        raise ConfigError(f"{where}: filter name(s) {clashes} clash with the aggregation tool's own arguments")
    name = cfg.name or default_name(spec.name)
    if name in (spec.name, spec.fetch_name):
        raise ConfigError(f"{where}: the tool name {name!r} is already the search or fetch tool's")
    description = cfg.description or (
        "Count this customer's documents per value of one field"
        + (" or per day, week or month" if spec.date_field in group_by else "")
        + ", optionally filtered and limited to a time range. Returns a small table of counts."
    )
    return AggregationSettings(
        spec=spec,
        name=name,
        description=description,
        group_by=tuple(group_by),
        intervals=tuple(dict.fromkeys(cfg.intervals)),
        max_buckets=cfg.max_buckets,
        max_range_days=cfg.max_range_days,
    )


# -- validated arguments and the engine-neutral query ---------------------------------------------
@dataclass(frozen=True)
class AggregationRequest:
    """Validated model arguments. Holds no scope: that is added server-side."""

    group_by: str
    interval: Interval | None = None  # set exactly when counting by the date field
    filters: tuple[tuple[str, str], ...] = ()
    since: dt.date | None = None  # inclusive
    until: dt.date | None = None  # inclusive

    def filters_dict(self) -> dict[str, str]:
        return dict(self.filters)

    def range_dict(self) -> dict[str, str]:
        if self.since is None or self.until is None:
            return {}
        return {"since": self.since.isoformat(), "until": self.until.isoformat()}


@dataclass(frozen=True)
class AggregationQuery:
    """Request + scope + bounds, for a backend: one terms or one date aggregation inside the scope."""

    scope: Scope
    filters: tuple[tuple[str, str], ...]
    field: str  # the field counted by
    kind: Literal["terms", "date"]
    values: tuple[str, ...] = ()  # terms: the enumerated values counted
    interval: Interval | None = None  # date: the bucket size
    date_field: str | None = None  # the field the time range applies to
    start: dt.date | None = None  # time range [start, end), whole UTC days
    end: dt.date | None = None
    engine_timeout_s: float = 1.0
    client_timeout_s: float = 2.5


@dataclass(frozen=True)
class RawBucket:
    """One bucket as the engine counted it; ``error`` bounds how many it may have missed (0: exact)."""

    key: str  # a value, or a bucket's first day (YYYY-MM-DD)
    count: int
    error: int = 0


@dataclass(frozen=True)
class RawAggregation:
    """What a backend counted: every in-scope document matching the filters and range is in ``total``."""

    total: int
    buckets: tuple[RawBucket, ...]
    missing: int = 0  # documents without a value in the counted field
    error_bound: int = 0  # the engine's doc_count_error_upper_bound (0: exact)
    partial: bool = False
    partial_reason: str | None = None
    took_ms: float | None = None


def _whole(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)  # function-calling models send JSON numbers as floats
    return None


def _bad(message: str, **extra: Any) -> dict[str, Any]:
    return tool_error(BAD_ARGUMENTS, message, **extra)


def _time_range(
    settings: AggregationSettings, args: Mapping[str, Any], today: dt.date
) -> tuple[dt.date, dt.date] | dict[str, Any] | None:
    """(since, until), None when no range was asked for, or an error envelope."""
    given = {name: args.get(name) for name in RANGE_ARGUMENTS if args.get(name) is not None}
    if not given:
        return None
    longest = settings.max_range_days
    if "last_days" in given:
        if len(given) > 1:
            return _bad("give either last_days or since/until, not both")
        days = _whole(given["last_days"])
        if days is None or not 1 <= days <= longest:
            return _bad(f"last_days must be a whole number from 1 to {longest}", field="last_days")
        return today - dt.timedelta(days=days - 1), today
    try:
        until = parse_day(given["until"]) if "until" in given else today
        since = parse_day(given["since"]) if "since" in given else until - dt.timedelta(days=longest - 1)
    except BadDate as exc:
        return _bad(f"{exc}; write dates as YYYY-MM-DD")
    if since > until:
        return _bad(f"since ({since}) is after until ({until})")
    if (until - since).days + 1 > longest:
        return _bad(
            f"the range {since} to {until} is {(until - since).days + 1} days; the limit is {longest}. "
            "Ask for a shorter range."
        )
    return since, until


def validate_aggregation_args(
    settings: AggregationSettings, args: Mapping[str, Any], today: dt.date
) -> AggregationRequest | dict[str, Any]:
    """The model's arguments as an :class:`AggregationRequest`, or an error envelope. Never raises."""
    allowed = settings.argument_names()
    if not isinstance(args, Mapping):
        return _bad("arguments must be an object", allowed=list(allowed))
    unknown = sorted(str(k)[:64] for k in args if k not in allowed)
    if unknown:
        return _bad(
            f"unknown argument(s): {', '.join(unknown)}. Scope is set by the server, not by arguments.",
            allowed=list(allowed),
        )
    group_by = args.get("group_by")
    if not isinstance(group_by, str) or group_by not in settings.group_by:
        return _bad(
            f"group_by must be one of the allowed fields, got {preview(group_by)}",
            field="group_by",
            allowed=list(settings.group_by),
        )
    by_date = group_by == settings.date_field
    interval: Interval | None = None
    raw_interval = args.get("interval")
    if by_date:
        raw_interval = settings.intervals[0] if raw_interval is None else raw_interval
        if raw_interval not in settings.intervals:
            return _bad(
                f"interval must be one of {', '.join(settings.intervals)}, got {preview(raw_interval)}",
                field="interval",
                allowed=list(settings.intervals),
            )
        interval = next(i for i in settings.intervals if i == raw_interval)
    elif raw_interval is not None and raw_interval not in settings.intervals:
        return _bad(f"interval only applies when group_by is {settings.date_field}; leave it out", field="interval")
    # An allowed interval with another group_by is ignored: clients that send every property send one.
    filters = validate_filters(settings.spec, args)
    if isinstance(filters, dict):
        return filters
    window = _time_range(settings, args, today)
    if isinstance(window, dict):
        return window
    if by_date:
        if window is None:
            return _bad(f"counting by {group_by} needs a time range: give since/until or last_days")
        assert interval is not None
        starts = bucket_starts(window[0], window[1] + dt.timedelta(days=1), interval, limit=settings.max_buckets)
        if starts is None:
            coarser = [i for i in settings.intervals if INTERVALS.index(i) > INTERVALS.index(interval)]
            advice = f"use interval {coarser[0]} or a shorter range" if coarser else "use a shorter range"
            return _bad(
                f"{window[0]} to {window[1]} by {interval} is more than {settings.max_buckets} buckets; {advice}",
                field="interval",
            )
    since, until = window if window is not None else (None, None)
    return AggregationRequest(group_by=group_by, interval=interval, filters=filters, since=since, until=until)


def build_query(settings: AggregationSettings, request: AggregationRequest, scope: Scope) -> AggregationQuery:
    """Request + scope + the spec's bounds. Pure."""
    spec = settings.spec
    by_date = request.interval is not None
    chosen = spec.filter_named(request.group_by)
    has_range = request.since is not None and request.until is not None
    return AggregationQuery(
        scope=scope,
        filters=request.filters,
        field=request.group_by,
        kind="date" if by_date else "terms",
        values=() if by_date or chosen is None else tuple(chosen.allowed),
        interval=request.interval,
        date_field=spec.date_field if has_range else None,
        start=request.since if has_range else None,
        end=request.until + dt.timedelta(days=1) if request.until is not None and has_range else None,
        engine_timeout_s=spec.engine_timeout_s,
        client_timeout_s=spec.client_timeout_s,
    )
