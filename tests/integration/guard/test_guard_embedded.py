"""The guard over the real embedded engine: scope isolation through the cache, invalidation on ingest."""

from __future__ import annotations

from pathlib import Path

from scopegate.backends.embedded import EmbeddedBackend
from scopegate.context import CallContext
from scopegate.demo.corpus import TENANTS, generate_tickets, ticket_spec
from scopegate.guard.calllog import CallLog, MemorySink
from scopegate.guard.guard import Guard
from scopegate.search.tools import FetchTool, SearchTool


def ctx(tenant: str, invocation: str) -> CallContext:
    return CallContext(state={"tenant_id": tenant}, invocation_id=invocation, session_id="s")


async def test_every_tenant_gets_only_its_own_results_through_the_cache(guard_index: Path) -> None:
    backend = EmbeddedBackend.open(guard_index)
    guard = Guard(generation_ttl_s=0.0, cap=None)
    tool = SearchTool(backend.spec, backend)
    try:
        for round_ in range(2):  # the second round is served from the cache
            totals = {}
            for tenant in TENANTS:
                for page in (1, 2):
                    result = (await guard.call(tool, {"query": "Refund FAILED", "page": page}, ctx(tenant, "i"))).result
                    assert result["status"] == "ok"
                    prefix = tenant[:3].upper() + "-"
                    assert all(r["ticket_id"].startswith(prefix) for r in result["results"]), (tenant, result)
                    totals[tenant] = result["total"]
            assert len(set(totals.values())) > 1  # totals are per tenant
            assert guard.cache is not None
            if round_ == 1:
                assert guard.cache.stats.hits == 2 * len(TENANTS)
        # fetch-by-id is cached per scope too: another tenant asking for the id gets NOT_FOUND
        fetch = FetchTool(backend.spec, backend)
        own = (await guard.call(fetch, {"id": "ACM-00001"}, ctx("acme", "f"))).result
        other = (await guard.call(fetch, {"id": "ACM-00001"}, ctx("globex", "f"))).result
        again = (await guard.call(fetch, {"id": "ACM-00001"}, ctx("globex", "f"))).result
        assert own["status"] == "ok" and other["error_code"] == again["error_code"] == "NOT_FOUND"
    finally:
        await backend.close()


async def test_ingest_invalidates_cached_results() -> None:
    spec = ticket_spec()
    backend = EmbeddedBackend(spec)  # in memory: generation is a commit counter
    await backend.ingest(generate_tickets(per_tenant=50, tenants=("acme", "globex")))
    sink = MemorySink()
    guard = Guard(generation_ttl_s=0.0, cap=None, call_log=CallLog(sink))
    tool = SearchTool(spec, backend)
    try:
        before = (await guard.call(tool, {"query": "quokka outage"}, ctx("acme", "a"))).result
        cached = (await guard.call(tool, {"query": "quokka outage"}, ctx("acme", "b"))).result
        assert before["total"] == cached["total"] == 0
        await backend.ingest(
            [
                {
                    "ticket_id": "ACM-QUOKKA",
                    "tenant_id": "acme",
                    "product": "payments",
                    "status": "open",
                    "subject": "Quokka outage",
                    "body": "The quokka outage broke refunds.",
                }
            ]
        )
        after = (await guard.call(tool, {"query": "quokka outage"}, ctx("acme", "c"))).result
        assert after["total"] == 1 and after["results"][0]["ticket_id"] == "ACM-QUOKKA"
        assert guard.cache is not None and guard.cache.stats.stale == 1
        await backend.delete(["ACM-QUOKKA"], tenant="acme")
        gone = (await guard.call(tool, {"query": "quokka outage"}, ctx("acme", "d"))).result
        assert gone["total"] == 0
        assert guard.call_log is not None and guard.call_log.flush(5)
        assert [r["cache_hit"] for r in sink.records()] == [False, True, False, False]
    finally:
        await backend.close()


async def test_a_commit_by_another_writer_invalidates(guard_index: Path, tmp_path: Path) -> None:
    import shutil

    path = tmp_path / "copy"
    shutil.copytree(guard_index, path)
    reader = EmbeddedBackend.open(path)
    guard = Guard(generation_ttl_s=0.0, cap=None)
    tool = SearchTool(reader.spec, reader)
    try:
        await guard.call(tool, {"query": "refund"}, ctx("acme", "a"))
        await guard.call(tool, {"query": "refund"}, ctx("acme", "a"))
        assert guard.cache is not None and guard.cache.stats.hits == 1
        writer = EmbeddedBackend.open(path)  # a second handle on the folder, like another process
        await writer.delete(["ACM-00001"], tenant="acme")
        await writer.close()
        await guard.call(tool, {"query": "refund"}, ctx("acme", "a"))
        assert guard.cache.stats.stale == 1 and guard.cache.stats.hits == 1
    finally:
        await reader.close()
