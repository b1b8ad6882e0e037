"""Checks of a source before anything is written: the mapped columns exist, filter values are allowed.

A CSV without the mapped id column used to fail every row alone ("missing ticket_id", 2,503 of 2,503);
a value outside a filter's allowed list (``Resolved`` for ``open|pending|solved|closed``) was stored and
could never be matched by that filter. :func:`check_columns` refuses the first up front, naming the
columns the source has; :func:`precheck` counts the second, per filter and value. A source that can be
read only once (``cat shards | scopegate ingest IDX /dev/stdin``) is checked in the same pass that
ingests it (:func:`precheck_stream`): its columns from the first records, its counts as it goes.
"""

from __future__ import annotations

import csv
import os
import stat
import sys
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from itertools import chain, islice
from pathlib import Path
from typing import Any

from scopegate.errors import IngestError
from scopegate.ingest.mapping import FieldMapping
from scopegate.ingest.readers import SourceRecordError, read_jsonl, read_records
from scopegate.search.spec import SearchSpec

# JSONL has no header: the columns are the keys seen in the first records.
JSONL_SAMPLE = 1000
MAX_LISTED_VALUES = 20


def _kind(path: str | Path, fmt: str | None) -> str:
    return (fmt or Path(path).suffix.lstrip(".")).lower()


def source_columns(path: str | Path, fmt: str | None = None, *, sample: int = JSONL_SAMPLE) -> tuple[str, ...]:
    """The columns of ``path``: a CSV's header, or the keys of the first ``sample`` JSONL objects, in order."""
    if _kind(path, fmt) == "csv":
        csv.field_size_limit(min(sys.maxsize, 2**31 - 1))
        try:
            with open(path, encoding="utf-8", errors="replace", newline="") as handle:
                header = next(csv.reader(handle), [])
        except (OSError, csv.Error) as exc:
            raise IngestError(f"cannot read the header of {path}: {exc}") from exc
        return tuple(column.lstrip("\ufeff") if i == 0 else column for i, column in enumerate(header))
    seen: dict[str, None] = {}
    for record in islice(read_jsonl(path), sample):
        if not isinstance(record, SourceRecordError):
            seen.update(dict.fromkeys(str(key) for key in record))
    return tuple(seen)


def _listing(columns: Iterable[str]) -> str:
    names = list(columns)
    return ", ".join(repr(c) for c in names) if names else "none (the file is empty)"


def check_columns(spec: SearchSpec, mapping: FieldMapping, columns: Iterable[str], source: str) -> None:
    """Refuse, in one message, every required column the source lacks, with the columns it has."""
    have = list(columns)
    absent = {name: column for name, column in mapping.required_columns(spec).items() if column not in set(have)}
    if not absent:
        return
    missing = [f"{column!r} (for {name})" if column != name else repr(column) for name, column in absent.items()]
    hints = []
    if spec.tenant_field in absent:
        hints.append("--tenant TENANT gives every record one tenant")
    if spec.id_field in absent:
        hints.append("--map id=@row numbers the records")
    advice = f" ({'; '.join(hints)})" if hints else ""
    raise IngestError(
        f"{source} lacks the column(s) {', '.join(missing)}; its columns are: {_listing(have)}. "
        f"Map spec fields to columns with --map FIELD=COLUMN{advice}"
    )


@dataclass
class Precheck:
    """What a pass over the source found before ingest: records, and values no filter can match."""

    columns: tuple[str, ...]
    records: int = 0
    # filter -> value -> count, for values outside the filter's allowed list
    unlisted: dict[str, Counter[str]] = field(default_factory=dict)

    def unlisted_summary(self, limit: int = MAX_LISTED_VALUES) -> dict[str, dict[str, int]]:
        return {name: dict(values.most_common(limit)) for name, values in self.unlisted.items() if values}

    def unlisted_message(self, spec: SearchSpec) -> str | None:
        """One line per filter with unlisted values, or None when every value is allowed."""
        lines = []
        for fil in spec.filters:
            values = self.unlisted.get(fil.name)
            if not values:
                continue
            listed = ", ".join(f"{v!r} ×{n}" for v, n in values.most_common(MAX_LISTED_VALUES))
            more = f" and {len(values) - MAX_LISTED_VALUES} more" if len(values) > MAX_LISTED_VALUES else ""
            lines.append(
                f"{sum(values.values())} record(s) have a {fil.name} outside its allowed list "
                f"({', '.join(fil.allowed)}): {listed}{more}; the {fil.name} filter can never match them"
            )
        return "\n".join(lines) or None


def _tallied(
    spec: SearchSpec, records: Iterable[Mapping[str, Any] | SourceRecordError], into: Precheck
) -> Iterator[Mapping[str, Any] | SourceRecordError]:
    """``records`` unchanged, counting into ``into`` the records and each filter's unlisted values."""
    allowed = {f.name: frozenset(f.allowed) for f in spec.filters}
    for name in allowed:
        into.unlisted.setdefault(name, Counter())
    for record in records:
        if not isinstance(record, SourceRecordError):
            into.records += 1
            for name, values in allowed.items():
                value = record.get(name)
                if value is None or value == "":
                    continue
                for item in value if isinstance(value, list) else (value,):
                    if str(item) not in values:
                        into.unlisted[name][str(item)] += 1
        yield record


def count_unlisted(
    spec: SearchSpec, records: Iterable[Mapping[str, Any] | SourceRecordError]
) -> tuple[int, dict[str, Counter[str]]]:
    """How many mapped records there are, and per filter the values outside its allowed list. Pure."""
    result = Precheck(columns=())
    for _ in _tallied(spec, records, result):
        pass
    return result.records, result.unlisted


def is_stream(path: str | Path) -> bool:
    """A source that can be read only once: a pipe, ``/dev/stdin``, a FIFO (anything but a regular file)."""
    try:
        return not stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def precheck_stream(
    spec: SearchSpec, mapping: FieldMapping, path: str | Path, fmt: str | None = None
) -> tuple[Precheck, Iterator[Mapping[str, Any] | SourceRecordError]]:
    """The precheck of a source read once (:func:`is_stream`): the columns from its first records (refused
    as :func:`check_columns` does, before anything is written), the counts as ingest reads the records.

    Returns the :class:`Precheck`, complete once the returned mapped records are exhausted.
    """
    raw = read_records(path, fmt)
    head = list(islice(raw, JSONL_SAMPLE))
    seen: dict[str, None] = {}
    for record in head:
        if not isinstance(record, SourceRecordError):
            seen.update(dict.fromkeys(str(key) for key in record))
    check_columns(spec, mapping, seen, Path(path).name)
    result = Precheck(columns=tuple(seen))
    return result, _tallied(spec, mapping.apply(spec, chain(head, raw)), result)


def precheck(spec: SearchSpec, mapping: FieldMapping, path: str | Path, fmt: str | None = None) -> Precheck:
    """Check the columns (IngestError when a required one is missing), then read the source once to count
    records and unlisted filter values."""
    columns = source_columns(path, fmt)
    check_columns(spec, mapping, columns, Path(path).name)
    result = Precheck(columns=columns)
    if spec.filters:
        result.records, result.unlisted = count_unlisted(spec, mapping.apply(spec, read_records(path, fmt)))
    return result
