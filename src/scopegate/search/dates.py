"""Dates of documents and of time ranges: one normal form, UTC, and calendar buckets. Pure.

A document's date field is stored as RFC 3339 in UTC with whole seconds
(``2025-03-04T10:15:00Z``) by every backend, so a fetched document shows the same text on
each engine. Accepted on ingest: RFC 3339 / ISO 8601 date-times with ``Z`` or an offset, a
plain ``YYYY-MM-DD`` (midnight UTC), :class:`datetime.datetime` (naive means UTC) and
:class:`datetime.date`. Anything else is refused with a reason, never guessed.

Buckets are calendar days, ISO weeks (starting on Monday) and calendar months, in UTC: the
same boundaries Elasticsearch's ``calendar_interval`` uses with ``time_zone: UTC``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from typing import Any, Literal

from scopegate.text import preview

Interval = Literal["day", "week", "month"]
INTERVALS: tuple[Interval, ...] = ("day", "week", "month")
MIN_YEAR = 1000
MAX_YEAR = 9999
UTC = dt.UTC


class BadDate(ValueError):
    """A value is not a date this module accepts (the message says why, without echoing it at length)."""


def parse_datetime(value: Any) -> dt.datetime:
    """``value`` as an aware UTC datetime with whole seconds; raises :class:`BadDate`."""
    if isinstance(value, dt.datetime):
        moment = value if value.tzinfo is not None else value.replace(tzinfo=UTC)
    elif isinstance(value, dt.date):
        moment = dt.datetime(value.year, value.month, value.day, tzinfo=UTC)
    elif isinstance(value, str):
        text = value.strip()
        if not 10 <= len(text) <= 40:
            raise BadDate(f"{preview(value)} is not an RFC 3339 date or date-time")
        try:
            moment = dt.datetime.fromisoformat(text[:-1] + "+00:00" if text[-1:] in "zZ" else text)
        except ValueError:
            raise BadDate(f"{preview(value)} is not an RFC 3339 date or date-time") from None
        if moment.tzinfo is None:
            if len(text) != 10:  # a date-time without an offset is ambiguous
                raise BadDate(f"{preview(value)} has no time zone (add Z or an offset such as +02:00)")
            moment = moment.replace(tzinfo=UTC)
    else:
        raise BadDate(f"{type(value).__name__} is not a date")
    moment = moment.astimezone(UTC).replace(microsecond=0)
    if not MIN_YEAR <= moment.year <= MAX_YEAR:
        raise BadDate(f"year {moment.year} is out of range ({MIN_YEAR}-{MAX_YEAR})")
    return moment


def normalise_date(value: Any) -> str:
    """The stored form: ``YYYY-MM-DDTHH:MM:SSZ`` (UTC, whole seconds); raises :class:`BadDate`."""
    return format_datetime(parse_datetime(value))


def date_problem(field: str | None, record: Mapping[str, Any]) -> str | None:
    """Why ``record``'s date ``field`` cannot be stored (blank or absent is fine: no value), or None."""
    if field is None:
        return None
    value = record.get(field)
    if value is None or value == "":
        return None
    try:
        parse_datetime(value)
    except BadDate as exc:
        return f"{field}: {exc}"
    return None


def format_datetime(moment: dt.datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def stored_value(value: Any) -> Any:
    """A value read back from an engine in the stored form (tantivy returns datetimes)."""
    if isinstance(value, dt.datetime):
        return format_datetime(value if value.tzinfo is not None else value.replace(tzinfo=UTC))
    return value


def parse_day(value: Any) -> dt.date:
    """A ``YYYY-MM-DD`` argument; raises :class:`BadDate`."""
    if not isinstance(value, str) or len(value.strip()) != 10:
        raise BadDate(f"{preview(value)} is not a date written YYYY-MM-DD")
    try:
        day = dt.date.fromisoformat(value.strip())
    except ValueError:
        raise BadDate(f"{preview(value)} is not a date written YYYY-MM-DD") from None
    if not MIN_YEAR <= day.year <= MAX_YEAR:
        raise BadDate(f"year {day.year} is out of range ({MIN_YEAR}-{MAX_YEAR})")
    return day


def midnight(day: dt.date) -> dt.datetime:
    return dt.datetime(day.year, day.month, day.day, tzinfo=UTC)


def epoch_ms(day: dt.date) -> int:
    return int(midnight(day).timestamp() * 1000)


def day_of_epoch_ms(value: Any) -> dt.date:
    """The UTC day of an engine bucket key in epoch milliseconds."""
    return dt.datetime.fromtimestamp(float(value) / 1000.0, tz=UTC).date()


def bucket_start(day: dt.date, interval: Interval) -> dt.date:
    """The first day of the bucket holding ``day``: itself, its ISO week's Monday, or the 1st of its month."""
    if interval == "day":
        return day
    if interval == "week":
        return day - dt.timedelta(days=day.weekday())
    return day.replace(day=1)


def next_bucket(start: dt.date, interval: Interval) -> dt.date:
    if interval == "day":
        return start + dt.timedelta(days=1)
    if interval == "week":
        return start + dt.timedelta(days=7)
    return (start.replace(day=28) + dt.timedelta(days=4)).replace(day=1)


def bucket_starts(first: dt.date, end: dt.date, interval: Interval, *, limit: int) -> tuple[dt.date, ...] | None:
    """Starts of every bucket that overlaps ``[first, end)``; None when there are more than ``limit``."""
    out: list[dt.date] = []
    start = bucket_start(first, interval)
    while start < end:
        if len(out) >= limit:
            return None
        out.append(start)
        start = next_bucket(start, interval)
    return tuple(out)


def roll_up(day_counts: Iterable[tuple[dt.date, int]], interval: Interval) -> dict[dt.date, int]:
    """Day counts summed into ``interval`` buckets, keyed by bucket start."""
    out: dict[dt.date, int] = {}
    for day, count in day_counts:
        key = bucket_start(day, interval)
        out[key] = out.get(key, 0) + int(count)
    return out


def fill(starts: Iterable[dt.date], counts: Mapping[dt.date, int]) -> list[tuple[dt.date, int]]:
    """Every bucket of ``starts`` with its count (0 when the engine had none)."""
    return [(start, int(counts.get(start, 0))) for start in starts]
