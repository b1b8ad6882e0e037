"""Concurrent tool calls with every outcome recorded: the load of the cluster failure tests and benchmark.

:class:`LoadRunner` keeps ``concurrency`` workers calling tools (through a
:class:`~scopegate.guard.guard.Guard` when given) until :meth:`LoadRunner.stop`;
each call becomes a :class:`CallRecord` (start time, latency, status, error
code, partial flag, total, returned ids). :func:`audit` then checks the
invariants the failure tests assert: every id belongs to the caller's tenant,
every complete (non-partial) answer has the ground-truth total, a fetch of an
existing id is never "not found".
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from scopegate.context import CallContext
from scopegate.errors import NOT_FOUND
from scopegate.guard.guard import Guard
from scopegate.tools import ScopedTool


@dataclass(frozen=True)
class Call:
    """One call the load makes: which tool, as which tenant, with which arguments."""

    label: str  # e.g. "replicated/search": groups records in reports
    tool: ScopedTool
    tenant: str
    args: Mapping[str, Any]
    expected_total: int | None = None  # ground truth for a complete search answer
    expect_found: bool = False  # a fetch of an id the tenant owns


@dataclass(frozen=True)
class CallRecord:
    label: str
    tenant: str
    args: Mapping[str, Any]
    started: float  # time.monotonic()
    latency_s: float
    status: str
    error_code: str | None
    partial: bool
    total: int | None
    ids: tuple[str, ...]
    expected_total: int | None
    expect_found: bool
    reason: str | None = None  # partial_reason, or the error message


def _ids(result: Mapping[str, Any], id_field: str) -> tuple[str, ...]:
    if isinstance(result.get("results"), list):
        return tuple(str(r.get(id_field)) for r in result["results"])
    document = result.get("document")
    if isinstance(document, Mapping):
        return (str(document.get(id_field)),)
    return ()


async def run_call(call: Call, guard: Guard | None, id_field: str) -> CallRecord:
    ctx = CallContext(state={"tenant_id": call.tenant}, invocation_id=f"load-{random.getrandbits(32):x}")
    started = time.monotonic()
    outcome = await (guard.call(call.tool, call.args, ctx) if guard is not None else call.tool.run(call.args, ctx))
    latency = time.monotonic() - started
    result = outcome.result
    total = result.get("total")
    return CallRecord(
        label=call.label,
        tenant=call.tenant,
        args=call.args,
        started=started,
        latency_s=latency,
        status=str(result.get("status")),
        error_code=result.get("error_code"),
        partial=bool(result.get("partial", False)),
        total=total if isinstance(total, int) else None,
        ids=_ids(result, id_field),
        expected_total=call.expected_total,
        expect_found=call.expect_found,
        reason=result.get("partial_reason") or result.get("message"),
    )


@dataclass
class LoadRunner:
    """``concurrency`` workers drawing calls from ``calls`` (random, seeded) until stopped."""

    calls: Sequence[Call]
    id_field: str
    guard: Guard | None = None
    concurrency: int = 4
    seed: int = 0
    pause_s: float = 0.0  # between one worker's calls (0: closed loop, as fast as answers come)
    records: list[CallRecord] = field(default_factory=list)
    _stop: asyncio.Event = field(default_factory=asyncio.Event)
    _tasks: list[asyncio.Task[None]] = field(default_factory=list)

    async def _worker(self, number: int) -> None:
        rng = random.Random(self.seed * 1000 + number)
        while not self._stop.is_set():
            call = rng.choice(self.calls)
            self.records.append(await run_call(call, self.guard, self.id_field))
            if self.pause_s:
                await asyncio.sleep(self.pause_s)
            else:
                await asyncio.sleep(0)

    def start(self) -> None:
        self._stop.clear()
        self._tasks = [asyncio.create_task(self._worker(i)) for i in range(self.concurrency)]

    async def stop(self) -> list[CallRecord]:
        self._stop.set()
        await asyncio.gather(*self._tasks)
        self._tasks = []
        return self.records

    async def run_for(self, seconds: float) -> list[CallRecord]:
        """Start, run ``seconds``, stop; the records of this run only."""
        first = len(self.records)
        self.start()
        await asyncio.sleep(seconds)
        await self.stop()
        return self.records[first:]


@dataclass
class Audit:
    calls: int = 0
    ok: int = 0
    errors: dict[str, int] = field(default_factory=dict)
    partial: int = 0
    cross_tenant: list[tuple[str, str]] = field(default_factory=list)  # (tenant, foreign id)
    dishonest: list[CallRecord] = field(default_factory=list)  # complete answer, wrong total
    false_not_found: list[CallRecord] = field(default_factory=list)  # existing id reported absent
    over_budget: list[CallRecord] = field(default_factory=list)
    max_latency_s: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "calls": self.calls,
            "ok": self.ok,
            "errors": dict(sorted(self.errors.items())),
            "partial": self.partial,
            "cross_tenant": len(self.cross_tenant),
            "dishonest_totals": len(self.dishonest),
            "false_not_found": len(self.false_not_found),
            "over_budget": len(self.over_budget),
            "max_latency_s": round(self.max_latency_s, 3),
        }


def _honest(total: int, expected: int, partial: bool) -> bool:
    """Complete: exactly the ground truth. Partial (shards missing): never more than it."""
    return total <= expected if partial else total == expected


def audit(records: Sequence[CallRecord], owner_of: Callable[[str], str | None], *, budget_s: float) -> Audit:
    """Check every record: tenant of each id, honest totals when complete, fetch never falsely absent, budget."""
    out = Audit()
    for r in records:
        out.calls += 1
        out.max_latency_s = max(out.max_latency_s, r.latency_s)
        if r.latency_s > budget_s:
            out.over_budget.append(r)
        if r.status != "ok":
            code = r.error_code or "?"
            out.errors[code] = out.errors.get(code, 0) + 1
            if code == NOT_FOUND and r.expect_found:
                out.false_not_found.append(r)
            continue
        out.ok += 1
        out.partial += r.partial
        out.cross_tenant += [(r.tenant, i) for i in r.ids if owner_of(i) != r.tenant]
        if r.expected_total is not None and r.total is not None and not _honest(r.total, r.expected_total, r.partial):
            out.dishonest.append(r)
    return out


async def run_timeline(
    runner: LoadRunner, steps: Sequence[tuple[str, Callable[[], object]]], *, settle_s: float
) -> dict[str, float]:
    """Run the load through ``steps``: ``settle_s`` of load, then each step (a blocking callable, run in a
    thread while the load goes on) followed by ``settle_s`` more. Returns when each event ended
    (``time.monotonic()``), keyed by step name, when it began (``"<name>.begin"``), plus ``"start"``
    and ``"end"``.
    """
    events = {"start": time.monotonic()}
    runner.start()
    try:
        await asyncio.sleep(settle_s)
        for name, step in steps:
            events[f"{name}.begin"] = time.monotonic()
            await asyncio.to_thread(step)
            events[name] = time.monotonic()
            await asyncio.sleep(settle_s)
    finally:
        await runner.stop()
    events["end"] = time.monotonic()
    return events


def between(
    records: Sequence[CallRecord], start: float, end: float, *, label: str | None = None, whole: bool = False
) -> list[CallRecord]:
    """Records of calls that started in ``[start, end)`` (``whole``: and ended before ``end``), of ``label``."""
    return [
        r
        for r in records
        if start <= r.started < end
        and (not whole or r.started + r.latency_s < end)
        and (label is None or r.label == label)
    ]
