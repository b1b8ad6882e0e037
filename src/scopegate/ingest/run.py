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
from scopegate.search.spec import SearchSpec


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
    total: int | None = None,
) -> IngestReport:
    """Upsert the records of ``path``; IngestError before anything is written when a mapped column is missing."""
    from scopegate.ingest.precheck import check_columns, source_columns

    mapping = mapping or FieldMapping()
    check_columns(backend.spec, mapping, source_columns(path, fmt), Path(path).name)
    records = mapping.apply(backend.spec, read_records(path, fmt))
    return await ingest_records(
        backend, records, batch_size=batch_size, progress=progress, total=total, label=Path(path).name
    )


async def ingest_into_index(
    index: str | Path,
    path: str | Path,
    spec: SearchSpec,
    mapping: FieldMapping | None = None,
    *,
    fmt: str | None = None,
    batch_size: int = 10_000,
    progress: bool = True,
    total: int | None = None,
) -> IngestReport:
    """Upsert the records of ``path`` into the embedded index folder ``index`` (created if missing)."""
    from scopegate.ingest.precheck import check_columns, source_columns

    mapping = mapping or FieldMapping()
    check_columns(spec, mapping, source_columns(path, fmt), Path(path).name)  # before the folder is made
    records = mapping.apply(spec, read_records(path, fmt))
    return await ingest_stream_into_index(
        index, records, spec, batch_size=batch_size, progress=progress, total=total, label=Path(path).name
    )


async def ingest_stream_into_index(
    index: str | Path,
    records: Iterable[Mapping[str, Any] | SourceRecordError],
    spec: SearchSpec,
    *,
    batch_size: int = 10_000,
    progress: bool = True,
    total: int | None = None,
    label: str = "ingest",
) -> IngestReport:
    """Upsert already mapped ``records`` (a source read once) into the embedded index folder ``index``."""
    from scopegate.backends.embedded import EmbeddedBackend

    backend = EmbeddedBackend(spec, index)
    try:
        return await ingest_records(
            backend, records, batch_size=batch_size, progress=progress, total=total, label=label
        )
    finally:
        await backend.close()


def report_summary(report: IngestReport, *, max_errors: int = 20) -> dict[str, Any]:
    """What ``scopegate ingest`` prints: counts, speed and the first rejected records."""
    return {
        "indexed": report.indexed,
        "failed": report.failed,
        "commits": report.commits,
        "seconds": round(report.seconds, 3),
        "docs_per_second": round(report.docs_per_second),
        "errors": report.errors[:max_errors],
    }
