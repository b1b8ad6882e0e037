"""The call cap in a real ADK run: a scripted model that keeps searching is stopped at the fifth search."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any

import pytest
from google.adk.agents import LlmAgent
from google.adk.apps import App
from google.adk.runners import InMemoryRunner
from google.genai import types

from scopegate.adapters.adk import AdkTool
from scopegate.adapters.adk_guard import AdkGuardHooks, GuardPlugin
from scopegate.backends.embedded import EmbeddedBackend
from scopegate.context import CallContext
from scopegate.guard.calllog import CallLog, MemorySink
from scopegate.guard.guard import Guard
from scopegate.search.normalise import search_cache_args
from scopegate.search.tools import FetchTool, SearchTool
from scopegate.testing.scripted_llm import ScriptedLlm, Turn, call, call_with_id, final_text
from scopegate.tools import ToolOutcome

QUERIES = ["refund failed", "E4012", "card declined", "Apple Pay", "processor unavailable", "charged twice",
           "refund window", "payout"]  # fmt: skip
GIVE_UP = "I searched as much as allowed; the search limit was reached, so this answer may be incomplete."


class CountingTool:
    """Delegates to a real tool and counts how often it really ran."""

    def __init__(self, tool: SearchTool) -> None:
        self.inner = tool
        self.name, self.description, self.family, self.read_only = tool.name, tool.description, tool.family, True
        self.requires_confirmation = False
        self.scope_keys = tool.scope_keys
        self.runs = 0

    def parameters_schema(self) -> dict[str, Any]:
        return self.inner.parameters_schema()

    def scope_of(self, ctx: CallContext) -> Any:
        return self.inner.scope_of(ctx)

    def cache_args(self, args: Mapping[str, Any]) -> Any:
        return search_cache_args(args)

    def describe(self, args: Mapping[str, Any]) -> Any:
        return self.inner.describe(args)

    async def generation(self) -> str:
        return await self.inner.generation()

    async def run(self, args: Mapping[str, Any], ctx: CallContext) -> ToolOutcome:
        self.runs += 1
        return await self.inner.run(args, ctx)


def looping_model(call_id: str | None = None) -> ScriptedLlm:
    """Searches with a new query every turn until a tool says CALL_LIMIT, then answers.

    With ``call_id`` every function call carries that same model-chosen id.
    """
    position = itertools.cycle(QUERIES)

    def step(responses: list[tuple[str, dict[str, Any]]]) -> Turn:
        if any(r.get("error_code") == "CALL_LIMIT" for _, r in responses):
            return final_text(GIVE_UP)
        if call_id is not None:
            return call_with_id(call_id, "search_tickets", query=next(position))
        return call("search_tickets", query=next(position))

    return ScriptedLlm([step] * (len(QUERIES) + 1))


async def run_turn(runner: InMemoryRunner, session_id: str) -> list[tuple[str, Any]]:
    events: list[tuple[str, Any]] = []
    async for event in runner.run_async(
        user_id="u", session_id=session_id, new_message=types.Content(role="user", parts=[types.Part(text="why?")])
    ):
        for part in event.content.parts if event.content and event.content.parts else []:
            if part.function_call:
                events.append(("call", part.function_call.name))
            elif part.function_response:
                events.append(("response", dict(part.function_response.response or {})))
            elif part.text and event.is_final_response():
                events.append(("answer", part.text))
    return events


def check_capped_turn(events: list[tuple[str, Any]]) -> None:
    calls = [e[1] for e in events if e[0] == "call"]
    responses = [e[1] for e in events if e[0] == "response"]
    assert calls == ["search_tickets"] * 5
    assert [r["status"] for r in responses] == ["ok"] * 4 + ["error"]
    refused = responses[4]
    assert refused["error_code"] == "CALL_LIMIT" and refused["retryable"] is False
    assert "answer" in refused["message"].lower()
    assert [e[1] for e in events if e[0] == "answer"] == [GIVE_UP]


@pytest.fixture
async def runner_parts(embedded: EmbeddedBackend) -> Any:
    sink = MemorySink()
    guard = Guard(call_log=CallLog(sink))
    search = CountingTool(SearchTool(embedded.spec, embedded))
    fetch = FetchTool(embedded.spec, embedded)
    yield guard, sink, search, fetch
    await guard.aclose()


async def test_plugin_stops_the_fifth_search_and_resets_per_invocation(runner_parts: Any) -> None:
    guard, sink, search, fetch = runner_parts
    model = looping_model()
    agent = LlmAgent(name="support", model=model, instruction="Use the tools.", tools=[AdkTool(search), AdkTool(fetch)])
    runner = InMemoryRunner(app=App(name="cap", root_agent=agent, plugins=[GuardPlugin(guard)]))
    session = await runner.session_service.create_session(app_name="cap", user_id="u", state={"tenant_id": "acme"})
    check_capped_turn(await run_turn(runner, session.id))
    assert search.runs == 4  # the fifth call never reached the tool
    # the next user turn is a new invocation with a fresh budget
    model.reset()
    second = await run_turn(runner, session.id)
    assert [e[1] for e in second if e[0] == "response"][3]["status"] == "ok"
    assert search.runs == 4 + 4
    # the refusals were logged and metered; the answers were reported
    assert guard.call_log is not None and guard.call_log.flush(5)
    refusals = [r for r in sink.records() if r.get("error_code") == "CALL_LIMIT"]
    assert len(refusals) == 2 and all(r["tool"] == "search_tickets" and r["family"] == "search" for r in refusals)
    assert guard.metrics is not None
    assert guard.metrics.snapshot()["answered_questions"] == 2
    assert guard.cap is not None and guard.cap.tracked() == 0  # after_run freed the invocations
    await runner.close()


async def test_agent_callbacks_stop_the_fifth_search(runner_parts: Any) -> None:
    guard, _, search, fetch = runner_parts
    hooks = AdkGuardHooks(guard)
    agent = LlmAgent(
        name="support",
        model=looping_model(),
        instruction="Use the tools.",
        tools=[AdkTool(search), AdkTool(fetch)],
        before_tool_callback=hooks.before_tool_callback,
        after_model_callback=hooks.after_model_callback,
    )
    runner = InMemoryRunner(agent=agent, app_name="cap")
    session = await runner.session_service.create_session(app_name="cap", user_id="u", state={"tenant_id": "acme"})
    check_capped_turn(await run_turn(runner, session.id))
    assert search.runs == 4
    assert guard.metrics is not None and guard.metrics.snapshot()["answered_questions"] == 1
    await runner.close()


async def test_guarded_tools_cap_cache_log_and_measure_a_real_run(runner_parts: Any) -> None:
    guard, sink, search, fetch = runner_parts
    tools = [AdkTool(guard.wrap(search)), AdkTool(guard.wrap(fetch))]
    agent = LlmAgent(name="support", model=looping_model(), instruction="Use the tools.", tools=tools)
    # the cap runs inside the guarded tools; the plugin only reports answers
    runner = InMemoryRunner(app=App(name="cap", root_agent=agent, plugins=[GuardPlugin(guard, enforce_cap=False)]))
    session = await runner.session_service.create_session(app_name="cap", user_id="u", state={"tenant_id": "acme"})
    check_capped_turn(await run_turn(runner, session.id))
    assert search.runs == 4
    assert guard.call_log is not None and guard.call_log.flush(5)
    lines = sink.records()
    calls = [r for r in lines if r["event"] == "call"]
    assert [r["error_code"] for r in calls] == [None] * 4 + ["CALL_LIMIT"]
    assert all(r["tenant_id"] == "acme" and r["invocation_id"] == calls[0]["invocation_id"] for r in calls)
    assert [r["query"] for r in calls[:4]] == [q.lower() for q in QUERIES[:4]]
    assert all(len(r["ids"]) > 0 and r["total"] > 0 for r in calls[:4])
    assert [r["event"] for r in lines].count("answer") == 1
    assert guard.metrics is not None
    snap = guard.metrics.snapshot()
    assert snap["answered_questions"] == 1 and snap["searches_per_answered_question"] == 4
    # the refused fifth call did not run: counted apart, not an error of the tool (issue 19)
    assert snap["refused_by_code"] == {"CALL_LIMIT": 1} and snap["error_rate_by_code"] == {}
    await runner.close()


async def test_a_repeated_function_call_id_does_not_get_past_the_cap(runner_parts: Any) -> None:
    """A model that sends the same function-call id on every call is still stopped at the fifth search.

    Guarded tools and the plugin are both installed (the plugin's default is to enforce the cap):
    each call is counted exactly once, and the id the model chose plays no part in the count.
    """
    guard, sink, search, fetch = runner_parts
    tools = [AdkTool(guard.wrap(search)), AdkTool(guard.wrap(fetch))]
    agent = LlmAgent(name="support", model=looping_model(call_id="fc-same"), instruction="Use the tools.", tools=tools)
    runner = InMemoryRunner(app=App(name="cap", root_agent=agent, plugins=[GuardPlugin(guard)]))
    session = await runner.session_service.create_session(app_name="cap", user_id="u", state={"tenant_id": "acme"})
    check_capped_turn(await run_turn(runner, session.id))
    assert search.runs == 4
    assert guard.call_log is not None and guard.call_log.flush(5)
    assert [r["error_code"] for r in sink.records() if r["event"] == "call"] == [None] * 4 + ["CALL_LIMIT"]
    await runner.close()
