"""The real ADK Runner with an offline scripted model: the worked example, end to end."""

from __future__ import annotations

import json
from typing import Any

from google.adk.agents import LlmAgent
from google.adk.runners import InMemoryRunner
from google.genai import types

from scopegate.adapters.adk import adk_search_tools
from scopegate.backends.embedded import EmbeddedBackend
from scopegate.demo.search_demo import injection_script, most_common_code, support_script
from scopegate.testing.scripted_llm import ScriptedLlm


async def _run(backend: EmbeddedBackend, tenant: str | None, model: ScriptedLlm) -> list[tuple[str, Any]]:
    agent = LlmAgent(
        name="support", model=model, instruction="Use the tools.", tools=[*adk_search_tools(backend.spec, backend)]
    )
    runner = InMemoryRunner(agent=agent, app_name="e2e")
    state = {"tenant_id": tenant} if tenant else {}
    session = await runner.session_service.create_session(app_name="e2e", user_id="u", state=state)
    events: list[tuple[str, Any]] = []
    async for event in runner.run_async(
        user_id="u", session_id=session.id, new_message=types.Content(role="user", parts=[types.Part(text="help")])
    ):
        for part in event.content.parts if event.content and event.content.parts else []:
            if part.function_call:
                events.append(("call", (part.function_call.name, dict(part.function_call.args or {}))))
            elif part.function_response:
                events.append(("response", dict(part.function_response.response or {})))
            elif part.text and event.is_final_response():
                events.append(("answer", part.text))
    await runner.close()
    return events


async def test_worked_example(embedded: EmbeddedBackend, tickets: list[dict[str, Any]]) -> None:
    model = ScriptedLlm(support_script())
    events = await _run(embedded, "acme", model)
    calls = [e[1] for e in events if e[0] == "call"]
    responses = [e[1] for e in events if e[0] == "response"]
    answer = next(e[1] for e in events if e[0] == "answer")
    assert calls[0] == ("search_tickets", {"query": "apple pay refund failed", "product": "payments"})
    code = most_common_code([("search_tickets", responses[0])])
    assert code and calls[1] == ("search_tickets", {"query": code, "product": "payments"})
    assert all(code.lower() in (r["subject"] + r["snippet"]).lower() for r in responses[1]["results"])
    owner = {t["ticket_id"]: t["tenant_id"] for t in tickets}
    cited = [w.strip(".,") for w in answer.split() if w.strip(".,") in owner]
    assert cited and all(owner[c] == "acme" for c in cited)
    for response in responses:
        assert len(json.dumps(response["results"], ensure_ascii=False)) <= embedded.spec.hits_char_budget

    # What the model saw: exactly the spec's schema, no tool context, no tenant.
    declarations = {d["name"]: d for d in model.seen_declarations[0]}
    assert set(declarations) == {"search_tickets", "get_ticket"}
    assert declarations["search_tickets"]["parameters_json_schema"] == embedded.spec.json_schema()
    seen = json.dumps(model.seen_declarations)
    assert "tool_context" not in seen and "tenant" not in seen


async def test_injection_and_invented_arguments(embedded: EmbeddedBackend) -> None:
    events = await _run(embedded, "initech", ScriptedLlm(injection_script()))
    responses = [e[1] for e in events if e[0] == "response"]
    assert responses[1]["error_code"] == "BAD_ARGUMENTS"  # the invented tenant_id argument
    for response in responses:
        for hit in response.get("results", []):
            assert hit["ticket_id"].startswith("INI-")
    assert responses[3]["error_code"] == "NOT_FOUND"


async def test_session_without_tenant_gets_no_scope(embedded: EmbeddedBackend) -> None:
    events = await _run(embedded, None, ScriptedLlm(support_script()))
    responses = [e[1] for e in events if e[0] == "response"]
    assert responses[0]["error_code"] == "NO_SCOPE"
