"""Guard.call end to end over in-memory ScopedTools: cap, cache, log, failures."""

from __future__ import annotations

from typing import Any

from guard_test_tools import ListSearchTool, NotADictTool, RaisingTool, SlowTool, WriteTool, ctx, docs

from scopegate.context import CallContext
from scopegate.errors import CALL_LIMIT, INTERNAL, NO_SCOPE, RATE_LIMITED, SEARCH_UNAVAILABLE
from scopegate.guard.cache import ToolCache
from scopegate.guard.calllog import CallLog, MemorySink
from scopegate.guard.cap import CallCap, CapPolicy, RateLimiter
from scopegate.guard.guard import Guard, GuardedTool
from scopegate.tools import ScopedTool, ToolOutcome


def make(**kw: Any) -> tuple[Guard, MemorySink]:
    sink = MemorySink()
    kw.setdefault("generation_ttl_s", 0.0)
    return Guard(call_log=CallLog(sink), **kw), sink


def records(guard: Guard, sink: MemorySink) -> list[dict[str, Any]]:
    assert guard.call_log is not None and guard.call_log.flush(5)
    return sink.records()


async def test_fifth_search_in_an_invocation_is_refused_without_running() -> None:
    guard, sink = make()
    tool = ListSearchTool(docs())
    results = [(await guard.call(tool, {"query": f"refund {i}"}, ctx())).result for i in range(5)]
    assert [r["status"] for r in results] == ["ok"] * 4 + ["error"]
    assert results[4]["error_code"] == CALL_LIMIT and results[4]["retryable"] is False
    assert tool.runs == 4
    log = records(guard, sink)
    assert [r["error_code"] for r in log] == [None] * 4 + [CALL_LIMIT]
    assert log[4]["query"] == "refund 4" and log[4]["cache_hit"] is None
    # a new invocation gets a new budget; ending one frees it
    assert ((await guard.call(tool, {"query": "refund"}, ctx(invocation="inv-2"))).result)["status"] == "ok"
    guard.invocation_ended("inv-1", "sess-1")
    assert ((await guard.call(tool, {"query": "refund"}, ctx())).result)["status"] == "ok"


async def test_cache_hit_is_served_marked_and_still_counts_against_the_cap() -> None:
    guard, sink = make(cap=CallCap(CapPolicy(family_limits={"search": 3})))
    tool = ListSearchTool(docs())
    a = (await guard.call(tool, {"query": "Refund  FAILED"}, ctx())).result
    b = (await guard.call(tool, {"query": "refund failed"}, ctx())).result
    assert a == b and tool.runs == 1
    c = (await guard.call(tool, {"query": "refund failed", "page": 2}, ctx())).result
    assert tool.runs == 2 and c["results"] != a["results"]
    assert ((await guard.call(tool, {"query": "refund failed"}, ctx())).result)["error_code"] == CALL_LIMIT
    log = records(guard, sink)
    assert [r["cache_hit"] for r in log] == [False, True, False, None]
    assert guard.cache is not None and guard.cache.stats.hits == 1


async def test_scopes_never_share_cached_results() -> None:
    guard, _ = make()
    tool = ListSearchTool(docs())
    acme = (await guard.call(tool, {"query": "refund"}, ctx("acme"))).result
    globex = (await guard.call(tool, {"query": "refund"}, ctx("globex", invocation="i2"))).result
    assert tool.runs == 2
    assert {r["id"].split("-")[0] for r in acme["results"]} == {"acme"}
    assert {r["id"].split("-")[0] for r in globex["results"]} == {"globex"}
    # groups and user are part of the scope too
    grouped = (await guard.call(tool, {"query": "refund"}, ctx("acme", invocation="i3", group_ids=["g1"]))).result
    user = (await guard.call(tool, {"query": "refund"}, ctx("acme", invocation="i4", user_id="u1"))).result
    assert grouped["status"] == user["status"] == "ok" and tool.runs == 4


async def test_generation_change_invalidates() -> None:
    guard, _ = make()
    tool = ListSearchTool(docs())
    await guard.call(tool, {"query": "refund"}, ctx(invocation="a"))
    await guard.call(tool, {"query": "refund"}, ctx(invocation="b"))
    assert tool.runs == 1
    tool.docs.append({"id": "acme-new", "tenant": "acme", "text": "refund new"})
    tool.bump()
    fresh = (await guard.call(tool, {"query": "refund"}, ctx(invocation="c"))).result
    assert tool.runs == 2 and fresh["total"] == 13


async def test_generation_memo_bounds_staleness() -> None:
    now = [0.0]
    guard, _ = make(generation_ttl_s=1.0, generation_clock=lambda: now[0])
    tool = ListSearchTool(docs())
    await guard.call(tool, {"query": "refund"}, ctx(invocation="a"))
    tool.docs.append({"id": "acme-new", "tenant": "acme", "text": "refund new"})
    tool.bump()
    stale = (await guard.call(tool, {"query": "refund"}, ctx(invocation="b"))).result
    assert stale["total"] == 12 and tool.runs == 1  # within the trusted second
    now[0] = 1.01
    fresh = (await guard.call(tool, {"query": "refund"}, ctx(invocation="c"))).result
    assert fresh["total"] == 13 and tool.runs == 2


async def test_results_computed_while_the_generation_changed_are_never_served_as_new() -> None:
    class Racing(ListSearchTool):
        async def run(self, args: Any, c: CallContext) -> ToolOutcome:
            outcome = await super().run(args, c)
            self.bump()  # an ingest committed while we searched
            return outcome

    guard, _ = make()
    tool = Racing(docs())
    await guard.call(tool, {"query": "refund"}, ctx(invocation="a"))
    await guard.call(tool, {"query": "refund"}, ctx(invocation="b"))
    # the first result was tagged with the generation read before the run, so it is stale at once
    assert tool.runs == 2
    assert guard.cache is not None and guard.cache.stats.hits == 0 and guard.cache.stats.stale == 1


async def test_errors_and_writes_are_not_cached() -> None:
    guard, sink = make(cap=None)
    tool = ListSearchTool(docs())
    for _ in range(2):
        assert ((await guard.call(tool, {"query": "  "}, ctx())).result)["error_code"] == "BAD_QUERY"
    assert tool.runs == 2
    for _ in range(2):
        assert ((await guard.call(tool, {"query": "x"}, ctx(None))).result)["error_code"] == NO_SCOPE
    assert tool.runs == 4
    writer = WriteTool(docs())
    for _ in range(2):
        await guard.call(writer, {"query": "refund"}, ctx())
    assert writer.runs == 2
    log = records(guard, sink)
    assert log[-1]["operation_id"] == "updateTicket" and log[-1]["http_status"] == 200
    assert log[-1]["family"] == "openapi" and log[-1]["cache_hit"] is None


async def test_broken_tools_become_envelopes_without_leaks() -> None:
    guard, sink = make(call_timeout_s=0.05)
    for tool, code in (
        (RaisingTool(docs()), INTERNAL),
        (NotADictTool(docs()), INTERNAL),
        (SlowTool(docs()), SEARCH_UNAVAILABLE),
    ):
        result = (await guard.call(tool, {"query": "refund"}, ctx(invocation=type(tool).__name__))).result
        assert result["status"] == "error" and result["error_code"] == code
        assert "secret" not in str(result) and "Traceback" not in str(result)
    assert guard.internal_errors == 2
    assert [r["error_code"] for r in records(guard, sink)] == [INTERNAL, INTERNAL, SEARCH_UNAVAILABLE]


async def test_malformed_log_fields_do_not_fail_the_call() -> None:
    class Awkward(ListSearchTool):
        async def run(self, args: Any, c: CallContext) -> ToolOutcome:
            outcome = await super().run(args, c)
            return ToolOutcome(outcome.result, ["not", "a", "mapping"])  # type: ignore[arg-type]

    guard, sink = make()
    result = (await guard.call(Awkward(docs()), {"query": "refund"}, ctx())).result
    assert result["status"] == "ok"
    (line,) = records(guard, sink)
    assert line["outcome"] == "ok" and "ids" not in line


async def test_log_fields_cannot_overwrite_guard_fields() -> None:
    class Sneaky(ListSearchTool):
        def log_fields(self, args: Any, result: Any) -> dict[str, Any]:
            return {"tenant_id": "globex", "latency_ms": -1, "cache_hit": True, "status": 201}

    guard, sink = make()
    await guard.call(Sneaky(docs()), {"query": "refund"}, ctx("acme"))
    (line,) = records(guard, sink)
    assert line["tenant_id"] == "acme" and line["tool_tenant_id"] == "globex"
    assert line["latency_ms"] >= 0 and line["cache_hit"] is False and line["status"] == 201


async def test_rate_limit_per_tenant() -> None:
    now = [0.0]
    guard, _ = make(cap=None, rate_limiter=RateLimiter(1.0, 2, clock=lambda: now[0]))
    tool = ListSearchTool(docs())
    got = [(await guard.call(tool, {"query": f"refund {i}"}, ctx("acme"))).result for i in range(3)]
    assert [r["status"] for r in got] == ["ok", "ok", "error"]
    assert got[2]["error_code"] == RATE_LIMITED and got[2]["retry_after"] == 1.0 and got[2]["retryable"]
    assert ((await guard.call(tool, {"query": "refund"}, ctx("globex"))).result)["status"] == "ok"
    assert tool.runs == 3


async def test_a_repeated_call_id_does_not_get_past_the_cap() -> None:
    """The cap counts every call: an id the caller chose (an ADK function-call id) buys nothing."""
    guard, _ = make(cap=CallCap(CapPolicy(family_limits={"search": 2})))
    tool = ListSearchTool(docs())
    same = CallContext(state={"tenant_id": "acme"}, invocation_id="i", extra={"call_id": "fc-1"})
    codes = [(await guard.call(tool, {"query": f"refund {n}"}, same)).result.get("error_code") for n in range(4)]
    assert codes == [None, None, CALL_LIMIT, CALL_LIMIT]
    assert tool.runs == 2
    assert guard.check_cap(tool="search_docs", family="search", ctx=same) is not None


async def test_a_confirmed_continuation_is_not_counted_twice() -> None:
    """The call that carries the user's decision continues the call that asked: one call, counted once."""
    guard, _ = make(cap=CallCap(CapPolicy(family_limits={"openapi": 1})))
    tool = WriteTool(docs())
    asked = ctx("acme")
    assert (await guard.call(tool, {"query": "refund"}, asked)).result["status"] == "ok"
    approved = CallContext(state=asked.state, invocation_id=asked.invocation_id, session_id="sess-1", confirmed=True)
    assert (await guard.call(tool, {"query": "refund"}, approved)).result["status"] == "ok"
    assert (await guard.call(tool, {"query": "refund"}, asked)).result["error_code"] == CALL_LIMIT


async def test_guarded_tool_is_a_scoped_tool() -> None:
    guard, _ = make()
    inner = ListSearchTool(docs())
    wrapped = guard.wrap(inner)
    assert isinstance(wrapped, GuardedTool) and isinstance(wrapped, ScopedTool)
    assert (wrapped.name, wrapped.family, wrapped.read_only) == ("search_docs", "search", True)
    assert wrapped.parameters_schema() == inner.parameters_schema()
    assert wrapped.scope_of(ctx()) == inner.scope_of(ctx())
    assert wrapped.inner is inner  # other attributes are read from the wrapped tool itself
    assert ((await wrapped.run({"query": "refund"}, ctx())).result)["total"] == 12
    assert ((await wrapped.run({"query": "refund"}, ctx())).result)["total"] == 12
    assert inner.runs == 1


async def test_components_can_be_switched_off() -> None:
    guard = Guard(cap=None, cache=None, metrics=None, call_log=None)
    tool = ListSearchTool(docs())
    for _ in range(10):
        assert ((await guard.call(tool, {"query": "refund"}, ctx())).result)["status"] == "ok"
    assert tool.runs == 10
    guard.invocation_answered("inv-1")
    await guard.aclose()


async def test_non_mapping_arguments() -> None:
    guard, _ = make()
    result = (await guard.call(ListSearchTool(docs()), ["not", "a", "dict"], ctx())).result  # type: ignore[arg-type]
    assert result["status"] == "error"


async def test_cache_only_for_configured_families() -> None:
    guard, _ = make(cache=ToolCache(families=("nothing",)))
    tool = ListSearchTool(docs())
    await guard.call(tool, {"query": "refund"}, ctx())
    await guard.call(tool, {"query": "refund"}, ctx())
    assert tool.runs == 2
