"""Reading call-log files back: JSON lines, time filters, relative times."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from scopegate.errors import ConfigError

MAX_LINE_BYTES = 1_000_000
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_duration(text: str) -> timedelta:
    """``"90s"``, ``"15m"``, ``"1h"``, ``"2d"``, ``"1w"``."""
    match = _DURATION.match(text)
    if not match:
        raise ConfigError(f"not a duration: {text!r} (use e.g. 30m, 1h, 2d)")
    seconds = float(match.group(1)) * _UNITS[match.group(2)]
    if seconds <= 0:
        raise ConfigError("a duration must be positive")
    return timedelta(seconds=seconds)


def parse_time(text: str, *, now: datetime | None = None) -> datetime:
    """An ISO 8601 time (naive means UTC) or a duration ago (``"2h"``)."""
    try:
        return (now or datetime.now(UTC)) - parse_duration(text)
    except ConfigError:
        pass
    try:
        value = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError as exc:
        raise ConfigError(f"not a time: {text!r} (use ISO 8601 or e.g. 2h for two hours ago)") from exc
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def record_time(record: dict[str, Any]) -> datetime | None:
    ts = record.get("ts")
    if not isinstance(ts, str):
        return None
    try:
        value = datetime.fromisoformat(ts.replace("Z", "+00:00"))
    except ValueError:
        return None
    return value if value.tzinfo else value.replace(tzinfo=UTC)


@dataclass
class ReadStats:
    lines: int = 0
    bad_lines: int = 0
    records: int = 0


def iter_records(
    paths: Iterable[str | Path],
    *,
    since: datetime | None = None,
    until: datetime | None = None,
    stats: ReadStats | None = None,
) -> Iterator[dict[str, Any]]:
    """Records of the given files in file order; malformed or oversized lines are counted and skipped.

    Rotated files are read in the order given: pass ``calls.jsonl.2 calls.jsonl.1 calls.jsonl``
    for oldest first (the order only matters for ties when deduplicating).
    """
    counts = stats if stats is not None else ReadStats()
    for path in paths:
        p = Path(path)
        if not p.is_file():
            raise ConfigError(f"no such log file: {p}")
        with p.open("rb") as fh:
            for raw in fh:
                counts.lines += 1
                if len(raw) > MAX_LINE_BYTES:
                    counts.bad_lines += 1
                    continue
                try:
                    record = json.loads(raw)
                except ValueError:
                    counts.bad_lines += 1
                    continue
                if not isinstance(record, dict):
                    counts.bad_lines += 1
                    continue
                if since is not None or until is not None:
                    t = record_time(record)
                    if t is None or (since is not None and t < since) or (until is not None and t > until):
                        continue
                counts.records += 1
                yield record
