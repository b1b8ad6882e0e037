"""Metric names and values after a known sequence of calls; spans around calls."""

from __future__ import annotations

from typing import Any

import pytest
from guard_test_tools import ListSearchTool, WriteTool, ctx, docs
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client import CollectorRegistry

from scopegate.guard.calllog import CallLog, MemorySink
from scopegate.guard.guard import Guard
from scopegate.guard.metrics import CallObservation, GuardMetrics, percentile
from scopegate.guard.stats import figures


class StepClock:
    """Each call takes exactly ``step`` seconds: start at t, end at t + step."""

    def __init__(self, steps: list[float]) -> None:
        self.steps = steps
        self.t = 0.0
        self.started = False

    def __call__(self) -> float:
        if not self.started:
            self.started = True
            return self.t
        self.started = False
        self.t += self.steps.pop(0)
        return self.t


def test_percentile_is_linear_between_ranks() -> None:
    assert percentile([], 0.5) is None
    assert percentile([7.0], 0.99) == 7.0
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 0.5) == pytest.approx(50.5)
    assert percentile(values, 0.95) == pytest.approx(95.05)
    assert percentile(values, 0.99) == pytest.approx(99.01)
    assert percentile([3.0, 1.0, 2.0], 0.5) == 2.0


async def test_metrics_after_a_known_sequence() -> None:
    # latencies (s) of the 8 calls below, in order
    clock = StepClock([0.010, 0.001, 0.020, 0.030, 0.0001, 0.004, 0.040, 0.002])
    sink = MemorySink()
    guard = Guard(call_log=CallLog(sink), clock=clock, generation_ttl_s=0.0)
    search = ListSearchTool(docs())
    writer = WriteTool(docs())
    # invocation A: 3 searches (one a cache hit, one with zero results), then an answer
    await guard.call(search, {"query": "refund"}, ctx(invocation="A"))  # miss, total 12
    await guard.call(search, {"query": "REFUND"}, ctx(invocation="A"))  # hit
    await guard.call(search, {"query": "zebra"}, ctx(invocation="A"))  # miss, total 0
    guard.invocation_answered("A", "sess-1")
    # invocation B: 4 searches + a refused fifth, an API call, then an answer
    await guard.call(search, {"query": " "}, ctx(invocation="B"))  # BAD_QUERY
    await guard.call(search, {"query": "payout"}, ctx(invocation="B"))  # miss, total 1
    await guard.call(search, {"query": "refund", "page": 3}, ctx(invocation="B"))  # miss, total 12 (page 3)
    await guard.call(writer, {"query": "x"}, ctx(invocation="B"))  # write, not cached, not a search
    await guard.call(search, {"query": "zebra"}, ctx(invocation="B"))  # hit (4th search)
    # the fifth search is refused and takes no measurable time on the step clock
    clock.steps.append(0.0)
    refused = (await guard.call(search, {"query": "more"}, ctx(invocation="B"))).result
    assert refused["error_code"] == "CALL_LIMIT"
    guard.invocation_answered("B", "sess-1")
    guard.invocation_answered("B", "sess-1")  # reported twice: counted once
    # invocation C: an answer without any search
    guard.invocation_answered("C")

    m = guard.metrics
    assert m is not None
    v = m.registry.get_sample_value
    assert v("scopegate_tool_calls_total", {"tool": "search_docs", "family": "search", "outcome": "ok"}) == 6
    assert v("scopegate_tool_calls_total", {"tool": "search_docs", "family": "search", "outcome": "error"}) == 2
    assert v("scopegate_tool_calls_total", {"tool": "update_ticket", "family": "openapi", "outcome": "ok"}) == 1
    assert v("scopegate_tool_errors_total", {"tool": "search_docs", "code": "BAD_QUERY"}) == 1
    assert v("scopegate_tool_errors_total", {"tool": "search_docs", "code": "CALL_LIMIT"}) == 1
    assert v("scopegate_result_lists_total", {"tool": "search_docs"}) == 6
    assert v("scopegate_zero_results_total", {"tool": "search_docs"}) == 2
    assert v("scopegate_cache_lookups_total", {"tool": "search_docs", "result": "hit"}) == 2
    assert v("scopegate_cache_lookups_total", {"tool": "search_docs", "result": "miss"}) == 5
    assert v("scopegate_answered_invocations_total") == 3
    assert v("scopegate_answer_searches_count") == 3
    assert v("scopegate_answer_searches_sum") == 3 + 4 + 0
    assert v("scopegate_answer_searches_bucket", {"le": "3.0"}) == 2
    # the refused fifth search did not run: no latency observed (issue 19)
    assert v("scopegate_tool_latency_seconds_count", {"tool": "search_docs"}) == 7
    assert v("scopegate_tool_latency_seconds_bucket", {"tool": "search_docs", "le": "0.005"}) == 4
    assert v("scopegate_zero_result_rate") == pytest.approx(2 / 6)
    assert v("scopegate_cache_hit_rate") == pytest.approx(2 / 7)
    assert v("scopegate_error_rate") == pytest.approx(1 / 8)  # of the 8 executed calls
    assert v("scopegate_searches_per_answered_question") == pytest.approx(7 / 3)
    latencies_ms = [10.0, 1.0, 20.0, 30.0, 0.1, 4.0, 40.0, 2.0]
    assert v("scopegate_tool_latency_quantile_seconds", {"quantile": "0.5"}) == pytest.approx(
        percentile(latencies_ms, 0.5) / 1000  # type: ignore[operator]
    )
    assert v("scopegate_tool_latency_quantile_seconds", {"quantile": "0.95"}) == pytest.approx(
        percentile(latencies_ms, 0.95) / 1000  # type: ignore[operator]
    )

    snap = m.snapshot()
    assert snap["calls"] == 9 and snap["executed"] == 8 and snap["errors"] == 1
    assert snap["refused_by_code"] == {"CALL_LIMIT": 1}
    assert snap["error_rate_by_code"] == {"BAD_QUERY": pytest.approx(1 / 8)}
    assert snap["latency_ms"]["p50"] == pytest.approx(percentile(latencies_ms, 0.5))
    assert snap["latency_ms"]["p99"] == pytest.approx(percentile(latencies_ms, 0.99))
    text = m.exposition().decode()
    assert "scopegate_tool_calls_total" in text and "scopegate_searches_per_answered_question" in text

    # the call log gives the same figures (what `scopegate stats` prints)
    assert guard.call_log is not None and guard.call_log.flush(5)
    from_log = figures(sink.records())
    for name in ("calls", "errors", "zero_result_rate", "cache_hit_rate", "searches_per_answered_question"):
        assert from_log[name] == pytest.approx(snap[name]), name
    assert from_log["error_rate_by_code"] == pytest.approx(snap["error_rate_by_code"])
    for q in ("p50", "p95", "p99"):
        assert from_log["latency_ms"][q] == pytest.approx(snap["latency_ms"][q], abs=1e-3)


def test_each_guard_has_its_own_registry() -> None:
    a, b = GuardMetrics(), GuardMetrics()
    obs = CallObservation("t", "search", "i:x", "ok", None, 0.01, None, 3, True, True)
    a.observe(obs)
    assert (
        a.registry.get_sample_value("scopegate_tool_calls_total", {"tool": "t", "family": "search", "outcome": "ok"})
        == 1
    )
    assert (
        b.registry.get_sample_value("scopegate_tool_calls_total", {"tool": "t", "family": "search", "outcome": "ok"})
        is None
    )
    shared = CollectorRegistry()
    GuardMetrics(shared, namespace="app1")
    GuardMetrics(shared, namespace="app2")  # distinct namespaces can share a registry


def test_empty_metrics_have_no_rates() -> None:
    snap = GuardMetrics().snapshot()
    assert snap["zero_result_rate"] is None and snap["cache_hit_rate"] is None
    assert snap["latency_ms"] == {"p50": None, "p95": None, "p99": None}


async def test_spans_around_calls() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    guard = Guard(tracer_provider=provider, generation_ttl_s=0.0)
    tool = ListSearchTool(docs())
    await guard.call(tool, {"query": "refund"}, ctx())
    await guard.call(tool, {"query": "refund"}, ctx())
    await guard.call(tool, {"query": ""}, ctx())
    spans = exporter.get_finished_spans()
    assert [s.name for s in spans] == ["scopegate.tool search_docs"] * 3
    attrs: list[dict[str, Any]] = [dict(s.attributes or {}) for s in spans]
    assert attrs[0]["scopegate.tenant_id"] == "acme" and attrs[0]["scopegate.cache_hit"] is False
    assert attrs[0]["scopegate.total"] == 12
    assert attrs[1]["scopegate.cache_hit"] is True
    assert attrs[2]["scopegate.error_code"] == "BAD_QUERY"
    assert spans[2].status.status_code.name == "ERROR"
    assert spans[0].status.status_code.name == "UNSET"


async def test_no_tracer_provider_means_no_spans_and_no_failures() -> None:
    guard = Guard()
    result = (await guard.call(ListSearchTool(docs()), {"query": "refund"}, ctx())).result
    assert result["status"] == "ok"
