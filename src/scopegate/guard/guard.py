"""The guard: call cap, rate limit, cache, call log and metrics around any ScopedTool.

``Guard.call`` runs: cap check -> rate limit -> cache lookup -> ``tool.run`` ->
cache store -> call log -> metrics (inside an OpenTelemetry span). It never
raises: refusals are envelopes (``CALL_LIMIT``, ``RATE_LIMITED``), and a broken
cache, log sink or telemetry backend degrades to "not cached / not logged",
never to a failed call.

``GuardedTool`` is a guarded ScopedTool, so adapters (ADK, MCP) wrap it like
any other tool.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from opentelemetry import trace

from scopegate.context import CallContext
from scopegate.errors import INTERNAL, SEARCH_UNAVAILABLE, tool_error
from scopegate.guard.cache import GenerationTracker, ToolCache
from scopegate.guard.calllog import GUARD_FIELDS, SCHEMA_VERSION, CallLog
from scopegate.guard.cap import CallCap, RateLimiter
from scopegate.guard.metrics import (
    SEARCH_FAMILIES,
    CallObservation,
    GuardMetrics,
    finish_span,
    get_tracer,
    tool_span,
    tracing_configured,
)
from scopegate.scope import Scope
from scopegate.tools import LogFields, ScopedTool, ToolOutcome

log = logging.getLogger("scopegate.guard")

DEFAULT_CALL_TIMEOUT_S = 30.0
# How long a data generation read is trusted: after an ingest commit, cached
# results can be served for at most this long (OpenSearch's default refresh
# interval is also 1 s). 0 checks the generation on every call.
DEFAULT_GENERATION_TTL_S = 1.0


class _Default:
    """Marker for "build the default component"; pass ``None`` to switch one off."""

    def __repr__(self) -> str:
        return "DEFAULT"


DEFAULT: Any = _Default()


def _record_fields(fields: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in fields.items():
        name = str(key)
        out[f"tool_{name}" if name in GUARD_FIELDS else name] = value
    return out


class Guard:
    """Budgets, cache, log and metrics for tool calls. One per application (or per test)."""

    def __init__(
        self,
        *,
        cap: CallCap | None = DEFAULT,
        rate_limiter: RateLimiter | None = None,
        cache: ToolCache | None = DEFAULT,
        call_log: CallLog | None = None,
        metrics: GuardMetrics | None = DEFAULT,
        search_families: Iterable[str] = SEARCH_FAMILIES,
        call_timeout_s: float | None = DEFAULT_CALL_TIMEOUT_S,
        generation_ttl_s: float = DEFAULT_GENERATION_TTL_S,
        generation_clock: Callable[[], float] = time.monotonic,
        tracer_provider: trace.TracerProvider | None = None,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.cap: CallCap | None = CallCap() if cap is DEFAULT else cap
        self.rate_limiter = rate_limiter
        self.cache: ToolCache | None = ToolCache() if cache is DEFAULT else cache
        self.call_log = call_log
        self.metrics: GuardMetrics | None = GuardMetrics() if metrics is DEFAULT else metrics
        self.search_families = frozenset(search_families)
        self.call_timeout_s = call_timeout_s
        self.generations = GenerationTracker(generation_ttl_s, clock=generation_clock)
        self.tracer = get_tracer(tracer_provider)
        self._explicit_tracing = tracer_provider is not None
        self._clock = clock
        self.internal_errors = 0
        if self.call_log is not None and self.metrics is not None:
            self.call_log.on_failure(self.metrics.call_log_failure)
            self.call_log.on_records_lost(self.metrics.call_log_records_lost)

    # -- public API --------------------------------------------------------------
    def wrap(self, tool: ScopedTool) -> GuardedTool:
        return GuardedTool(tool, self)

    async def call(self, tool: ScopedTool, args: Mapping[str, Any], ctx: CallContext) -> ToolOutcome:
        """Run ``tool`` under the guard. Never raises (cancellation still propagates)."""
        started = self._clock()
        try:
            return await self._call(tool, args, ctx, started)
        except Exception:  # a guard bug must not reach the agent loop
            self.internal_errors += 1
            log.exception("guard failure around tool %r", tool.name)
            return ToolOutcome(
                tool_error(INTERNAL, "the tool call failed unexpectedly; try again later", retryable=True)
            )

    def invocation_answered(self, invocation_id: str | None, session_id: str | None = None) -> None:
        """The adapter saw this invocation end with a final answer (searches-per-answer metric)."""
        key = CallCap.turn_key(invocation_id, session_id)
        if key is None:
            return
        first = self.metrics.invocation_answered(key) if self.metrics is not None else True
        if first and self.call_log is not None:
            self.call_log.emit(
                {
                    "v": SCHEMA_VERSION,
                    "event": "answer",
                    "ts": time.time(),
                    "invocation_id": invocation_id,
                    "session_id": session_id,
                }
            )

    def invocation_ended(self, invocation_id: str | None, session_id: str | None = None) -> None:
        """Forget the invocation's call counts (its turn is over)."""
        if self.cap is not None:
            self.cap.end(invocation_id, session_id)

    async def __aenter__(self) -> Guard:
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the cache and the call log (queued lines are written). ``async with Guard(...)`` calls it."""
        if self.cache is not None:
            await self.cache.close()
        if self.call_log is not None:
            await asyncio.to_thread(self.call_log.close)

    # -- the pipeline --------------------------------------------------------------
    async def _call(self, tool: ScopedTool, args: Mapping[str, Any], ctx: CallContext, started: float) -> ToolOutcome:
        name = str(tool.name)
        family = str(tool.family)
        scope = self._scope(tool, ctx)
        if not tracing_configured(self._explicit_tracing):
            outcome, cache_hit, executed = await self._guarded_run(tool, args, ctx, scope)
            self._record(
                name, family, ctx, scope, outcome, cache_hit, executed, max(0.0, self._clock() - started), None
            )
            return outcome
        with tool_span(self.tracer, name, family, scope.tenant_id if scope else None) as span:
            outcome, cache_hit, executed = await self._guarded_run(tool, args, ctx, scope)
            latency_s = max(0.0, self._clock() - started)
            self._record(name, family, ctx, scope, outcome, cache_hit, executed, latency_s, span)
        return outcome

    def _admit(self, tool: str, family: str, ctx: CallContext) -> dict[str, Any] | None:
        """Count the call against the cap, or return the ``CALL_LIMIT`` envelope.

        A call that carries the user's confirmation decision (``ctx.confirmed``
        set by the adapter's confirmation flow, never by the model) continues a
        call that was counted when the confirmation was asked for: it is not
        counted again. Nothing the model chooses (such as a function-call id)
        can make a call count less.
        """
        if self.cap is None or ctx.confirmed is not None:
            return None
        return self.cap.admit(tool=tool, family=family, invocation_id=ctx.invocation_id, session_id=ctx.session_id)

    async def _guarded_run(
        self, tool: ScopedTool, args: Mapping[str, Any], ctx: CallContext, scope: Scope | None
    ) -> tuple[ToolOutcome, bool | None, bool]:
        """(outcome, cache_hit or None when not a cache candidate, whether the call was admitted)."""
        refused = self._admit(str(tool.name), str(tool.family), ctx)
        if refused is None and self.rate_limiter is not None:
            refused = self.rate_limiter.check(scope.tenant_id if scope is not None else "")
        if refused is not None:
            return ToolOutcome(refused, self._describe(tool, args)), None, False

        cache = self.cache
        if cache is None or scope is None or not cache.cacheable(tool):
            return await self._run(tool, args, ctx), None, True
        generation = await self.generations.current(tool)
        key = cache.key_for(tool, scope, args) if generation is not None else None
        if key is None or generation is None:
            return await self._run(tool, args, ctx), None, True
        cached = await cache.lookup(key, scope, generation)
        if cached is not None:
            return ToolOutcome(cached.result, cached.log), True, True
        outcome = await self._run(tool, args, ctx)
        if outcome.result.get("status") == "ok":
            # Tagged with the generation read *before* the run: if an ingest
            # committed meanwhile, the entry is already stale and the next lookup
            # at the new generation drops it. It is never served as newer than it is.
            await cache.put(key, scope, generation, outcome.result, outcome.log)
        return outcome, False, True

    async def _run(self, tool: ScopedTool, args: Mapping[str, Any], ctx: CallContext) -> ToolOutcome:
        try:
            # asyncio.timeout, unlike wait_for, does not wrap the call in a new task.
            async with asyncio.timeout(self.call_timeout_s):
                outcome = await tool.run(args, ctx)
        except TimeoutError:
            code = SEARCH_UNAVAILABLE if tool.family in self.search_families else INTERNAL
            return ToolOutcome(
                tool_error(code, f"the tool did not answer within {self.call_timeout_s:g} s; try again", retryable=True)
            )
        except Exception:  # a tool broke its never-raise contract
            self.internal_errors += 1
            log.exception("tool %r raised", tool.name)
            return ToolOutcome(tool_error(INTERNAL, "the tool failed unexpectedly; try again later", retryable=True))
        if not isinstance(outcome, ToolOutcome) or not isinstance(outcome.result, dict):
            self.internal_errors += 1
            return ToolOutcome(tool_error(INTERNAL, "the tool returned an invalid result", retryable=False))
        return outcome

    @staticmethod
    def _describe(tool: ScopedTool, args: Mapping[str, Any]) -> LogFields:
        try:
            return tool.describe(args)
        except Exception:  # describing a refused call never fails it
            return {}

    @staticmethod
    def _scope(tool: ScopedTool, ctx: CallContext) -> Scope | None:
        try:
            return tool.scope_of(ctx)
        except Exception:
            return None

    def _record(
        self,
        name: str,
        family: str,
        ctx: CallContext,
        scope: Scope | None,
        outcome: ToolOutcome,
        cache_hit: bool | None,
        executed: bool,
        latency_s: float,
        span: Any,
    ) -> None:
        """Call log line, metrics and span attributes for one call. Never raises."""
        if self.call_log is None and self.metrics is None and span is None:
            return
        result = outcome.result
        fields: LogFields = outcome.log if isinstance(outcome.log, Mapping) else {}
        status = "error" if result.get("status") == "error" else "ok"
        error_code = str(result.get("error_code")) if status == "error" else None
        total = fields.get("total")
        total_int = total if isinstance(total, int) and not isinstance(total, bool) else None
        if self.call_log is not None:
            try:
                record: dict[str, Any] = {
                    "v": SCHEMA_VERSION,
                    "event": "call",
                    "ts": time.time(),
                    "invocation_id": ctx.invocation_id,
                    "session_id": ctx.session_id,
                    "tool": name,
                    "family": family,
                    "tenant_id": scope.tenant_id if scope else None,
                    "group_ids": list(scope.group_ids) if scope else [],
                    "user_id": scope.user_id if scope else None,
                }
                record.update(_record_fields(fields))
                record.update(
                    {
                        "latency_ms": round(latency_s * 1000.0, 3),
                        "cache_hit": cache_hit,
                        "outcome": status,
                        "error_code": error_code,
                    }
                )
                self.call_log.emit(record)
            except Exception:  # logging never fails a call
                log.exception("call log failure")
        if self.metrics is not None:
            try:
                self.metrics.observe(
                    CallObservation(
                        tool=name,
                        family=family,
                        turn_key=CallCap.turn_key(ctx.invocation_id, ctx.session_id),
                        outcome=status,
                        error_code=error_code,
                        latency_s=latency_s,
                        cache_hit=cache_hit,
                        total=total_int,
                        result_list="page" in fields and total_int is not None,
                        counted_as_search=executed and family in self.search_families,
                    )
                )
            except Exception:  # metrics never fail a call
                log.exception("metrics failure")
        if span is not None:
            finish_span(span, outcome=status, error_code=error_code, cache_hit=cache_hit, total=total_int)

    def check_cap(self, *, tool: str, family: str, ctx: CallContext) -> dict[str, Any] | None:
        """The cap alone, for framework callbacks in front of tools the guard does not run.

        Returns ``None`` (admitted and counted) or the ``CALL_LIMIT`` envelope; a
        refusal is logged and metered like any refused call. Never raises.
        """
        if self.cap is None:
            return None
        started = self._clock()
        try:
            refused = self._admit(tool, family, ctx)
        except Exception:
            self.internal_errors += 1
            log.exception("call cap failure")
            return None
        if refused is not None:
            latency_s = max(0.0, self._clock() - started)
            self._record(tool, family, ctx, None, ToolOutcome(refused), None, False, latency_s, None)
        return refused


class GuardedTool:
    """A ScopedTool whose ``run`` goes through a :class:`Guard`; ``inner`` is the wrapped tool."""

    def __init__(self, tool: ScopedTool, guard: Guard) -> None:
        self.inner = tool
        self.guard = guard
        self.name: str = tool.name
        self.description: str = tool.description
        self.family: str = tool.family
        self.read_only: bool = tool.read_only
        self.requires_confirmation: bool = tool.requires_confirmation
        self.scope_keys = tool.scope_keys

    def parameters_schema(self) -> dict[str, Any]:
        return self.inner.parameters_schema()

    def scope_of(self, ctx: CallContext) -> Scope | None:
        return self.inner.scope_of(ctx)

    def describe(self, args: Mapping[str, Any]) -> LogFields:
        return self.inner.describe(args)

    async def run(self, args: Mapping[str, Any], ctx: CallContext) -> ToolOutcome:
        return await self.guard.call(self.inner, args, ctx)

    def __repr__(self) -> str:
        return f"GuardedTool({self.inner!r})"
