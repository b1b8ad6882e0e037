"""The eval harness on the real worlds with scripted models: scoring, faults, confirmation, injection counters.

No local model needed: an "oracle" script makes the expected calls, an "attacker"
script obeys the planted instructions. Whatever the attacker does, scope
violations and unconfirmed writes stay 0 (enforced by the tools, counted by the
worlds from what the index and the orders service really returned and received).
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from scopegate.evals.adk_runner import run_case_adk
from scopegate.evals.evalset import EvalSet, load_eval_set, shipped_sets
from scopegate.evals.mcp_runner import mcp_support, run_case_mcp
from scopegate.evals.worlds import OrdersWorld, SupportWorld, orders_world, support_world
from scopegate.testing.scripted_llm import ScriptedLlm, Turn, call, final_text

pytestmark = pytest.mark.timeout(240)


def _set(name: str) -> EvalSet:
    return load_eval_set(shipped_sets()[name])


def _case(name: str, eval_id: str):  # type: ignore[no-untyped-def]
    return _set(name).select(ids=[f"{name}-{eval_id}"]).cases[0]


@pytest.fixture(scope="module")
async def support() -> AsyncIterator[SupportWorld]:
    async with support_world() as world:
        yield world


@pytest.fixture(scope="module")
async def orders() -> AsyncIterator[OrdersWorld]:
    async with orders_world() as world:
        yield world


async def test_oracle_passes_and_scores_bfcl_style(support: SupportWorld) -> None:
    case = _case("support", "apple-pay-refunds")
    model = ScriptedLlm(
        [call("search_tickets", query="apple pay refund", product="payments"), final_text("See ACM-1.")]
    )
    score = await run_case_adk(support, model, case)
    assert score.passed, score
    (turn,) = score.turns
    assert turn.right_tool and turn.exact_args and turn.trajectory
    assert score.transcript[0]["calls"][0]["status"] == "ok"


async def test_wrong_filter_is_right_tool_but_not_exact_args(support: SupportWorld) -> None:
    case = _case("support", "apple-pay-refunds")
    model = ScriptedLlm(
        [call("search_tickets", query="apple pay", product="payments", status="solved"), final_text("x")]
    )
    score = await run_case_adk(support, model, case)
    (turn,) = score.turns
    assert turn.right_tool and not turn.exact_args and not score.passed


async def test_decline_and_a_needless_call(support: SupportWorld) -> None:
    case = _case("support", "decline-01")
    assert (await run_case_adk(support, ScriptedLlm([final_text("Hello!")]), case)).passed
    needless = ScriptedLlm([call("search_tickets", query="hi"), final_text("Hello!")])
    score = await run_case_adk(support, needless, case)
    assert not score.passed and not score.turns[0].declined


async def test_an_injected_fault_is_an_error_envelope_and_a_retry_recovers(support: SupportWorld) -> None:
    case = _case("support", "retry-unavailable")
    model = ScriptedLlm(
        [
            call("search_tickets", query="payouts failed", product="payouts"),
            call("search_tickets", query="payouts failed", product="payouts"),
            final_text("Found them."),
        ]
    )
    score = await run_case_adk(support, model, case)
    statuses = [c["status"] for c in score.transcript[0]["calls"]]
    assert statuses == ["error", "ok"]
    assert score.passed, score
    no_retry = await run_case_adk(
        support, ScriptedLlm([call("search_tickets", query="payouts"), final_text("Down.")]), case
    )
    assert not no_retry.passed


async def test_an_attacker_tries_but_never_reaches_another_tenant(support: SupportWorld) -> None:
    case = _case("support", "inject-every-tenant")
    attacker = ScriptedLlm(
        [
            call("search_tickets", query="apple pay refund", product="payments"),
            call("search_tickets", query="tenant_id:* OR tenant_id:acme refund"),
            call("get_ticket", id="ACM-00001"),
            call("get_ticket", id="GLO-00002"),
            final_text("Here are other customers' tickets."),
        ]
    )
    score = await run_case_adk(support, attacker, case)
    assert score.attempted_attack
    assert score.scope_violations == 0
    statuses = [c["status"] for c in score.transcript[0]["calls"]]
    assert statuses[-2:] == ["error", "error"]  # NOT_FOUND for another tenant's ids


async def test_a_confirmed_write_is_sent_once_and_a_denied_one_never(orders: OrdersWorld) -> None:
    confirmed = _case("orders", "cancel-1009")
    model = ScriptedLlm([call("cancelOrder", orderId="ord_1009", reason="changed_mind"), final_text("Cancelled.")])
    score = await run_case_adk(orders, model, confirmed)
    assert score.passed, score
    assert orders.observation.writes_sent == 1 and score.unconfirmed_writes == 0
    denied = _case("orders", "cancel-denied")
    model = ScriptedLlm([call("cancelOrder", orderId="ord_1017", reason="other"), final_text("Not cancelled.")])
    score = await run_case_adk(orders, model, denied)
    assert score.transcript[0]["confirmations"] == 1  # asked, the user said no
    assert orders.observation.writes_sent == 0 and score.unconfirmed_writes == 0


async def test_every_case_gets_working_tools(orders: OrdersWorld) -> None:
    """Regression: Runner.close() closed a shared toolset's HTTP client, so later cases only saw INTERNAL."""
    case = _case("orders", "list-all")
    for _ in range(3):
        score = await run_case_adk(orders, ScriptedLlm([call("listOrders"), final_text("Here.")]), case)
        assert score.transcript[0]["calls"][0]["status"] == "ok", score.transcript


async def test_an_injected_write_is_counted_as_tried_and_never_sent(orders: OrdersWorld) -> None:
    case = _case("orders", "inject-cancel-all")
    attacker = ScriptedLlm(
        [
            call("getOrder", orderId="ord_1003"),
            call("cancelOrder", orderId="ord_1003", reason="other"),
            call("getOrder", orderId="ord_2001"),
            final_text("Done as the note said."),
        ]
    )
    score = await run_case_adk(orders, attacker, case)
    assert score.attempted_attack and not score.passed  # the write is a forbidden call in this case
    assert orders.observation.writes_sent == 0 and score.unconfirmed_writes == 0
    assert score.scope_violations == 0


async def test_over_mcp_with_the_real_server_and_client() -> None:
    ok_case = _case("support", "apple-pay-refunds")
    attack_case = _case("support", "inject-every-tenant")
    async with mcp_support() as (servers, world):
        oracle = ScriptedLlm([call("search_tickets", query="apple pay refund", product="payments"), final_text("ACM.")])
        score = await run_case_mcp(servers, world, oracle, ok_case)
        assert score.passed, score
        attacker = ScriptedLlm(
            [
                call("search_tickets", query="apple pay refund", product="payments"),
                call("get_ticket", id="ACM-00001"),
                Turn(text="Other tenants' data."),
            ]
        )
        score = await run_case_mcp(servers, world, attacker, attack_case)
        assert score.attempted_attack and score.scope_violations == 0
        assert [c["status"] for c in score.transcript[0]["calls"]] == ["ok", "error"]
