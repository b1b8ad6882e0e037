"""Pure parts of the ADK glue: cap families, final-answer detection, hooks that never raise."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from google.adk.models.llm_response import LlmResponse
from google.adk.tools.function_tool import FunctionTool
from google.genai import types

from scopegate.adapters.adk import AdkTool
from scopegate.adapters.adk_guard import AdkGuardHooks, family_of, is_final_text
from scopegate.backends.embedded import EmbeddedBackend
from scopegate.demo.corpus import ticket_spec
from scopegate.guard.cap import CallCap, CapPolicy
from scopegate.guard.guard import Guard
from scopegate.search.tools import SearchTool


def plain_function(query: str) -> str:
    """A tool scopegate does not own."""
    return query


def search_tool() -> AdkTool:
    spec = ticket_spec()
    return AdkTool(SearchTool(spec, EmbeddedBackend(spec, None, threads=1)))


def response(*parts: types.Part, partial: bool = False) -> LlmResponse:
    return LlmResponse(content=types.Content(role="model", parts=list(parts)), partial=partial)


def test_family_of() -> None:
    assert family_of(search_tool()) == "search"
    foreign = FunctionTool(plain_function)
    assert family_of(foreign) == "plain_function"
    assert family_of(foreign, {"plain_function": "search"}) == "search"


def test_final_text_detection() -> None:
    text = types.Part(text="The refund failed because of E4012 (ACM-00012).")
    call = types.Part(function_call=types.FunctionCall(name="search_tickets", args={"query": "x"}))
    thought = types.Part(text="thinking...", thought=True)
    assert is_final_text(response(text))
    assert not is_final_text(response(text, partial=True))
    assert not is_final_text(response(text, call))
    assert not is_final_text(response(thought))
    assert not is_final_text(LlmResponse())


class FakeToolContext:
    """Just the attributes the hooks read from ADK's ToolContext."""

    def __init__(self, invocation_id: str, call_id: str) -> None:
        self.invocation_id = invocation_id
        self.function_call_id = call_id
        self.session = SimpleNamespace(id="s1")
        self.state = SimpleNamespace(to_dict=lambda: {"tenant_id": "acme"})


async def test_before_tool_hook_counts_every_call_whatever_its_id() -> None:
    guard = Guard(cap=CallCap(CapPolicy(family_limits={"search": 2})))
    hooks = AdkGuardHooks(guard)
    tool: Any = search_tool()
    assert await hooks.before_tool_callback(tool, {}, FakeToolContext("inv", "fc1")) is None  # type: ignore[arg-type]
    # The same function-call id again is a second call: ids come from the model and are not trusted.
    assert await hooks.before_tool_callback(tool, {}, FakeToolContext("inv", "fc1")) is None  # type: ignore[arg-type]
    refused = await hooks.before_tool_callback(tool, {}, FakeToolContext("inv", "fc1"))  # type: ignore[arg-type]
    assert refused is not None and refused["error_code"] == "CALL_LIMIT"
    off = AdkGuardHooks(guard, enforce_cap=False)
    assert await off.before_tool_callback(tool, {}, FakeToolContext("inv", "fc4")) is None  # type: ignore[arg-type]


async def test_before_tool_hook_lets_guarded_tools_count_themselves() -> None:
    guard = Guard(cap=CallCap(CapPolicy(family_limits={"search": 1})))
    hooks = AdkGuardHooks(guard)
    guarded: Any = AdkTool(guard.wrap(search_tool().tool))
    for n in range(3):  # the guarded tool's own cap decides; the hook never counts it
        assert await hooks.before_tool_callback(guarded, {}, FakeToolContext("inv", f"fc{n}")) is None  # type: ignore[arg-type]
    assert guard.cap is not None and guard.cap.used(family="search", invocation_id="inv") == 0


async def test_hooks_survive_broken_contexts() -> None:
    hooks = AdkGuardHooks(Guard())
    broken: Any = object()
    assert await hooks.before_tool_callback(SimpleNamespace(name="t"), {}, broken) is None  # type: ignore[arg-type]
    assert await hooks.after_model_callback(broken, response(types.Part(text="hi"))) is None
    assert await hooks.after_agent_callback(broken) is None
