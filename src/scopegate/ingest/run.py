"""Ingest a JSONL or CSV file into a backend through a field mapping, with a progress bar."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from tqdm import tqdm

from scopegate.backends.base import IngestReport, SearchBackend
from scopegate.ingest.mapping import FieldMapping
from scopegate.ingest.readers import SourceRecordError, read_records


def _split_errors(
    records: Iterable[Mapping[str, Any] | SourceRecordError], errors: list[SourceRecordError]
) -> Iterator[Mapping[str, Any]]:
    for record in records:
        if isinstance(record, SourceRecordError):
            errors.append(record)
        else:
            yield record


async def ingest_records(
    backend: SearchBackend,
    records: Iterable[Mapping[str, Any] | SourceRecordError],
    *,
    batch_size: int = 10_000,
    progress: bool = True,
    total: int | None = None,
    label: str = "ingest",
) -> IngestReport:
    source_errors: list[SourceRecordError] = []
    bar = tqdm(total=total, unit="doc", desc=label, disable=not progress, file=sys.stderr, leave=False)
    try:
        report = await backend.ingest(_split_errors(records, source_errors), batch_size=batch_size, progress=bar.update)
    finally:
        bar.close()
    report.failed += len(source_errors)
    report.errors.extend((e.where, e.reason) for e in source_errors[:1000])
    return report


async def ingest_path(
    backend: SearchBackend,
    path: str | Path,
    mapping: FieldMapping | None = None,
    *,
    fmt: str | None = None,
    batch_size: int = 10_000,
    progress: bool = True,
) -> IngestReport:
    records = (mapping or FieldMapping()).apply(backend.spec, read_records(path, fmt))
    return await ingest_records(backend, records, batch_size=batch_size, progress=progress, label=Path(path).name)
