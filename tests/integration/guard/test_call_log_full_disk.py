"""Issue 36 (L5): call-log loss on a full disk is counted in records, exactly.

On a full disk 100 calls wrote 0 lines while ``scopegate_call_log_failures_total{kind="sink_error"}``
read 6: it counted failed flushes. ``scopegate_call_log_records_lost_total{reason}`` counts the records
that did not reach the file, so lines on disk + records lost = calls. The disk is a real, size-limited
``tmpfs`` (root) or ``/dev/full`` (any user: every write fails with ENOSPC).
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from mounts import small_disk

from scopegate.backends.embedded import EmbeddedBackend
from scopegate.context import CallContext
from scopegate.demo.corpus import generate_tickets, ticket_spec
from scopegate.guard.calllog import CallLog
from scopegate.guard.guard import Guard
from scopegate.search.tools import SearchTool

CALLS = 100


@pytest.fixture(scope="module")
def tool() -> Iterator[SearchTool]:
    backend = EmbeddedBackend(ticket_spec())  # in memory: the disk under test holds only the call log
    backend.ingest_sync(generate_tickets(per_tenant=30, tenants=("acme",)))
    yield SearchTool(backend.spec, backend)
    backend.close_sync()


async def run_calls(tool: SearchTool, log_path: Path) -> tuple[dict[str, int], float | None]:
    log = CallLog.to_file(log_path)
    guard = Guard(call_log=log)
    for i in range(CALLS):
        ctx = CallContext(state={"tenant_id": "acme"}, invocation_id=f"inv-{i}", session_id="s")
        assert (await guard.call(tool, {"query": f"refund {i}"}, ctx)).result["status"] == "ok"
    log.close()
    assert guard.metrics is not None
    lost = guard.metrics.registry.get_sample_value("scopegate_call_log_records_lost_total", {"reason": "sink_error"})
    return log.stats(), lost


def fill(disk: Path, leave: int) -> None:
    """Fill ``disk`` up to ``leave`` bytes of free space."""
    with open(disk / "filler", "wb") as fh, contextlib.suppress(OSError):
        while True:
            free = os.statvfs(disk).f_bavail * os.statvfs(disk).f_frsize
            if free <= leave:
                break
            fh.write(b"x" * min(65536, free - leave))
            fh.flush()


def lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()] if path.exists() else []


async def test_a_full_disk_counts_every_lost_record(tool: SearchTool, tmp_path: Path) -> None:
    with small_disk(tmp_path / "disk", "256k") as disk:
        fill(disk, 0)
        stats, lost = await run_calls(tool, disk / "calls.jsonl")
        assert lines(disk / "calls.jsonl") == []
    assert stats["written"] == 0 and stats["records_lost"] == CALLS
    assert lost == CALLS  # was 0 (no such metric); the failure counter read a handful of flushes


async def test_a_disk_that_fills_up_midway_counts_what_is_missing(tool: SearchTool, tmp_path: Path) -> None:
    with small_disk(tmp_path / "disk", "256k") as disk:
        fill(disk, 3 * 4096)  # room for some of the lines, not all
        stats, lost = await run_calls(tool, disk / "calls.jsonl")
        kept = lines(disk / "calls.jsonl")  # every line whole: a refused write is cut back
    assert 0 < len(kept) < CALLS
    assert stats["written"] == len(kept) and lost == CALLS - len(kept)
    queries = [str(r["query"]) for r in kept]
    assert len(set(queries)) == len(queries)  # no line twice, none cut


async def test_dev_full_loses_every_record_and_says_so(tool: SearchTool) -> None:
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full on this system")
    stats, lost = await run_calls(tool, Path("/dev/full"))
    assert stats["written"] == 0 and lost == CALLS
