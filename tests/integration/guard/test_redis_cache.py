"""The shared cache on a real redis-server: sharing, isolation, invalidation, expiry, outages."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import redis.asyncio as aioredis

from scopegate.backends.embedded import EmbeddedBackend
from scopegate.context import CallContext
from scopegate.demo.corpus import generate_tickets, ticket_spec
from scopegate.guard.cache import RedisStore, ToolCache
from scopegate.guard.guard import Guard
from scopegate.scope import Scope
from scopegate.search.tools import SearchTool

REPO = Path(__file__).resolve().parents[3]


def ctx(tenant: str, invocation: str = "i") -> CallContext:
    return CallContext(state={"tenant_id": tenant}, invocation_id=invocation, session_id="s")


def redis_guard(url: str, namespace: str) -> Guard:
    return Guard(cache=ToolCache(RedisStore(url=url, namespace=namespace)), cap=None, generation_ttl_s=0.0)


async def test_store_roundtrip_ttl_and_namespace_clear(redis_url: str) -> None:
    store = RedisStore(url=redis_url, namespace="t1:")
    other = aioredis.Redis.from_url(redis_url)
    try:
        await store.set("k", "välue ✓", 30)
        assert await store.get("k") == "välue ✓"
        pttl = await other.pttl("t1:k")
        assert 0 < pttl <= 30_000
        await store.set("short", "x", 0.05)
        await asyncio.sleep(0.3)
        assert await store.get("short") is None
        await other.set("foreign:key", "keep me")
        await store.clear()
        assert await store.get("k") is None
        assert await other.get("foreign:key") == b"keep me"  # only our namespace is cleared
    finally:
        await other.aclose()
        await store.close()


async def test_two_processes_share_results_but_never_across_scopes(redis_url: str, guard_index: Path) -> None:
    backend_a = EmbeddedBackend.open(guard_index)
    backend_b = EmbeddedBackend.open(guard_index)
    guard_a = redis_guard(redis_url, "share:")
    guard_b = redis_guard(redis_url, "share:")
    tool_a = SearchTool(backend_a.spec, backend_a)
    tool_b = SearchTool(backend_b.spec, backend_b)
    try:
        first = (await guard_a.call(tool_a, {"query": "E4012 refund"}, ctx("acme"))).result
        second = (await guard_b.call(tool_b, {"query": "e4012   REFUND"}, ctx("acme"))).result
        assert second == first
        assert guard_b.cache is not None and guard_b.cache.stats.hits == 1
        other = (await guard_b.call(tool_b, {"query": "E4012 refund"}, ctx("globex"))).result
        assert guard_b.cache.stats.hits == 1
        assert all(r["ticket_id"].startswith("GLO-") for r in other["results"])
        assert {r["ticket_id"] for r in other["results"]}.isdisjoint({r["ticket_id"] for r in first["results"]})
    finally:
        for g in (guard_a, guard_b):
            assert g.cache is not None
            await g.cache.clear()
            await g.aclose()
        await backend_a.close()
        await backend_b.close()


async def test_a_copied_entry_is_refused_for_another_scope(redis_url: str) -> None:
    cache = ToolCache(RedisStore(url=redis_url, namespace="tamper:"))
    raw_client = aioredis.Redis.from_url(redis_url)
    try:
        tool = SearchTool(ticket_spec(), EmbeddedBackend(ticket_spec()))
        ka = cache.key_for(tool, Scope("acme"), {"query": "refund"})
        kb = cache.key_for(tool, Scope("globex"), {"query": "refund"})
        assert ka and kb and ka != kb
        await cache.put(ka, Scope("acme"), "g", {"status": "ok", "results": [{"ticket_id": "ACM-1"}]})
        await raw_client.set("tamper:" + kb, await raw_client.get("tamper:" + ka))  # an attacker with Redis access
        assert await cache.lookup(kb, Scope("globex"), "g") is None
        assert cache.stats.scope_mismatches == 1
    finally:
        await cache.clear()
        await cache.close()
        await raw_client.aclose()


async def test_ingest_invalidates_entries_in_redis(redis_url: str) -> None:
    spec = ticket_spec()
    backend = EmbeddedBackend(spec)
    await backend.ingest(generate_tickets(per_tenant=30, tenants=("acme",)))
    guard = redis_guard(redis_url, "inval:")
    tool = SearchTool(spec, backend)
    try:
        assert ((await guard.call(tool, {"query": "wombat"}, ctx("acme"))).result)["total"] == 0
        assert ((await guard.call(tool, {"query": "wombat"}, ctx("acme"))).result)["total"] == 0
        await backend.ingest(
            [{"ticket_id": "ACM-W", "tenant_id": "acme", "product": "billing", "status": "open",
              "subject": "wombat", "body": "wombat in the invoice"}]
        )  # fmt: skip
        assert ((await guard.call(tool, {"query": "wombat"}, ctx("acme"))).result)["total"] == 1
        assert guard.cache is not None and guard.cache.stats.stale == 1 and guard.cache.stats.hits == 1
    finally:
        assert guard.cache is not None
        await guard.cache.clear()
        await guard.aclose()
        await backend.close()


async def test_redis_outage_degrades_to_uncached_calls(guard_index: Path) -> None:
    import socket

    with socket.socket() as s:  # a port with nothing listening
        s.bind(("127.0.0.1", 0))
        dead_port = s.getsockname()[1]
    backend = EmbeddedBackend.open(guard_index)
    guard = redis_guard(f"redis://127.0.0.1:{dead_port}/0", "down:")
    tool = SearchTool(backend.spec, backend)
    try:
        for _ in range(3):
            result = (await guard.call(tool, {"query": "refund"}, ctx("acme"))).result
            assert result["status"] == "ok" and result["total"] > 0
        assert guard.cache is not None
        assert guard.cache.stats.errors >= 3 and guard.cache.stats.hits == 0
    finally:
        await guard.aclose()
        await backend.close()


async def test_entry_written_by_another_process_is_a_hit_here(redis_url: str, guard_index: Path) -> None:
    script = textwrap.dedent(
        f"""
        import asyncio, json
        from scopegate.backends.embedded import EmbeddedBackend
        from scopegate.context import CallContext
        from scopegate.guard.cache import RedisStore, ToolCache
        from scopegate.guard.guard import Guard
        from scopegate.search.tools import SearchTool

        async def main():
            backend = EmbeddedBackend.open({str(guard_index)!r})
            guard = Guard(cache=ToolCache(RedisStore(url={redis_url!r}, namespace="proc:")), cap=None)
            tool = SearchTool(backend.spec, backend)
            ctx = CallContext(state={{"tenant_id": "umbrella"}}, invocation_id="p", session_id="p")
            result = (await guard.call(tool, {{"query": "payout delayed"}}, ctx)).result
            print(json.dumps(result))
            await guard.aclose()
            await backend.close()

        asyncio.run(main())
        """
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-2000:]
    written = json.loads(proc.stdout.strip().splitlines()[-1])
    backend = EmbeddedBackend.open(guard_index)
    guard = redis_guard(redis_url, "proc:")
    tool = SearchTool(backend.spec, backend)
    try:
        here = (await guard.call(tool, {"query": "Payout  Delayed"}, ctx("umbrella"))).result
        assert here == written
        assert guard.cache is not None and guard.cache.stats.hits == 1
    finally:
        assert guard.cache is not None
        await guard.cache.clear()
        await guard.aclose()
        await backend.close()


async def test_tiered_store_serves_repeats_locally_and_shares_through_redis(redis_url: str, guard_index: Path) -> None:
    from scopegate.guard.cache import MemoryStore, TieredStore

    backend = EmbeddedBackend.open(guard_index)
    tool = SearchTool(backend.spec, backend)
    local_a, local_b = MemoryStore(), MemoryStore()
    guard_a = Guard(cache=ToolCache(TieredStore(local_a, RedisStore(url=redis_url, namespace="tier:"))), cap=None)
    guard_b = Guard(cache=ToolCache(TieredStore(local_b, RedisStore(url=redis_url, namespace="tier:"))), cap=None)
    try:
        first = (await guard_a.call(tool, {"query": "invoice locked"}, ctx("hooli"))).result
        assert len(local_a) == 1 and len(local_b) == 0
        assert (await guard_b.call(tool, {"query": "INVOICE locked"}, ctx("hooli"))).result == first  # from Redis
        assert len(local_b) == 1  # now copied into b's process
        assert (await guard_b.call(tool, {"query": "invoice locked"}, ctx("hooli"))).result == first  # from b's memory
        assert guard_b.cache is not None and guard_b.cache.stats.hits == 2
        other = (await guard_b.call(tool, {"query": "invoice locked"}, ctx("stark"))).result
        assert all(r["ticket_id"].startswith("STA-") for r in other["results"])
    finally:
        for g in (guard_a, guard_b):
            assert g.cache is not None
            await g.cache.clear()
            await g.aclose()
        await backend.close()
