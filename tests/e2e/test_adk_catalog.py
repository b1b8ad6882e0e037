"""ADK end to end, catalog mode, from the YAML: find, describe and call operations of the orders API.

Real ``InMemoryRunner``, the real orders service on 127.0.0.1, a scripted offline model, ADK's
confirmation round trip through ``call_operation``, the guard's call log. The model sees three
tools; operations outside the allowlist, or beyond the caller's token scopes, are never found,
described or called; ownership refuses a foreign order behind ``call_operation`` too.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from catalog_config import ALL_SCOPES, OUTSIDE, READ_SCOPES, catalog_config
from google.adk.agents import LlmAgent
from google.adk.runners import InMemoryRunner

from scopegate.adk import ScopegateToolset
from scopegate.config import build_app, load_config
from scopegate.config.builder import ToolApp
from scopegate.demo.orders_demo import NEW_ADDRESS, confirmation_answer, confirmation_requests, send, user_text
from scopegate.examples.orders.data import ALICE, STAFF_KEY
from scopegate.examples.orders.server import RunningService, running_orders_service
from scopegate.testing.scripted_llm import ScriptedLlm, Step, Turn, final_text, function_responses

APP = "orders_catalog_e2e"
READER = "reader"  # a session whose (application-verified) token grants only orders:read
GRANTED = {ALICE: ALL_SCOPES, READER: READ_SCOPES}
Responses = list[tuple[str, dict[str, Any]]]


@pytest.fixture(scope="module")
def service() -> Iterator[RunningService]:
    with running_orders_service() as svc:
        yield svc


@pytest.fixture(autouse=True)
def _reset(service: RunningService) -> None:
    service.state.reset()


async def _app(
    service: RunningService, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str = "catalog"
) -> ToolApp:
    monkeypatch.setenv("ORDERS_STAFF_KEY", STAFF_KEY)
    table = tmp_path / "tokens.yaml"
    row = {"sha256": hashlib.sha256(b"unused").hexdigest(), "tenant": "shop", "user": ALICE}
    table.write_text(yaml.safe_dump({"tokens": [row]}), "utf-8")
    config = catalog_config(tmp_path, service.base_url, table, log=tmp_path / "calls.jsonl", mode=mode)
    return await build_app(load_config(config))


def use(tool: str, **args: Any) -> Turn:
    """One call of a catalog tool (``name`` is one of their arguments, so not ``call(name, **args)``)."""
    return Turn(calls=((tool, args),))


def _granted(tool_context: Any) -> list[str]:
    # The application's own record of what the signed-in user's token grants (ADK verifies no token).
    return GRANTED.get(str(tool_context.session.user_id), [])


def _names(responses: Responses) -> list[str]:
    return [o["name"] for o in responses[0][1].get("operations", [])]


def _runner(app: ToolApp, model: ScriptedLlm) -> InMemoryRunner:
    tools = ScopegateToolset(app, granted_scopes=_granted)
    agent = LlmAgent(name="orders_assistant", model=model, instruction="Help with orders.", tools=[tools])
    return InMemoryRunner(agent=agent, app_name=APP)


async def test_find_describe_call_confirm_and_ownership(
    service: RunningService, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: dict[str, Any] = {}

    def after_find(responses: Responses) -> Turn:
        seen["found"] = _names(responses)
        return use("describe_operation", name=seen["found"][0])

    def after_describe(responses: Responses) -> Turn:
        seen["described"] = responses[0][1]
        return use("call_operation", name="getOrder", arguments={"orderId": "ord_1001"})

    def after_read(responses: Responses) -> Turn:
        seen["read"] = responses[0][1]
        return final_text("ord_1001 found.")

    def remember(key: str, text: str) -> Step:
        def step(responses: Responses) -> Turn:
            seen[key] = responses[0][1]
            return final_text(text)

        return step

    def after_note_search(responses: Responses) -> Turn:
        seen["note_search"] = _names(responses)
        return use("call_operation", name="addOrderNote", arguments={"orderId": "ord_1001", "note": "x"})

    update = {"orderId": "ord_1001", **NEW_ADDRESS}
    script: list[Step | Turn] = [
        use("find_operations", query="get one order by its id"),
        after_find,
        after_describe,
        after_read,
        use("call_operation", name="updateShippingAddress", arguments=update),
        remember("changed", "Address changed."),
        use("call_operation", name="getOrder", arguments={"orderId": "ord_2001"}),
        remember("foreign", "I cannot find that order."),
        use("find_operations", query="attach a delivery note to an order; sales summary report; profile"),
        after_note_search,
        remember("note", "No such operation."),
    ]
    app = await _app(service, tmp_path, monkeypatch)
    model = ScriptedLlm(script)
    runner = _runner(app, model)
    try:
        session = await runner.session_service.create_session(
            app_name=APP, user_id=ALICE, state={"tenant_id": "shop", "user_id": ALICE}
        )
        await send(runner, session, user_text("Where is ord_1001?"), lambda _line: None)
        asked = await send(runner, session, user_text("Ship ord_1001 to 5 Quai Voltaire."), lambda _line: None)
        (request,) = confirmation_requests(asked)
        assert request.args["originalFunctionCall"]["name"] == "call_operation"
        assert "5 Quai Voltaire" in request.args["toolConfirmation"]["hint"]
        assert request.args["toolConfirmation"]["payload"]["tool"] == "updateShippingAddress"
        assert service.state.hits("updateShippingAddress") == 0  # nothing sent before approval
        done = await send(runner, session, confirmation_answer(request, True), lambda _line: None)
        ((name, result),) = function_responses(done)
        assert name == "call_operation" and result["status"] == "ok", result
        await send(runner, session, user_text("And ord_2001?"), lambda _line: None)
        await send(runner, session, user_text("Add a note to ord_1001"), lambda _line: None)
    finally:
        await runner.close()
        await app.aclose()

    assert seen["found"][0] == "getOrder"
    assert seen["described"]["declaration"]["name"] == "getOrder"
    assert seen["read"]["status"] == "ok" and seen["read"]["untrusted"]["data"]["customer_id"] == ALICE
    assert seen["changed"]["status"] == "ok" and service.state.hits("updateShippingAddress") == 1
    with service.state.lock:
        assert service.state.orders["ord_1001"]["shipping_address"]["line1"] == NEW_ADDRESS["line1"]
    assert seen["foreign"]["error_code"] == "NOT_FOUND" and "Bob" not in json.dumps(seen["foreign"])
    assert not set(OUTSIDE) & set(seen["note_search"])
    assert seen["note"]["error_code"] == "NOT_FOUND" and service.state.hits("addOrderNote") == 0

    # The model was shown three tools, never an operation's declaration up front.
    assert {d["name"] for d in model.seen_declarations[0]} == {
        "find_operations",
        "describe_operation",
        "call_operation",
    }
    # The call log names the operation actually called, each under its own line.
    records = [json.loads(line) for line in (tmp_path / "calls.jsonl").read_text().splitlines()]
    calls = [(r["tool"], r.get("operation"), r["error_code"]) for r in records if r["event"] == "call"]
    assert calls == [
        ("find_operations", None, None),
        ("describe_operation", "getOrder", None),
        ("getOrder", None, None),
        ("call_operation", "getOrder", None),
        ("updateShippingAddress", None, "CONFIRMATION_REQUIRED"),
        ("call_operation", "updateShippingAddress", "CONFIRMATION_REQUIRED"),
        ("updateShippingAddress", None, None),
        ("call_operation", "updateShippingAddress", None),
        ("getOrder", None, "NOT_FOUND"),
        ("call_operation", "getOrder", "NOT_FOUND"),
        ("find_operations", None, None),
        ("call_operation", "addOrderNote", "NOT_FOUND"),  # outside the allowlist: no operation line
    ]
    assert all(r["operation_id"] for r in records if r.get("family") == "openapi")
    assert "Quai Voltaire" not in json.dumps(records)  # argument names only


async def test_an_operation_beyond_the_token_scopes_is_never_found_nor_called(
    service: RunningService, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: dict[str, Any] = {}

    def after_find(responses: Responses) -> Turn:
        seen["found"] = responses[0][1]
        return use("describe_operation", name="cancelOrder")

    def after_describe(responses: Responses) -> Turn:
        seen["described"] = responses[0][1]
        return use("call_operation", name="cancelOrder", arguments={"orderId": "ord_1005", "reason": "changed_mind"})

    def after_call(responses: Responses) -> Turn:
        seen["called"] = responses[0][1]
        return use("call_operation", name="getOrder", arguments={"orderId": "ord_1005"})

    def after_read(responses: Responses) -> Turn:
        seen["read"] = responses[0][1]
        return final_text("done")

    app = await _app(service, tmp_path, monkeypatch)
    runner = _runner(app, ScriptedLlm([use("find_operations", query="cancel an order"), after_find, after_describe,
                                       after_call, after_read]))  # fmt: skip
    try:
        session = await runner.session_service.create_session(
            app_name=APP, user_id=READER, state={"tenant_id": "shop", "user_id": ALICE}
        )
        events = await send(runner, session, user_text("Cancel ord_1005"), lambda _line: None)
    finally:
        await runner.close()
        await app.aclose()
    assert not confirmation_requests(events)  # never asked: the operation does not exist for this caller
    names = [o["name"] for o in seen["found"]["operations"]]
    assert "cancelOrder" not in names and "updateShippingAddress" not in names and "getOrder" in names
    assert seen["described"]["error_code"] == seen["called"]["error_code"] == "NOT_FOUND"
    assert seen["read"]["status"] == "ok"  # what the token grants still runs
    assert service.state.hits("cancelOrder") == 0


async def test_flat_tools_beyond_the_token_scopes_are_refused_too(
    service: RunningService, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same scope check in flat mode: the write the reader's token does not grant is refused, nothing sent."""
    seen: dict[str, Any] = {}

    def after(responses: Responses) -> Turn:
        seen["cancel"] = responses[0][1]
        return final_text("done")

    app = await _app(service, tmp_path, monkeypatch, mode="flat")
    cancel = use("cancelOrder", orderId="ord_1005", reason="changed_mind")
    runner = _runner(app, ScriptedLlm([cancel, after]))
    try:
        session = await runner.session_service.create_session(
            app_name=APP, user_id=READER, state={"tenant_id": "shop", "user_id": ALICE}
        )
        events = await send(runner, session, user_text("Cancel ord_1005"), lambda _line: None)
    finally:
        await runner.close()
        await app.aclose()
    assert seen["cancel"]["error_code"] == "INSUFFICIENT_SCOPE"
    assert not confirmation_requests(events) and service.state.total_hits == 0
