"""Many processes, one engine index (issue 12), for OpenSearch and Elasticsearch alike.

Each engine folder's ``test_*_multiproc.py`` defines the ``engine_target`` fixture (its node, a fresh index
name) and imports these tests; the checks themselves live in :mod:`scopegate_lab.backend_contract`.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from scopegate_lab.backend_contract import (
    check_documents_belong_to_tenants,
    check_identity_rule,
    check_other_writers_are_never_served_from_the_cache,
    check_randomized_run,
    check_searches_are_not_held_up_by_ingest,
    check_wave1_engine_migration,
    fresh_backend,
)
from scopegate_lab.consistency import Target

__all__ = [
    "test_another_writers_changes_are_never_served_from_the_cache",
    "test_backend_check",
    "test_randomized_run_one_writer_three_readers",
]


async def test_another_writers_changes_are_never_served_from_the_cache(engine_target: Target) -> None:
    """Wave 1's generation was the alias target plus a per-process counter: a document moved from acme to
    globex (and one deleted) by another process stayed searchable and fetchable by acme for the whole TTL."""
    await check_other_writers_are_never_served_from_the_cache(engine_target)


# Each a check of one backend on a fresh index. Wave 1 failed each: it read and encoded bulk batches on the
# event loop (a slow source stalled every search), stripped tenants at ingest here but not on the embedded
# engine, keyed documents by id alone (another tenant's write replaced them), and had no migration.
CHECKS = {
    "searches_are_not_held_up_by_an_ingest_reading_its_source": check_searches_are_not_held_up_by_ingest,
    "identity_rule": check_identity_rule,
    "documents_belong_to_tenants": check_documents_belong_to_tenants,
    "a_wave1_index_migrates": check_wave1_engine_migration,
}


@pytest.mark.parametrize("name", sorted(CHECKS))
async def test_backend_check(engine_target: Target, name: str) -> None:
    async with fresh_backend(engine_target) as backend:
        await CHECKS[name](backend)


async def test_randomized_run_one_writer_three_readers(engine_target: Target, tmp_path: Path) -> None:
    try:
        ops = int(os.environ.get("SCOPEGATE_CONSISTENCY_OPS", "40"))
        await asyncio.to_thread(check_randomized_run, engine_target, tmp_path / "run", ops=ops)
    finally:
        async with fresh_backend(engine_target):
            pass  # drops the index
