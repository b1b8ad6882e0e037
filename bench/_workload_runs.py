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
from collections.abc import Awaitable, Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from _measure import percentiles

from scopegate.context import CallContext
from scopegate.scope import Scope
from scopegate.search.model import SearchQuery, SearchRequest
from scopegate.search.tools import SearchTool
from scopegate.search.validate import validate_search_args
from scopegate_lab.workload import WorkloadQuery

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


@dataclass
class Side:
    """One index measured by raw/tool pairs: its tool, its raw call, the timer inside the tool's engine
    call, its prepared plan and (optionally) the timer inside the raw call."""

    tool: SearchTool
    raw: RawCall
    timed: Timed
    plan: Sequence[tuple[dict[str, Any], CallContext, SearchQuery]]
    raw_timed: Timed | None = None


@dataclass
class _PairStats:
    raw_ms: list[float] = field(default_factory=list)
    tool_ms: list[float] = field(default_factory=list)
    inside_ms: list[float] = field(default_factory=list)
    in_call: list[float] = field(default_factory=list)
    paired: list[float] = field(default_factory=list)
    failures: dict[str, int] = field(default_factory=lambda: {"raw": 0, "tool": 0})

    def summary(self) -> dict[str, Any]:
        return {
            "failures": self.failures,
            "raw_ms": percentiles(self.raw_ms),
            "tool_ms": percentiles(self.tool_ms),
            "engine_inside_tool_ms": percentiles(self.inside_ms),
            "overhead_in_call_ms": percentiles(self.in_call),
            "overhead_paired_ms": percentiles(self.paired),
        }


async def _one_pair(side: Side, i: int, raw_first: bool, stats: _PairStats) -> None:
    """Query ``i`` of ``side.plan`` as a raw call and a tool call, in the order given, into ``stats``.

    With ``side.raw_timed``, the raw call's latency is the time inside it (a raw call run on an
    application thread, timed there: the thread hop is not the engine's)."""
    args, ctx, query = side.plan[i]

    async def run_raw() -> float:
        if side.raw_timed is not None:
            side.raw_timed.inside.clear()
        t0 = time.perf_counter()
        try:
            await side.raw(query)
        except Exception:  # e.g. the engine's own timeout on a cold query: counted, not fatal
            stats.failures["raw"] += 1
            return -(time.perf_counter() - t0)
        if side.raw_timed is not None and len(side.raw_timed.inside) == 1:
            return side.raw_timed.inside[0]
        return time.perf_counter() - t0

    async def run_tool() -> tuple[float, dict[str, Any]]:
        side.timed.inside.clear()
        t0 = time.perf_counter()
        result = (await side.tool.run(args, ctx)).result
        return time.perf_counter() - t0, result

    if raw_first:
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
        stats.failures["tool"] += 1
    stats.raw_ms.append(abs(r) * 1000)
    stats.tool_ms.append(t * 1000)
    if ok and r >= 0 and len(side.timed.inside) == 1:
        inner = side.timed.inside[0]
        stats.inside_ms.append(inner * 1000)
        stats.in_call.append((t - inner) * 1000)
        stats.paired.append((t - r) * 1000)


async def pairs(
    tool: SearchTool,
    raw: RawCall,
    timed: Timed,
    plan: Sequence[tuple[dict[str, Any], CallContext, SearchQuery]],
    raw_timed: Timed | None = None,
) -> dict[str, Any]:
    """Interleaved raw/tool pairs over ``plan`` (even pairs raw first): latency percentiles and both
    overheads (ms). One side of :func:`interleaved_pairs`."""
    return (await interleaved_pairs({"": Side(tool, raw, timed, plan, raw_timed)}))[""]


async def interleaved_pairs(sides: Mapping[str, Side]) -> dict[str, dict[str, Any]]:
    """Query by query, a raw/tool pair on every side (plans of equal length, the same queries).

    The sides take turns going first (in the mapping's order on even pairs of queries, reversed on odd
    ones) and, independently, raw or tool goes first in each pair: all four orders occur equally
    often. So every side is measured in the same process state and the same minutes of the host:
    comparing them compares what the calls themselves cost, not what ran before a block of them."""
    names = list(sides)
    lengths = {len(side.plan) for side in sides.values()}
    if len(lengths) != 1:
        raise ValueError(f"the sides' plans differ in length: {lengths}")
    stats = {name: _PairStats() for name in names}
    for i in range(lengths.pop()):
        order = names if (i // 2) % 2 == 0 else names[::-1]
        for name in order:
            await _one_pair(sides[name], i, i % 2 == 0, stats[name])
    return {name: stats[name].summary() for name in names}


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
