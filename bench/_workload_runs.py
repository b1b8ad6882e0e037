"""The query-side measurements shared by the workload benchmarks (embedded and OpenSearch).

A *pair* is one raw engine call and one tool call for the same workload query,
run back to back in alternating order (even pairs: raw first; odd: tool first),
so neither side always runs on caches the other just warmed. The tool's own
engine call is timed too, so two overheads are reported:

- ``overhead_in_call``: tool time minus the engine call made inside that tool
  call (validation, scope, thread hop, parsing, shaping: the tool's own work);
- ``overhead_paired``: tool time minus the separate raw call of the pair (adds
  the engine's run-to-run jitter; its p95 is noisier).

Concurrency: ``clients`` workers share one backend and one plan; tool clients
are asyncio tasks awaiting ``SearchTool.run``, raw clients are threads calling
the engine directly. Throughput is calls per second over the whole plan.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from _measure import percentiles

from scopegate.context import CallContext
from scopegate.scope import Scope
from scopegate.search.model import SearchQuery, SearchRequest
from scopegate.search.tools import SearchTool
from scopegate.search.validate import validate_search_args
from scopegate.testing.workload import WorkloadQuery

RawCall = Callable[[SearchQuery], Awaitable[Any]]


class Timed:
    """Wraps the engine call a tool makes, to time it from inside the tool."""

    def __init__(self) -> None:
        self.inside: list[float] = []

    def wrap_sync(self, fn: Callable[[SearchQuery], Any]) -> Callable[[SearchQuery], Any]:
        def timed(query: SearchQuery) -> Any:
            t0 = time.perf_counter()
            try:
                return fn(query)
            finally:
                self.inside.append(time.perf_counter() - t0)

        return timed

    def wrap_async(self, fn: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
        async def timed(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return await fn(*args, **kwargs)
            finally:
                self.inside.append(time.perf_counter() - t0)

        return timed


def prepared(tool: SearchTool, plan: Sequence[WorkloadQuery]) -> list[tuple[dict[str, Any], CallContext, SearchQuery]]:
    """(tool arguments, call context, engine query) per workload query; built before any timing."""
    out = []
    for q in plan:
        args = q.arguments()
        request = validate_search_args(tool.spec, args)
        if not isinstance(request, SearchRequest):
            raise ValueError(f"workload query rejected: {q} -> {request}")
        ctx = CallContext(state={tool.spec.scope_keys.tenant: q.tenant})
        out.append((args, ctx, tool.build_query(request, Scope(q.tenant))))
    return out


async def pairs(
    tool: SearchTool,
    raw: RawCall,
    timed: Timed,
    plan: Sequence[tuple[dict[str, Any], CallContext, SearchQuery]],
    raw_timed: Timed | None = None,
) -> dict[str, Any]:
    """Interleaved raw/tool pairs over ``plan``: latency percentiles and both overheads (ms).

    With ``raw_timed``, the raw call's latency is the time inside it (a raw call run on an
    application thread, timed there: the thread hop is not the engine's)."""
    raw_ms: list[float] = []
    tool_ms: list[float] = []
    inside_ms: list[float] = []
    in_call: list[float] = []
    paired: list[float] = []
    failures = {"raw": 0, "tool": 0}
    for i, (args, ctx, query) in enumerate(plan):

        async def run_raw(query: SearchQuery = query) -> float:
            if raw_timed is not None:
                raw_timed.inside.clear()
            t0 = time.perf_counter()
            try:
                await raw(query)
            except Exception:  # e.g. the engine's own timeout on a cold query: counted, not fatal
                failures["raw"] += 1
                return -(time.perf_counter() - t0)
            if raw_timed is not None and len(raw_timed.inside) == 1:
                return raw_timed.inside[0]
            return time.perf_counter() - t0

        async def run_tool(args: dict[str, Any] = args, ctx: CallContext = ctx) -> tuple[float, dict[str, Any]]:
            timed.inside.clear()
            t0 = time.perf_counter()
            result = (await tool.run(args, ctx)).result
            return time.perf_counter() - t0, result

        if i % 2 == 0:
            r = await run_raw()
            t, result = await run_tool()
        else:
            t, result = await run_tool()
            r = await run_raw()
        # A failed call keeps its latency (the time it took to fail); overheads need both calls to succeed.
        ok = result.get("status") == "ok"
        if not ok:
            if result.get("error_code") != "SEARCH_UNAVAILABLE":
                raise RuntimeError(f"tool call failed: {args} -> {result}")
            failures["tool"] += 1
        raw_ms.append(abs(r) * 1000)
        tool_ms.append(t * 1000)
        if ok and r >= 0 and len(timed.inside) == 1:
            inner = timed.inside[0]
            inside_ms.append(inner * 1000)
            in_call.append((t - inner) * 1000)
            paired.append((t - r) * 1000)
    return {
        "failures": failures,
        "raw_ms": percentiles(raw_ms),
        "tool_ms": percentiles(tool_ms),
        "engine_inside_tool_ms": percentiles(inside_ms),
        "overhead_in_call_ms": percentiles(in_call),
        "overhead_paired_ms": percentiles(paired),
    }


async def concurrent_tool(
    tool: SearchTool, plan: Sequence[tuple[dict[str, Any], CallContext, SearchQuery]], clients: int
) -> dict[str, Any]:
    """``clients`` asyncio tasks sharing ``plan`` through the tool."""
    latencies: list[float] = []
    cursor = iter(range(len(plan)))
    failures = 0

    async def client() -> None:
        nonlocal failures
        for i in cursor:
            args, ctx, _ = plan[i]
            t0 = time.perf_counter()
            result = (await tool.run(args, ctx)).result
            latencies.append((time.perf_counter() - t0) * 1000)
            if result.get("status") != "ok":
                if result.get("error_code") != "SEARCH_UNAVAILABLE":
                    raise RuntimeError(f"tool call failed: {args} -> {result}")
                failures += 1  # a time budget ran out under load: counted, its latency kept

    started = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(clients)))
    seconds = time.perf_counter() - started
    return {
        "clients": clients,
        "calls_per_s": round(len(plan) / seconds, 1),
        "latency_ms": percentiles(latencies),
        "failures": failures,
    }


def concurrent_raw_threads(
    call: Callable[[SearchQuery], Any], plan: Sequence[tuple[dict[str, Any], CallContext, SearchQuery]], clients: int
) -> dict[str, Any]:
    """``clients`` threads sharing ``plan``, each calling the engine directly."""
    latencies: list[float] = []

    def one(i: int) -> None:
        t0 = time.perf_counter()
        call(plan[i][2])
        latencies.append((time.perf_counter() - t0) * 1000)

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=clients) as pool:
        list(pool.map(one, range(len(plan))))
    seconds = time.perf_counter() - started
    return {"clients": clients, "calls_per_s": round(len(plan) / seconds, 1), "latency_ms": percentiles(latencies)}


async def concurrent_raw_async(
    raw: RawCall, plan: Sequence[tuple[dict[str, Any], CallContext, SearchQuery]], clients: int
) -> dict[str, Any]:
    """``clients`` asyncio tasks sharing ``plan``, each awaiting the raw engine call."""
    latencies: list[float] = []
    cursor = iter(range(len(plan)))
    failures = 0

    async def client() -> None:
        nonlocal failures
        for i in cursor:
            t0 = time.perf_counter()
            try:
                await raw(plan[i][2])
            except Exception:  # the client's timeout under load: counted, its latency kept
                failures += 1
            latencies.append((time.perf_counter() - t0) * 1000)

    started = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(clients)))
    seconds = time.perf_counter() - started
    return {
        "clients": clients,
        "calls_per_s": round(len(plan) / seconds, 1),
        "latency_ms": percentiles(latencies),
        "failures": failures,
    }
