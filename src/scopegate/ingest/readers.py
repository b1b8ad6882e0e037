"""Streaming readers: one dict per record, bad records reported, never fatal."""

from __future__ import annotations

import csv
import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scopegate.errors import IngestError


@dataclass(frozen=True)
class SourceRecordError:
    """A record that could not be read; ingest counts it and goes on."""

    where: str
    reason: str


def read_jsonl(path: str | Path) -> Iterator[dict[str, Any] | SourceRecordError]:
    try:
        handle = open(path, encoding="utf-8", errors="replace")  # noqa: SIM115 - closed below
    except OSError as exc:
        raise IngestError(f"cannot read {path}: {exc}") from exc
    with handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except ValueError as exc:
                yield SourceRecordError(f"line {number}", f"invalid JSON: {exc.args[0][:80]}")
                continue
            if not isinstance(value, dict):
                yield SourceRecordError(f"line {number}", "not a JSON object")
                continue
            yield value


def read_csv(path: str | Path) -> Iterator[dict[str, Any] | SourceRecordError]:
    # Issue bodies hold multi-line quoted fields far beyond csv's default 128 KiB limit.
    csv.field_size_limit(min(sys.maxsize, 2**31 - 1))
    try:
        handle = open(path, encoding="utf-8", errors="replace", newline="")  # noqa: SIM115
    except OSError as exc:
        raise IngestError(f"cannot read {path}: {exc}") from exc
    with handle:
        reader = csv.DictReader(handle)
        number = 1
        while True:
            try:
                row = next(reader)
            except StopIteration:
                return
            except csv.Error as exc:
                yield SourceRecordError(f"record after line {reader.line_num}", f"invalid CSV: {exc}")
                continue
            number += 1
            if None in row:
                yield SourceRecordError(f"line {reader.line_num}", "more fields than the header")
                continue
            yield dict(row)


def read_records(path: str | Path, fmt: str | None = None) -> Iterator[dict[str, Any] | SourceRecordError]:
    """Pick the reader from ``fmt`` or the file suffix (.jsonl/.ndjson/.json → JSONL, .csv → CSV)."""
    kind = (fmt or Path(path).suffix.lstrip(".")).lower()
    if kind in {"jsonl", "ndjson", "json"}:
        return read_jsonl(path)
    if kind == "csv":
        return read_csv(path)
    raise IngestError(f"unknown input format {kind!r}; use jsonl or csv")
