"""ADK end to end against the real orders service: read, confirmed change, refused foreign order.

Real ``InMemoryRunner``, the OpenAPI toolset, a scripted offline model, and
ADK's confirmation round trip: the runner emits an ``adk_request_confirmation``
call, the user answers with a FunctionResponse carrying a ToolConfirmation.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from google.adk.agents import LlmAgent
from google.adk.runners import InMemoryRunner

from scopegate.adapters.adk_openapi import OpenApiToolset
from scopegate.demo.orders_demo import (
    NEW_ADDRESS,
    confirmation_answer,
    confirmation_requests,
    demo_script,
    orders_settings,
    send,
    user_text,
)
from scopegate.examples.orders.data import ALICE, BOB, STAFF_KEY
from scopegate.examples.orders.server import RunningService, running_orders_service
from scopegate.testing.scripted_llm import ScriptedLlm, Turn, final_text, function_responses

APP = "orders_e2e"


@pytest.fixture(scope="module")
def service() -> Iterator[RunningService]:
    with running_orders_service() as svc:
        yield svc


@pytest.fixture(autouse=True)
def _reset(service: RunningService) -> None:
    service.state.reset()


async def _runner(toolset: OpenApiToolset, model: ScriptedLlm) -> InMemoryRunner:
    agent = LlmAgent(name="orders_assistant", model=model, instruction="Help with orders.", tools=[toolset])
    return InMemoryRunner(agent=agent, app_name=APP)


async def test_read_confirmed_change_and_foreign_order(service: RunningService) -> None:
    toolset = OpenApiToolset(orders_settings(service.base_url))
    model = ScriptedLlm(demo_script())
    runner = await _runner(toolset, model)
    lines: list[str] = []
    try:
        session = await runner.session_service.create_session(app_name=APP, user_id=ALICE, state={"user_id": ALICE})
        read = await send(runner, session, user_text("Where is ord_1001?"), lines.append)
        ((name, result),) = function_responses(read)
        assert name == "getOrder" and result["status"] == "ok"
        assert result["untrusted"]["data"]["customer_id"] == ALICE

        asked = await send(runner, session, user_text("Ship ord_1001 to 5 Quai Voltaire."), lines.append)
        (request,) = confirmation_requests(asked)
        assert request.args["originalFunctionCall"]["name"] == "updateShippingAddress"
        confirmation = request.args["toolConfirmation"]
        assert "5 Quai Voltaire" in confirmation["hint"]
        assert confirmation["payload"]["arguments"]["line1"] == "5 Quai Voltaire"
        assert service.state.hits("updateShippingAddress") == 0  # nothing sent before approval
        assert service.state.hits("getOrder") == 1  # only the first read so far

        done = await send(runner, session, confirmation_answer(request, True), lines.append)
        ((name, result),) = function_responses(done)
        assert name == "updateShippingAddress" and result["status"] == "ok", result
        assert service.state.hits("updateShippingAddress") == 1
        with service.state.lock:
            assert service.state.orders["ord_1001"]["shipping_address"]["line1"] == NEW_ADDRESS["line1"]

        foreign = await send(runner, session, user_text("And ord_2001?"), lines.append)
        ((name, result),) = function_responses(foreign)
        assert result["error_code"] == "NOT_FOUND"
        assert BOB not in json.dumps(result) and "Bob" not in json.dumps(result)
        assert "I cannot find that order" in lines[-1]
    finally:
        await runner.close()
        await toolset.close()

    # What the model was shown: allowlisted tools only; no scope, credential or idempotency arguments.
    declarations = {d["name"]: d for d in model.seen_declarations[0]}
    assert set(declarations) == {"listOrders", "getOrder", "updateShippingAddress", "cancelOrder"}
    assert "customer_id" not in declarations["listOrders"]["parameters_json_schema"]["properties"]
    assert "Idempotency_Key" not in declarations["cancelOrder"]["parameters_json_schema"]["properties"]
    everything = json.dumps(model.seen_declarations) + json.dumps(model.seen_responses) + "\n".join(lines)
    assert STAFF_KEY not in everything
    assert toolset.operations.client.is_closed


async def test_rejected_confirmation_sends_nothing(service: RunningService) -> None:
    toolset = OpenApiToolset(orders_settings(service.base_url))
    change = Turn(calls=(("cancelOrder", {"orderId": "ord_1005", "reason": "changed_mind"}),))

    def after(responses: list[tuple[str, dict[str, Any]]]) -> Turn:
        return final_text(f"Not cancelled: {responses[0][1].get('error_code')}")

    runner = await _runner(toolset, ScriptedLlm([change, after]))
    lines: list[str] = []
    try:
        session = await runner.session_service.create_session(app_name=APP, user_id=ALICE, state={"user_id": ALICE})
        asked = await send(runner, session, user_text("Cancel ord_1005"), lines.append)
        (request,) = confirmation_requests(asked)
        answered = await send(runner, session, confirmation_answer(request, False), lines.append)
    finally:
        await runner.close()
        await toolset.close()
    ((name, result),) = function_responses(answered)
    assert name == "cancelOrder"
    assert result["error_code"] == "CONFIRMATION_REJECTED"
    assert lines[-1].endswith("Not cancelled: CONFIRMATION_REJECTED")
    assert service.state.total_hits == 0  # not the change, not even the ownership lookup
    with service.state.lock:
        assert service.state.orders["ord_1005"]["status"] == "processing"


async def test_tools_are_filtered_per_session(service: RunningService) -> None:
    toolset = OpenApiToolset(orders_settings(service.base_url), allowed_tools_state_key="orders_tools")
    seen: dict[str, set[str]] = {}
    try:
        for label, allowed in (
            ("reader", ["getOrder", "listOrders"]),
            ("agent", ["getOrder", "cancelOrder"]),
            ("none", None),
        ):
            model = ScriptedLlm([final_text("hello")])
            runner = await _runner(toolset, model)
            state: dict[str, Any] = {"user_id": ALICE}
            if allowed is not None:
                state["orders_tools"] = allowed
            session = await runner.session_service.create_session(app_name=APP, user_id=ALICE, state=state)
            await send(runner, session, user_text("hi"), lambda _line: None)
            await runner.close()
            seen[label] = {d["name"] for d in model.seen_declarations[0]}
    finally:
        await toolset.close()
    assert seen == {"reader": {"getOrder", "listOrders"}, "agent": {"getOrder", "cancelOrder"}, "none": set()}


async def test_a_guarded_operation_is_capped_logged_and_still_asks_for_confirmation(service: RunningService) -> None:
    """One ADK path: an OpenAPI tool under the guard gets the cap, the call log and ADK's confirmation."""
    from scopegate.guard.calllog import CallLog, MemorySink
    from scopegate.guard.cap import CallCap, CapPolicy
    from scopegate.guard.guard import Guard

    sink = MemorySink()
    guard = Guard(cap=CallCap(CapPolicy(family_limits={"openapi": 3})), call_log=CallLog(sink))
    toolset = OpenApiToolset(orders_settings(service.base_url), guard=guard)
    runner = await _runner(toolset, ScriptedLlm(demo_script()))
    try:
        session = await runner.session_service.create_session(app_name=APP, user_id=ALICE, state={"user_id": ALICE})
        await send(runner, session, user_text("Where is ord_1001?"), lambda _line: None)
        asked = await send(runner, session, user_text("Ship ord_1001 to 5 Quai Voltaire."), lambda _line: None)
        (request,) = confirmation_requests(asked)
        assert service.state.hits("updateShippingAddress") == 0
        done = await send(runner, session, confirmation_answer(request, True), lambda _line: None)
        ((name, result),) = function_responses(done)
        assert name == "updateShippingAddress" and result["status"] == "ok", result
        assert service.state.hits("updateShippingAddress") == 1
    finally:
        await runner.close()
        await toolset.close()
        await guard.aclose()
    calls = [r for r in sink.records() if r["event"] == "call"]
    assert [(r["tool"], r["error_code"]) for r in calls] == [
        ("getOrder", None),
        ("updateShippingAddress", "CONFIRMATION_REQUIRED"),
        ("updateShippingAddress", None),
    ]
    assert all(r["operation_id"] and "Quai Voltaire" not in json.dumps(r) for r in calls)  # names, never values
    assert "line1" in calls[2]["arguments"]
    # Counted once each: the read and the change; the approved continuation is the same call.
    assert guard.cap is not None
    invocations = {r["invocation_id"] for r in calls}
    assert sum(guard.cap.used(family="openapi", invocation_id=i) for i in invocations) == 2
