"""Pure parts of the ADK glue: cap families, final-answer detection, hooks that never raise."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from google.adk.models.llm_response import LlmResponse
from google.genai import types

from scopegate.adapters.adk_guard import AdkGuardHooks, family_of, is_final_text
from scopegate.guard.cap import CallCap, CapPolicy
from scopegate.guard.guard import Guard


def response(*parts: types.Part, partial: bool = False) -> LlmResponse:
    return LlmResponse(content=types.Content(role="model", parts=list(parts)), partial=partial)


def test_family_of() -> None:
    wrapped = SimpleNamespace(name="search_tickets", tool=SimpleNamespace(family="search"))
    assert family_of(wrapped) == "search"
    assert family_of(SimpleNamespace(name="x", family="openapi")) == "openapi"
    assert family_of(SimpleNamespace(name="plain_function")) == "plain_function"
    assert family_of(SimpleNamespace(name="plain_function"), {"plain_function": "search"}) == "search"


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


async def test_before_tool_hook_caps_and_is_idempotent_per_function_call() -> None:
    guard = Guard(cap=CallCap(CapPolicy(family_limits={"search": 2})))
    hooks = AdkGuardHooks(guard)
    tool: Any = SimpleNamespace(name="search_tickets", tool=SimpleNamespace(family="search"))
    assert await hooks.before_tool_callback(tool, {}, FakeToolContext("inv", "fc1")) is None  # type: ignore[arg-type]
    assert await hooks.before_tool_callback(tool, {}, FakeToolContext("inv", "fc1")) is None  # type: ignore[arg-type]
    assert await hooks.before_tool_callback(tool, {}, FakeToolContext("inv", "fc2")) is None  # type: ignore[arg-type]
    refused = await hooks.before_tool_callback(tool, {}, FakeToolContext("inv", "fc3"))  # type: ignore[arg-type]
    assert refused is not None and refused["error_code"] == "CALL_LIMIT"
    off = AdkGuardHooks(guard, enforce_cap=False)
    assert await off.before_tool_callback(tool, {}, FakeToolContext("inv", "fc4")) is None  # type: ignore[arg-type]


async def test_hooks_survive_broken_contexts() -> None:
    hooks = AdkGuardHooks(Guard())
    broken: Any = object()
    assert await hooks.before_tool_callback(SimpleNamespace(name="t"), {}, broken) is None  # type: ignore[arg-type]
    assert await hooks.after_model_callback(broken, response(types.Part(text="hi"))) is None
    assert await hooks.after_agent_callback(broken) is None
