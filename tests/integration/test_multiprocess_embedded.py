"""Many processes, one embedded index (issue 12): coherent caches, searches never behind writes, a randomized run.

The writer is always another real process (``python -c``), as in a deployment
where ``scopegate ingest`` runs beside the servers.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from scopegate.backends.embedded import EmbeddedBackend
from scopegate.context import CallContext
from scopegate.errors import IngestError
from scopegate.guard import Guard
from scopegate.scope import Scope
from scopegate.search.tools import FetchTool, SearchTool
from scopegate_lab.backend_contract import (
    StalledSource,
    check_other_writers_are_never_served_from_the_cache,
    check_randomized_run,
    check_searches_are_not_held_up_by_ingest,
    fresh_backend,
    ticket,
)
from scopegate_lab.consistency import Target

QUOKKA = ticket("ACM-QUOKKA", "acme", "Quokka outage", body="The quokka outage broke refunds.")

WRITE = textwrap.dedent(
    """
    import json, sys
    from scopegate.backends.embedded import EmbeddedBackend
    backend = EmbeddedBackend.open(sys.argv[1])
    backend.ingest_sync([json.loads(sys.argv[2])])
    """
)


def ctx(tenant: str) -> CallContext:
    return CallContext(state={"tenant_id": tenant}, invocation_id="i", session_id="s")


def write_in_another_process(index: Path, doc: dict[str, Any]) -> None:
    subprocess.run([sys.executable, "-c", WRITE, str(index), json.dumps(doc)], check=True, timeout=120)


async def test_a_commit_by_another_process_is_served_at_once_through_the_cache(index: Path) -> None:
    """Wave 1 stored the post-write search (still on tantivy's old reader) under the new on-disk generation
    and served it until the TTL. Every search that starts after the other process's commit returned must
    see the new document, cached or not."""
    backend = EmbeddedBackend.open(index)
    guard = Guard(cap=None, generation_ttl_s=0.0)
    tool = SearchTool(backend.spec, backend)
    try:
        before = (await guard.call(tool, {"query": "quokka outage"}, ctx("acme"))).result
        assert before["total"] == 0
        assert (await guard.call(tool, {"query": "quokka outage"}, ctx("acme"))).result["total"] == 0  # cached
        write_in_another_process(index, QUOKKA)
        seen = []
        for _ in range(60):  # well past tantivy's own reload delay: a stale entry would be served by now
            result = (await guard.call(tool, {"query": "quokka outage"}, ctx("acme"))).result
            seen.append(result["total"])
            await asyncio.sleep(0.025)
        assert seen == [1] * len(seen), seen
        assert guard.cache is not None and guard.cache.stats.hits > 0  # served from the cache, correctly
    finally:
        await backend.close()


async def test_the_generation_is_the_commit_the_reader_serves(index: Path) -> None:
    """Two processes on one folder agree on the generation, and it moves only with a commit."""
    reader = EmbeddedBackend.open(index)
    other = EmbeddedBackend.open(index)
    try:
        g1 = await reader.generation()
        assert g1.startswith("meta:") and g1 == await other.generation() == await reader.generation()
        write_in_another_process(index, QUOKKA)
        g2 = await reader.generation()
        assert g2 != g1 and g2 == await other.generation()
        assert reader.get_sync("ACM-QUOKKA", Scope("acme")) is not None
    finally:
        await reader.close()
        await other.close()


async def test_searches_never_wait_behind_ingest_or_delete(index: Path) -> None:
    """Wave 1 ran ingest and delete on the search pool: two busy ingests left searches waiting (2.5 s,
    SEARCH_UNAVAILABLE). Here searches and fetches answer while both ingests and a delete are still queued."""
    backend = EmbeddedBackend.open(index)
    search, fetch = SearchTool(backend.spec, backend), FetchTool(backend.spec, backend)
    gate = StalledSource()
    writes = [
        asyncio.create_task(backend.ingest(gate.documents("A"))),
        asyncio.create_task(backend.ingest(gate.documents("B"))),
        asyncio.create_task(backend.delete(["ACM-00001"], tenant="acme")),
    ]
    try:
        assert await asyncio.to_thread(gate.entered.wait, 30)
        for _ in range(20):
            found = await asyncio.wait_for(search.run({"query": "refund"}, ctx("acme")), 30)
            assert found.result["status"] == "ok" and found.result["total"] > 0
            got = await asyncio.wait_for(fetch.run({"id": "ACM-00002"}, ctx("acme")), 30)
            assert got.result["status"] == "ok"
        assert not any(w.done() for w in writes)  # the writes were in progress all along
    finally:
        gate.open.set()
        reports = await asyncio.gather(*writes)
        await backend.close()
    assert [r.indexed for r in reports[:2]] == [2, 2] and reports[2] == 1
    assert not gate.expired  # the searches were answered while the source was stalled, not after


def threads_and_nice() -> dict[str, int]:
    """This process's threads (Linux task ids) and the nice value of each."""
    out = {}
    for tid in os.listdir("/proc/self/task"):
        with contextlib.suppress(FileNotFoundError):  # a thread that ended meanwhile
            stat = Path(f"/proc/self/task/{tid}/stat").read_text()
            out[tid] = int(stat.rsplit(")", 1)[1].split()[16])
    return out


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="per-thread nice values are Linux's")
async def test_ingest_and_its_engine_threads_run_below_the_searches_priority(index: Path) -> None:
    """Every thread an ingest starts (the writer thread, tantivy's indexing and merge threads) runs
    ``writer_nice`` steps below the searches, so on a busy machine searches get the CPU first."""
    backend = EmbeddedBackend.open(index, writer_nice=7)
    tool = SearchTool(backend.spec, backend)
    gate = StalledSource()
    try:
        assert (await tool.run({"query": "refund"}, ctx("acme"))).result["status"] == "ok"  # search threads up
        base = os.getpriority(os.PRIO_PROCESS, 0)
        before = threads_and_nice()
        writing = asyncio.create_task(backend.ingest(gate.documents("N")))
        for _ in range(6000):  # no thread of our own (asyncio.to_thread) while we look: poll
            if gate.entered.is_set():
                break
            await asyncio.sleep(0.01)
        assert gate.entered.is_set()
        started = {tid: nice for tid, nice in threads_and_nice().items() if tid not in before}
        assert len(started) >= 2, started  # the writer thread and the engine's own
        assert set(started.values()) == {min(19, base + 7)}, started
        assert {before[tid] for tid in before if tid in threads_and_nice()} == {base}  # searches keep theirs
        assert (await tool.run({"query": "refund"}, ctx("acme"))).result["status"] == "ok"
        gate.open.set()
        assert (await writing).indexed == 2
    finally:
        gate.open.set()
        await backend.close()


async def test_the_write_queue_is_bounded(index: Path) -> None:
    backend = EmbeddedBackend.open(index, max_pending_writes=2)
    gate = StalledSource()
    first = asyncio.create_task(backend.ingest(gate.documents("A")))
    second = asyncio.create_task(backend.ingest([{**QUOKKA, "ticket_id": "C-1"}]))
    try:
        assert await asyncio.to_thread(gate.entered.wait, 30)
        with pytest.raises(IngestError, match="already queued"):
            await backend.ingest([{**QUOKKA, "ticket_id": "D-1"}])
    finally:
        gate.open.set()
        await asyncio.gather(first, second)
        await backend.close()


HOLDER = textwrap.dedent(
    """
    import sys
    from scopegate.backends.embedded import EmbeddedBackend
    backend = EmbeddedBackend.open(sys.argv[1])
    def docs():
        yield {"ticket_id": "LOCK-1", "tenant_id": "acme", "body": "held"}
        print("HOLDING", flush=True)  # the writer lock is taken before the first document is read
        sys.stdin.readline()
    backend.ingest_sync(docs())
    """
)

# The second writer says WAITING the first time it finds the lock taken and sleeps before retrying.
WAITER = textwrap.dedent(
    """
    import json, sys, time
    import scopegate.backends.embedded as embedded

    class Clock:
        told = False
        def __getattr__(self, name):
            return getattr(time, name)
        def sleep(self, seconds):
            if seconds == embedded.WRITER_RETRY_S and not self.told:
                self.told = True
                print("WAITING", flush=True)
            time.sleep(seconds)

    embedded.time = Clock()
    backend = embedded.EmbeddedBackend.open(sys.argv[1], writer_wait_s=600)
    backend.ingest_sync([json.loads(sys.argv[2])])
    print("WRITTEN", flush=True)
    """
)


def test_a_second_writer_process_waits_for_the_lock_then_writes(index: Path) -> None:
    """Two ingest processes on one folder: the second waits for tantivy's writer lock instead of failing.
    No timing: the first holds the lock until the second has said it is waiting."""
    first = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(index)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    second: subprocess.Popen[str] | None = None
    try:
        assert first.stdout is not None and first.stdout.readline().strip() == "HOLDING"
        doc = json.dumps({**QUOKKA, "ticket_id": "LOCK-2"})
        second = subprocess.Popen([sys.executable, "-c", WAITER, str(index), doc], stdout=subprocess.PIPE, text=True)
        assert second.stdout is not None and second.stdout.readline().strip() == "WAITING"
        assert first.stdin is not None
        first.stdin.write("go\n")
        first.stdin.flush()
        assert second.stdout.readline().strip() == "WRITTEN"
    finally:
        for proc in (first, second):
            if proc is not None:
                try:
                    proc.wait(120)
                except subprocess.TimeoutExpired:
                    proc.kill()
    assert first.returncode == 0 and second is not None and second.returncode == 0
    backend = EmbeddedBackend.open(index)
    try:
        scope = Scope("acme")
        assert backend.get_sync("LOCK-1", scope) is not None and backend.get_sync("LOCK-2", scope) is not None
    finally:
        backend.close_sync()


@pytest.mark.parametrize("shared", ["memory", "redis"])
def test_randomized_run_one_writer_three_readers(tmp_path: Path, shared: str, request: pytest.FixtureRequest) -> None:
    """One ingest process and three guarded reader processes; every answer checked against the ground truth."""
    redis_url = request.getfixturevalue("redis_url") if shared == "redis" else None
    ops = int(os.environ.get("SCOPEGATE_CONSISTENCY_OPS", "40"))
    check_randomized_run(Target("embedded", str(tmp_path / "index")), tmp_path / "run", ops=ops, redis_url=redis_url)


async def test_the_shared_engine_checks_on_the_embedded_engine(tmp_path: Path) -> None:
    await check_other_writers_are_never_served_from_the_cache(Target("embedded", str(tmp_path / "a")))
    async with fresh_backend(Target("embedded", str(tmp_path / "b"))) as backend:
        await check_searches_are_not_held_up_by_ingest(backend)
