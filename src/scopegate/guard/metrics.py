"""Health figures of the tool layer: Prometheus metrics and OpenTelemetry spans.

Tracked: zero-result rate, searches per answered question, tool latency
p50/p95/p99, error rate by code, cache hit rate. Each :class:`GuardMetrics`
owns its own ``CollectorRegistry`` (pass one to share), so two guards, or two
tests, never mix counts. Spans come from ``opentelemetry-api`` and are no-ops
until the application installs a tracer provider.

Definitions (the same in ``scopegate stats``):

* a *search* is a call of a tool in a search family (``search`` and ``fetch``:
  search, count and fetch-by-id) that ran or was served from cache;
  calls refused by the cap or the rate limit are not searches;
* calls that did not run, refusals by the guard (``CALL_LIMIT``,
  ``RATE_LIMITED``) and confirmation requests (``CONFIRMATION_*``), are counted
  apart (``refused``, ``confirmations``): they are not errors, and their
  latencies are not in the latency figures, which describe executed calls;
* the *zero-result rate* is over successful result-list calls, those whose log
  fields carry both ``total`` and ``page`` (fetch-by-id has no page);
* *searches per answered question* is, for each invocation the adapter reported
  as ending in a final answer, the number of searches it made.
"""

from __future__ import annotations

import math
import threading
import time
from bisect import bisect_left
from collections import OrderedDict, deque
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from opentelemetry import trace
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.registry import Collector

from scopegate.errors import (
    CALL_LIMIT,
    CONFIRMATION_REJECTED,
    CONFIRMATION_REQUIRED,
    CONFIRMATION_UNAVAILABLE,
    RATE_LIMITED,
)

SEARCH_FAMILIES = ("search", "fetch")
REFUSALS = frozenset({CALL_LIMIT, RATE_LIMITED})
CONFIRMATIONS = frozenset({CONFIRMATION_REQUIRED, CONFIRMATION_REJECTED, CONFIRMATION_UNAVAILABLE})

LATENCY_BUCKETS_S = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
SEARCHES_BUCKETS = (0, 1, 2, 3, 4, 5, 6, 8, 10, 15, 20)
QUANTILES = (0.5, 0.95, 0.99)
TRACER_NAME = "scopegate.guard"


def percentile(values: Sequence[float], q: float) -> float | None:
    """Linear interpolation between closest ranks (numpy's default); ``None`` when empty."""
    if not values:
        return None
    ordered = sorted(values)
    if len(ordered) == 1:
        return float(ordered[0])
    pos = (len(ordered) - 1) * q
    low = math.floor(pos)
    high = math.ceil(pos)
    frac = pos - low
    return float(ordered[low] + (ordered[high] - ordered[low]) * frac)


def rate(part: int | float, whole: int | float) -> float | None:
    return part / whole if whole else None


@dataclass(slots=True)
class CallObservation:
    """What the guard learned about one call, for metrics."""

    tool: str
    family: str
    turn_key: str | None
    outcome: str  # "ok" | "error"
    error_code: str | None
    latency_s: float
    cache_hit: bool | None  # None: not a cache candidate
    total: int | None
    result_list: bool
    counted_as_search: bool


class _Histogram:
    """Bucket counts, sum and count (Prometheus semantics: ``le`` buckets, cumulated at scrape)."""

    __slots__ = ("bounds", "count", "counts", "total")

    def __init__(self, bounds: Sequence[float]) -> None:
        self.bounds = tuple(bounds)
        self.counts = [0] * len(self.bounds)
        self.count = 0
        self.total = 0.0

    def observe(self, value: float) -> None:
        i = bisect_left(self.bounds, value)
        if i < len(self.counts):
            self.counts[i] += 1
        self.count += 1
        self.total += value

    def buckets(self) -> list[tuple[str, float]]:
        out: list[tuple[str, float]] = []
        running = 0
        for bound, n in zip(self.bounds, self.counts, strict=True):
            running += n
            out.append((repr(float(bound)), running))  # Prometheus' le text: 0.005, 3.0
        out.append(("+Inf", self.count))
        return out


class _Collector(Collector):
    """Turns a :class:`GuardMetrics`' counts into Prometheus families at scrape time."""

    def __init__(self, owner: GuardMetrics) -> None:
        self.owner = owner

    def describe(self) -> Iterable[Any]:
        return []

    def collect(self) -> Iterable[Any]:
        o = self.owner
        ns = o.namespace
        with o._lock:
            calls = dict(o._calls)
            errors = dict(o._errors)
            lists = dict(o._lists)
            zeros = dict(o._zeros)
            lookups = dict(o._lookups)
            failures = dict(o._log_failures)
            lost = dict(o._records_lost)
            latency = {tool: (h.buckets(), h.total) for tool, h in o._latency.items()}
            answers = (o._answer_hist.buckets(), o._answer_hist.total)
            answered = o._n_answered

        def counter(name: str, doc: str, labels: list[str], values: dict[Any, int]) -> CounterMetricFamily:
            family = CounterMetricFamily(f"{ns}_{name}", doc, labels=labels)
            for key, value in sorted(values.items()):
                family.add_metric(list(key) if isinstance(key, tuple) else [key], value)
            return family

        yield counter("tool_calls", "Tool calls through the guard", ["tool", "family", "outcome"], calls)
        yield counter("tool_errors", "Tool calls that returned an error envelope", ["tool", "code"], errors)
        yield counter("result_lists", "Successful result-list calls (searches with a total)", ["tool"], lists)
        yield counter("zero_results", "Successful result-list calls with a total of 0", ["tool"], zeros)
        yield counter("cache_lookups", "Cache lookups by result", ["tool", "result"], lookups)
        yield counter(
            "call_log_failures",
            "Call-log failure events by kind (a failed flush counts once; lost records: call_log_records_lost)",
            ["kind"],
            failures,
        )
        yield counter(
            "call_log_records_lost",
            "Call-log records that did not reach every sink, by reason (dropped, encode_error, sink_error)",
            ["reason"],
            lost,
        )
        total = CounterMetricFamily(f"{ns}_answered_invocations", "Invocations that ended in a final answer")
        total.add_metric([], answered)
        yield total
        hist = HistogramMetricFamily(
            f"{ns}_tool_latency_seconds", "Tool call latency through the guard", labels=["tool"]
        )
        for tool, (buckets, sum_value) in sorted(latency.items()):
            hist.add_metric([tool], buckets, sum_value)
        yield hist
        per_answer = HistogramMetricFamily(
            f"{ns}_answer_searches", "Searches made by each invocation that ended in a final answer"
        )
        per_answer.add_metric([], answers[0], answers[1])
        yield per_answer

        snap = o.snapshot()
        q = GaugeMetricFamily(
            f"{ns}_tool_latency_quantile_seconds",
            "Tool latency quantiles over the most recent calls (exact, windowed)",
            labels=["quantile"],
        )
        for quantile in QUANTILES:
            value = snap["latency_ms"][f"p{round(quantile * 100)}"]
            if value is not None:
                q.add_metric([str(quantile)], value / 1000.0)
        yield q
        for name, doc in (
            ("zero_result_rate", "Share of successful result-list calls with no result"),
            ("cache_hit_rate", "Share of cache lookups that hit"),
            ("error_rate", "Share of executed calls (not refusals or confirmation requests) that returned an error"),
            ("searches_per_answered_question", "Mean searches per invocation that ended in a final answer"),
        ):
            value = snap[name]
            g = GaugeMetricFamily(f"{ns}_{name}", doc)
            if value is not None:
                g.add_metric([], float(value))
            yield g


def _bump(counts: dict[Any, int], key: Any) -> None:
    counts[key] = counts.get(key, 0) + 1


class GuardMetrics:
    """Counts of the guard's calls under one lock; Prometheus families at scrape; exact :meth:`snapshot`.

    Everything recorded on the call path is a few dict increments under one
    lock; the Prometheus text is built only when the registry is scraped.
    """

    def __init__(
        self,
        registry: CollectorRegistry | None = None,
        *,
        namespace: str = "scopegate",
        latency_window: int = 10_000,
        max_tracked_invocations: int = 10_000,
    ) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        self.namespace = namespace
        self._lock = threading.Lock()
        self._calls: dict[tuple[str, str, str], int] = {}
        self._errors: dict[tuple[str, str], int] = {}
        self._lists: dict[str, int] = {}
        self._zeros: dict[str, int] = {}
        self._lookups: dict[tuple[str, str], int] = {}
        self._log_failures: dict[str, int] = {}
        self._records_lost: dict[str, int] = {}
        self._latency: dict[str, _Histogram] = {}
        self._answer_hist = _Histogram(SEARCHES_BUCKETS)
        self._latencies_ms: deque[float] = deque(maxlen=max(1, latency_window))
        self._max_invocations = max(1, max_tracked_invocations)
        self._searches: OrderedDict[str, int] = OrderedDict()
        self._answered_keys: OrderedDict[str, None] = OrderedDict()
        self._n_calls = 0
        self._refused: dict[str, int] = {}
        self._confirmations: dict[str, int] = {}
        self._n_errors = 0
        self._errors_by_code: dict[str, int] = {}
        self._n_lists = 0
        self._n_zero = 0
        self._n_hits = 0
        self._n_lookups = 0
        self._n_answered = 0
        self._n_answer_searches = 0
        self.registry.register(_Collector(self))

    # -- recording -------------------------------------------------------------
    def observe(self, obs: CallObservation) -> None:
        latency_s = max(0.0, obs.latency_s)
        is_list = obs.outcome == "ok" and obs.result_list and obs.total is not None
        with self._lock:
            self._n_calls += 1
            _bump(self._calls, (obs.tool, obs.family, obs.outcome))
            if obs.error_code in REFUSALS or obs.error_code in CONFIRMATIONS:  # not run: counted apart
                _bump(self._errors, (obs.tool, obs.error_code))
                _bump(self._refused if obs.error_code in REFUSALS else self._confirmations, obs.error_code)
                return
            hist = self._latency.get(obs.tool)
            if hist is None:
                hist = self._latency[obs.tool] = _Histogram(LATENCY_BUCKETS_S)
            hist.observe(latency_s)
            self._latencies_ms.append(latency_s * 1000.0)
            if obs.outcome == "error":
                code = obs.error_code or "UNKNOWN"
                self._n_errors += 1
                _bump(self._errors, (obs.tool, code))
                _bump(self._errors_by_code, code)
            if obs.cache_hit is not None:
                self._n_lookups += 1
                self._n_hits += int(obs.cache_hit)
                _bump(self._lookups, (obs.tool, "hit" if obs.cache_hit else "miss"))
            if is_list:
                self._n_lists += 1
                _bump(self._lists, obs.tool)
                if obs.total == 0:
                    self._n_zero += 1
                    _bump(self._zeros, obs.tool)
            if obs.counted_as_search and obs.turn_key is not None and obs.turn_key not in self._answered_keys:
                self._searches[obs.turn_key] = self._searches.get(obs.turn_key, 0) + 1
                self._searches.move_to_end(obs.turn_key)
                while len(self._searches) > self._max_invocations:
                    self._searches.popitem(last=False)

    def invocation_answered(self, turn_key: str) -> bool:
        """Record that an invocation ended in a final answer (once per invocation)."""
        with self._lock:
            if turn_key in self._answered_keys:
                return False
            self._answered_keys[turn_key] = None
            while len(self._answered_keys) > self._max_invocations:
                self._answered_keys.popitem(last=False)
            count = self._searches.pop(turn_key, 0)
            self._n_answered += 1
            self._n_answer_searches += count
            self._answer_hist.observe(count)
        return True

    def call_log_failure(self, kind: str) -> None:
        with self._lock:
            _bump(self._log_failures, kind)

    def call_log_records_lost(self, reason: str, n: int) -> None:
        with self._lock:
            self._records_lost[reason] = self._records_lost.get(reason, 0) + n

    # -- reading ---------------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            lat = list(self._latencies_ms)
            executed = self._n_calls - sum(self._refused.values()) - sum(self._confirmations.values())
            out: dict[str, Any] = {
                "calls": self._n_calls,
                "executed": executed,
                "refused": sum(self._refused.values()),
                "refused_by_code": dict(sorted(self._refused.items())),
                "confirmations": sum(self._confirmations.values()),
                "confirmations_by_code": dict(sorted(self._confirmations.items())),
                "errors": self._n_errors,
                "error_rate": rate(self._n_errors, executed),
                "error_rate_by_code": {
                    code: n / executed for code, n in sorted(self._errors_by_code.items()) if executed
                },
                "result_lists": self._n_lists,
                "zero_results": self._n_zero,
                "zero_result_rate": rate(self._n_zero, self._n_lists),
                "cache_lookups": self._n_lookups,
                "cache_hits": self._n_hits,
                "cache_hit_rate": rate(self._n_hits, self._n_lookups),
                "answered_questions": self._n_answered,
                "searches_per_answered_question": rate(self._n_answer_searches, self._n_answered),
            }
        out["latency_ms"] = {f"p{round(q * 100)}": percentile(lat, q) for q in QUANTILES}
        return out

    def exposition(self) -> bytes:
        """The Prometheus text format of this guard's registry."""
        return generate_latest(self.registry)


# -- OpenTelemetry ---------------------------------------------------------------
def get_tracer(provider: trace.TracerProvider | None = None) -> trace.Tracer:
    """The guard's tracer: from ``provider``, else the global one (a no-op until configured)."""
    return trace.get_tracer(TRACER_NAME, tracer_provider=provider)


_provider_check: list[float | bool] = [-1.0, False]  # [checked at (monotonic), configured]
PROVIDER_RECHECK_S = 1.0


def tracing_configured(explicit_provider: bool) -> bool:
    """False while no tracer provider is installed: spans would be no-ops, so none are made.

    The global provider is looked up at most once a second (the lookup reads the environment).
    """
    if explicit_provider:
        return True
    now = time.monotonic()
    if now - float(_provider_check[0]) >= PROVIDER_RECHECK_S:
        provider = trace.get_tracer_provider()
        _provider_check[1] = not isinstance(provider, (trace.ProxyTracerProvider, trace.NoOpTracerProvider))
        _provider_check[0] = now
    return bool(_provider_check[1])


@contextmanager
def tool_span(tracer: trace.Tracer | None, tool: str, family: str, tenant_id: str | None) -> Iterator[Any]:
    """A span around one tool call; yields ``None`` (no span) when ``tracer`` is None."""
    if tracer is None:
        yield None
        return
    attributes: dict[str, Any] = {"scopegate.tool": tool, "scopegate.family": family}
    if tenant_id is not None:
        attributes["scopegate.tenant_id"] = tenant_id
    with tracer.start_as_current_span(
        f"scopegate.tool {tool}", attributes=attributes, record_exception=False, set_status_on_exception=False
    ) as span:
        yield span


def finish_span(span: Any, *, outcome: str, error_code: str | None, cache_hit: bool | None, total: int | None) -> None:
    """Record the call's outcome on its span (never raises)."""
    try:
        if not span.is_recording():
            return
        span.set_attribute("scopegate.outcome", outcome)
        if cache_hit is not None:
            span.set_attribute("scopegate.cache_hit", cache_hit)
        if total is not None:
            span.set_attribute("scopegate.total", total)
        if error_code is not None:
            span.set_attribute("scopegate.error_code", error_code)
            span.set_status(trace.Status(trace.StatusCode.ERROR, error_code))
    except Exception:  # telemetry never fails a call
        return
