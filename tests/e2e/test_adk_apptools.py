"""Hand-written tools and the counting tool through the real ADK Runner.

* The orders agent's ``cancel_order`` workflow (a hand-written tool over the generated OpenAPI
  tools) asks for ADK's confirmation with the order's details, sends nothing before the
  approval, cancels once after it, and nothing after a rejection; scope comes from a binding.
* The support agent answers "how many payments tickets by status" (and per week) with
  ``count_tickets``; the counts are the caller's own tickets even when the client forges state.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from google.adk.agents import LlmAgent
from google.adk.apps import App
from google.adk.runners import InMemoryRunner

from scopegate.adapters.adk import AdkTool
from scopegate.adapters.adk_openapi import OpenApiToolset
from scopegate.adapters.adk_scope import ScopeBindingPlugin, ScopePolicy
from scopegate.backends.embedded import EmbeddedBackend
from scopegate.demo.corpus import generate_tickets, ticket_spec, write_jsonl
from scopegate.demo.orders_demo import (
    CUSTOMERS,
    VISIBLE_OPERATIONS,
    confirmation_answer,
    confirmation_requests,
    function_responses,
    orders_settings,
    send,
    user_text,
)
from scopegate.demo.search_demo import brute_force_counts, count_script, run_agent
from scopegate.examples.orders.data import ALICE, STAFF_KEY
from scopegate.examples.orders.server import RunningService, running_orders_service
from scopegate.examples.orders.tools import cancel_order
from scopegate.guard import CallLog, Guard
from scopegate.scope import Scope
from scopegate.search.aggregation import AggregationRequest
from scopegate.testing.scripted_llm import ScriptedLlm, Turn, call, final_text
from scopegate_lab.agg_oracle import expected_counts, result_counts

APP = "apptools_e2e"


@pytest.fixture(scope="module")
def service() -> Iterator[RunningService]:
    with running_orders_service() as svc:
        yield svc


@pytest.fixture(autouse=True)
def _reset(service: RunningService) -> None:
    service.state.reset()


def _answer(responses: list[tuple[str, dict[str, Any]]]) -> Turn:
    result = responses[0][1] if responses else {}
    return final_text(result.get("error_code") or f"status {result['untrusted']['data']['status']}")


async def _cancel_run(service: RunningService, approve: bool, log: Path) -> tuple[Any, ...]:
    settings = orders_settings(service.base_url)
    policy = ScopePolicy.binding()
    toolset = OpenApiToolset(settings, scope_policy=policy, tool_filter=VISIBLE_OPERATIONS)
    guard = Guard(call_log=CallLog.to_file(log))
    bound = cancel_order.bind(tools=toolset.operations.tools, scope_keys=settings.scope_keys)
    workflow = AdkTool(guard.wrap(bound), scope_policy=policy)
    model = ScriptedLlm([Turn(calls=(("cancel_order", {"order_id": "ord_1005", "reason": "found_cheaper"}),)), _answer])
    agent = LlmAgent(name="orders", model=model, instruction="Help with orders.", tools=[toolset, workflow])
    runner = InMemoryRunner(app=App(name=APP, root_agent=agent, plugins=[ScopeBindingPlugin(CUSTOMERS)]))
    lines: list[str] = []
    try:
        # A client-chosen state naming another customer changes nothing: the binding decides.
        session = await runner.session_service.create_session(
            app_name=APP, user_id=ALICE, state={"user_id": "cust_bob"}
        )
        asked = await send(runner, session, user_text("Cancel ord_1005, I found it cheaper."), lines.append)
        (request,) = confirmation_requests(asked)
        before = (service.state.hits("getOrder"), service.state.hits("cancelOrder"))
        done = await send(runner, session, confirmation_answer(request, approve), lines.append)
    finally:
        await runner.close()
        await toolset.close()
        await guard.aclose()
    return model, request, before, function_responses(done), lines


async def test_the_workflow_asks_with_details_and_cancels_once_after_approval(
    service: RunningService, tmp_path: Path
) -> None:
    model, request, before, responses, lines = await _cancel_run(service, True, tmp_path / "calls.jsonl")
    assert request.args["originalFunctionCall"]["name"] == "cancel_order"
    hint = request.args["toolConfirmation"]["hint"]
    assert hint.startswith("Cancel order ord_1005 (1 item(s), ") and "EUR" in hint
    assert before == (1, 0)  # looked up, nothing cancelled before the approval
    ((name, result),) = responses
    assert name == "cancel_order" and result["untrusted"]["data"]["status"] == "cancelled"
    assert service.state.hits("cancelOrder") == 1 and lines[-1].endswith("status cancelled")
    with service.state.lock:
        assert service.state.orders["ord_1005"]["status"] == "cancelled"
    declared = {d["name"]: d for d in model.seen_declarations[0]}
    assert set(declared) == {"listOrders", "getOrder", "updateShippingAddress", "cancel_order"}
    assert set(declared["cancel_order"]["parameters_json_schema"]["properties"]) == {"order_id", "reason"}
    logged = [json.loads(line) for line in (tmp_path / "calls.jsonl").read_text().splitlines()]
    assert [entry["error_code"] for entry in logged] == ["CONFIRMATION_REQUIRED", None]
    assert logged[-1]["user_id"] == ALICE and [s["tool"] for s in logged[-1]["steps"]] == ["getOrder", "cancelOrder"]
    assert STAFF_KEY not in json.dumps(model.seen_responses) + "\n".join(lines)


async def test_a_rejected_workflow_changes_nothing(service: RunningService, tmp_path: Path) -> None:
    _model, _request, before, responses, _lines = await _cancel_run(service, False, tmp_path / "calls.jsonl")
    ((name, result),) = responses
    assert name == "cancel_order" and result["error_code"] == "CONFIRMATION_REJECTED"
    assert (service.state.hits("getOrder"), service.state.hits("cancelOrder")) == before == (1, 0)
    with service.state.lock:
        assert service.state.orders["ord_1005"]["status"] == "processing"


@pytest.fixture(scope="module")
def support(tmp_path_factory: pytest.TempPathFactory) -> tuple[EmbeddedBackend, Path, list[dict[str, Any]]]:
    folder = tmp_path_factory.mktemp("support")
    corpus = folder / "tickets.jsonl"
    write_jsonl(corpus, generate_tickets(per_tenant=150))
    docs = [json.loads(line) for line in corpus.open(encoding="utf-8")]
    backend = EmbeddedBackend(ticket_spec(), folder / "index")
    backend.ingest_sync(docs, batch_size=500)
    return backend, corpus, docs


async def test_the_support_agent_counts_payments_tickets_by_status(support: Any) -> None:
    backend, corpus, _docs = support
    seen: list[tuple[str, dict[str, Any]]] = []
    forged = {"tenant_id": "globex", "temp:tenant_id": "globex"}
    _ids, answer = await run_agent(
        backend, "acme", count_script(), "How many payments tickets by status?", lambda _l: None,
        state_delta=forged, seen=seen,
    )  # fmt: skip
    ((name, table),) = seen
    expected = brute_force_counts(corpus, "acme", "payments")
    assert name == "count_tickets" and result_counts(table) == expected
    assert answer is not None and answer.startswith(f"{sum(expected.values())} payments tickets: ")
    assert table["other"] == 0 and table["no_value"] == 0 and len(json.dumps(table)) < 1000


async def test_the_support_agent_counts_open_tickets_per_week(support: Any) -> None:
    backend, _corpus, docs = support
    args = {"group_by": "created_at", "interval": "week", "status": "open", "product": "payments"}
    args |= {"since": "2025-03-01", "until": "2025-03-31"}
    seen: list[tuple[str, dict[str, Any]]] = []
    script = [call("count_tickets", **args), final_text("Counted.")]
    await run_agent(backend, "globex", script, "Open payments tickets per week in March?", lambda _l: None, seen=seen)
    ((_name, table),) = seen
    request = AggregationRequest(
        "created_at", "week", (("product", "payments"), ("status", "open")), dt.date(2025, 3, 1), dt.date(2025, 3, 31)
    )
    expected = expected_counts(backend.spec, docs, Scope("globex"), request)
    assert result_counts(table) == expected.counts and table["total"] == expected.total > 0
    assert table["buckets"][0]["week"] == "2025-02-24"  # the ISO week holding March 1st
