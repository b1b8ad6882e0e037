"""Guard benchmark: overhead of the guard layer per call, and cache hit vs miss on the embedded engine.

Run: .venv/bin/python bench/bench_guard.py [--calls 3000] [--docs 100000] [--queries 600]
Writes bench/results/guard.json and guard.md. Nothing here is asserted.

1. Overhead: ``Guard.call`` around a tool that does no work (it returns a prebuilt
   result of the size of a real search page), so the time measured is the guard's
   own: call cap, scope read, cache key + lookup (+ store on a miss), call-log
   write (queued to a rotating file), metrics, span check. In-memory cache and
   Redis (a local redis-server started for the run).
2. Hit vs miss: ``Guard.call`` around the real SearchTool on an embedded index of
   ``--docs`` generated tickets (40 tenants): a miss runs the engine and shapes
   the result, a hit is served from the cache.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import generated_tickets, machine, percentiles, query_plan, write_results

from scopegate.backends.embedded import EmbeddedBackend
from scopegate.context import CallContext
from scopegate.demo.corpus import ticket_spec
from scopegate.guard.cache import MemoryStore, RedisStore, TieredStore, ToolCache
from scopegate.guard.calllog import CallLog
from scopegate.guard.guard import Guard
from scopegate.scope import Scope, ScopeKeys, read_scope
from scopegate.search.normalise import search_cache_args
from scopegate.search.tools import SearchTool
from scopegate.tools import ToolOutcome

KEYS = ScopeKeys()


class NoWorkTool:
    """A ScopedTool that returns a prebuilt result: what remains of a call is the guard's own cost."""

    name = "search_tickets"
    description = "no-op search"
    family = "search"
    read_only = True
    requires_confirmation = False
    scope_keys = KEYS

    def __init__(self, result: dict[str, Any]) -> None:
        self.result = result
        self._generation = "g1"

    async def generation(self) -> str:
        return self._generation

    def cache_args(self, args: Mapping[str, Any]) -> Any:
        return search_cache_args(args)

    def parameters_schema(self) -> dict[str, Any]:
        return {"type": "object"}

    def scope_of(self, ctx: CallContext) -> Scope | None:
        return read_scope(ctx.state, KEYS)

    def describe(self, args: Mapping[str, Any]) -> dict[str, Any]:
        return {
            "query": " ".join(str(args.get("query", "")).lower().split()),
            "filters": {},
            "page": args.get("page", 1),
        }

    async def run(self, args: Mapping[str, Any], ctx: CallContext) -> ToolOutcome:
        log = {
            **self.describe(args),
            "total": self.result.get("total"),
            "total_relation": "eq",
            "ids": [r["ticket_id"] for r in self.result.get("results", [])],
        }
        return ToolOutcome(self.result, log)


async def timed(fn: Callable[[int], Awaitable[Any]], n: int) -> list[float]:
    out = []
    for i in range(n):
        t = time.perf_counter()
        await fn(i)
        out.append((time.perf_counter() - t) * 1000.0)
    return out


def ctx(tenant: str, i: int) -> CallContext:
    return CallContext(state={"tenant_id": tenant}, invocation_id=f"inv-{i}", session_id="bench")


# -- redis ---------------------------------------------------------------------------
class RedisServer:
    def __init__(self) -> None:
        self.proc: subprocess.Popen[bytes] | None = None
        self.url: str | None = None

    def start(self) -> str | None:
        binary = shutil.which("redis-server")
        if binary is None:
            return None
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        self.proc = subprocess.Popen(
            [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5) as c:
                    c.sendall(b"PING\r\n")
                    if c.recv(16).startswith(b"+PONG"):
                        self.url = f"redis://127.0.0.1:{port}/0"
                        return self.url
            except OSError:
                time.sleep(0.05)
        self.stop()
        return None

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
            self.proc = None


# -- 1. overhead ------------------------------------------------------------------------
async def overhead(store_factory: Callable[[], Any], calls: int, workdir: Path, label: str) -> dict[str, Any]:
    sample = {
        "status": "ok",
        "total": 214,
        "total_relation": "eq",
        "results": [
            {"ticket_id": f"ACM-{i:05d}", "subject": "Apple Pay refund failed with E4012", "status": "open",
             "product": "payments", "snippet": "… refund issued from the dashboard to Apple Pay never arrives … " * 3}
            for i in range(5)
        ],
        "next_page": 2,
    }  # fmt: skip
    tool = NoWorkTool(sample)
    log = CallLog.to_file(workdir / f"calls-{label}.jsonl")
    guard = Guard(cache=ToolCache(store_factory()), call_log=log)
    direct = await timed(lambda i: tool.run({"query": f"q{i}"}, ctx("acme", i)), calls)
    miss = await timed(lambda i: guard.call(tool, {"query": f"refund failed {i}"}, ctx("acme", i)), calls)
    # every key of the miss pass is now stored: the same calls again are hits
    hit = await timed(lambda i: guard.call(tool, {"query": f"refund failed {i}"}, ctx("acme", calls + i)), calls)
    assert guard.cache is not None
    stats = guard.cache.stats.as_dict()
    await guard.aclose()
    return {
        "direct_tool_ms": percentiles(direct),
        "guard_miss_ms": percentiles(miss),
        "guard_hit_ms": percentiles(hit),
        "cache": stats,
        "call_log": log.stats(),
    }


# -- 2. hit vs miss on the embedded engine ---------------------------------------------------
async def hit_vs_miss(
    backend: EmbeddedBackend, store_factory: Callable[[], Any], queries: int, generation_ttl_s: float
) -> dict[str, Any]:
    tool = SearchTool(backend.spec, backend)
    plan = query_plan(queries)
    guard = Guard(cache=ToolCache(store_factory()), cap=None, generation_ttl_s=generation_ttl_s)
    cache = guard.cache
    assert cache is not None

    def args(i: int) -> dict[str, Any]:
        query, _, product = plan[i]
        out: dict[str, Any] = {"query": query}
        if product:
            out["product"] = product
        return out

    miss: list[float] = []
    hit: list[float] = []
    raw: list[float] = []
    for i in range(queries):
        _, tenant, _ = plan[i]
        await cache.clear()
        t = time.perf_counter()
        first = (await guard.call(tool, args(i), ctx(tenant, i))).result
        miss.append((time.perf_counter() - t) * 1000.0)
        t = time.perf_counter()
        second = (await guard.call(tool, args(i), ctx(tenant, i))).result
        hit.append((time.perf_counter() - t) * 1000.0)
        assert first == second and first["status"] == "ok"
        t = time.perf_counter()
        await tool.run(args(i), ctx(tenant, i))
        raw.append((time.perf_counter() - t) * 1000.0)
    stats = cache.stats.as_dict()
    await guard.aclose()
    m, h = percentiles(miss), percentiles(hit)
    return {
        "generation_ttl_s": generation_ttl_s,
        "tool_without_guard_ms": percentiles(raw),
        "miss_ms": m,
        "hit_ms": h,
        "speedup_p50": round(m["p50"] / h["p50"], 1),
        "speedup_p95": round(m["p95"] / h["p95"], 1),
        "cache": stats,
    }


def fmt(p: dict[str, Any]) -> str:
    return f"{p['p50'] * 1000:.0f} / {p['p95'] * 1000:.0f}"


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=3000, help="calls per overhead measurement")
    parser.add_argument("--docs", type=int, default=100_000, help="documents in the embedded index")
    parser.add_argument("--queries", type=int, default=600, help="queries for hit vs miss")
    opts = parser.parse_args()

    workdir = Path(tempfile.mkdtemp(prefix="bench-guard-"))
    redis = RedisServer()
    url = redis.start()
    import os

    results: dict[str, Any] = {
        "machine": machine(),
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
        "redis": bool(url),
        "params": vars(opts),
    }
    try:
        results["overhead"] = {"memory": await overhead(MemoryStore, opts.calls, workdir, "memory")}
        if url:
            results["overhead"]["redis"] = await overhead(
                lambda: RedisStore(url=url, namespace="bench1:"), opts.calls, workdir, "redis"
            )
            results["overhead"]["memory+redis"] = await overhead(
                lambda: TieredStore(MemoryStore(), RedisStore(url=url, namespace="bench3:")),
                opts.calls,
                workdir,
                "tiered",
            )

        backend = EmbeddedBackend(ticket_spec(), workdir / "index")
        started = time.perf_counter()
        report = backend.ingest_sync(generated_tickets(opts.docs), batch_size=50_000)
        results["index"] = {"docs": report.indexed, "ingest_s": round(time.perf_counter() - started, 1)}
        embedded: dict[str, Any] = {
            "memory": await hit_vs_miss(backend, MemoryStore, opts.queries, 1.0),
            "memory_exact_generation": await hit_vs_miss(backend, MemoryStore, opts.queries, 0.0),
        }
        if url:
            embedded["redis"] = await hit_vs_miss(
                backend, lambda: RedisStore(url=url, namespace="bench2:"), opts.queries, 1.0
            )
            embedded["memory+redis"] = await hit_vs_miss(
                backend,
                lambda: TieredStore(MemoryStore(), RedisStore(url=url, namespace="bench4:")),
                opts.queries,
                1.0,
            )
        results["embedded_hit_vs_miss"] = embedded
        await backend.close()
    finally:
        redis.stop()
        shutil.rmtree(workdir, ignore_errors=True)

    ov = results["overhead"]
    lines = [
        "# Guard benchmark",
        "",
        f"Machine: {results['machine']['cpus']} cores shared with other jobs (load average "
        f"{results['load_average_at_start'][0]} at start), Python {results['machine']['python']}, "
        f"{results['machine']['when']}. Figures in microseconds, p50 / p95.",
        "",
        "## Overhead of the guard per call",
        "",
        f"`Guard.call` around a tool that does no work ({opts.calls} calls each): call cap, scope read, cache key + "
        "lookup (+ store on a miss), call-log line queued to a rotating file, metrics. Default settings "
        "(generation trusted for 1 s).",
        "",
        "| cache store | tool alone | guard, miss (lookup + store) | guard, hit |",
        "|---|---|---|---|",
    ]
    for name, r in ov.items():
        lines.append(f"| {name} | {fmt(r['direct_tool_ms'])} | {fmt(r['guard_miss_ms'])} | {fmt(r['guard_hit_ms'])} |")
    lines += [
        "",
        f"## Cache hit vs miss on the embedded engine ({results['index']['docs']:,} tickets, 40 tenants)",
        "",
        f"{opts.queries} queries (tenant filter always, product filter on about half); each query run as a miss "
        "(cache cleared), then as a hit, then through the tool without the guard.",
        "",
        "| cache store | generation check | tool without guard | miss | hit | speedup p50 / p95 |",
        "|---|---|---|---|---|---|",
    ]
    for name, r in results["embedded_hit_vs_miss"].items():
        check = "every call" if r["generation_ttl_s"] == 0 else f"every {r['generation_ttl_s']:g} s"
        lines.append(
            f"| {name.replace('_exact_generation', '')} | {check} | {fmt(r['tool_without_guard_ms'])} | "
            f"{fmt(r['miss_ms'])} | {fmt(r['hit_ms'])} | {r['speedup_p50']}x / {r['speedup_p95']}x |"
        )
    lines += [
        "",
        "Reading the generation of an on-disk index means reading its meta file on the backend's thread pool "
        "(~0.1 ms): checked on every call it dominates a hit; trusted for 1 s (the default, like OpenSearch's "
        "refresh interval) a hit costs only the guard's own work. A Redis hit costs one round trip through "
        "redis-py (~0.15 ms), so a Redis-only cache cannot be 10x faster than a 0.35 ms local search; "
        "`memory+redis` (TieredStore: an in-process tier in front of Redis) serves repeats in one process "
        "from memory and shares entries across processes through Redis. In the hit-vs-miss rows, the hit "
        "for `memory+redis` follows a miss in the same process, so it is a local-tier hit.",
    ]
    if not url:
        lines.append("")
        lines.append("Redis rows are missing: redis-server is not installed on this machine.")
    write_results("guard", results, "\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    asyncio.run(main())
