"""A hand-written workflow over the generated tools, against the real orders service: cancel_order.

Look up (getOrder, with its ownership rule), refuse what cannot be cancelled, ask the user, then
cancelOrder with an idempotency key derived from the caller and the order. Nothing reaches the
cancel endpoint before an approval, another customer's order is NOT_FOUND with no cancel sent,
and a repeated or concurrent cancel changes the order once.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from rt_helpers import ALICE, BOB, session

from scopegate.apptools import AppTool
from scopegate.examples.orders.server import RunningService
from scopegate.examples.orders.tools import cancel_order
from scopegate.guard import CallLog, Guard
from scopegate.openapi.runtime import OperationToolset


@pytest.fixture
def workflow(any_toolset: OperationToolset) -> AppTool:
    """cancel_order bound to a toolset with a service key (the tool checks) or the user's own token."""
    return cancel_order.bind(tools=any_toolset.tools, scope_keys=any_toolset.settings.scope_keys)


def cancels(svc: RunningService) -> list[Any]:
    return [r for r in svc.state.recorded() if r.method == "POST" and r.raw_path.endswith("/cancel")]


async def test_nothing_is_cancelled_before_the_user_approves(workflow: AppTool, orders_service: RunningService) -> None:
    args = {"order_id": "ord_1005", "reason": "changed_mind"}
    asked = (await workflow.run(args, session(ALICE))).result
    assert asked["error_code"] == "CONFIRMATION_REQUIRED"
    assert asked["confirmation"]["hint"].startswith("Cancel order ord_1005 (")
    assert orders_service.state.hits("getOrder") == 1 and cancels(orders_service) == []
    rejected = (await workflow.run(args, session(ALICE, confirmed=False))).result
    assert rejected["error_code"] == "CONFIRMATION_REJECTED"
    assert orders_service.state.hits("getOrder") == 1 and cancels(orders_service) == []
    done = await workflow.run(args, session(ALICE, confirmed=True))
    assert done.result["untrusted"]["data"] == {"order_id": "ord_1005", "status": "cancelled", "reason": "changed_mind"}
    [sent] = cancels(orders_service)
    assert json.loads(sent.body) == {"reason": "changed_mind"}
    assert sent.headers["idempotency-key"].startswith("sg-")
    assert [s["tool"] for s in done.log["steps"]] == ["getOrder", "cancelOrder"]
    with orders_service.state.lock:
        assert orders_service.state.orders["ord_1005"]["status"] == "cancelled"


async def test_another_customers_order_is_not_found_and_never_cancelled(
    workflow: AppTool, orders_service: RunningService
) -> None:
    for confirmed in (None, True):
        out = (await workflow.run({"order_id": "ord_2001"}, session(ALICE, confirmed=confirmed))).result
        assert out["error_code"] == "NOT_FOUND", out
    assert cancels(orders_service) == []
    with orders_service.state.lock:
        assert orders_service.state.orders["ord_2001"]["status"] == "processing"
    # Bob may cancel his own.
    assert (await workflow.run({"order_id": "ord_2001"}, session(BOB, confirmed=True))).result["status"] == "ok"


async def test_a_shipped_order_is_refused_before_asking(workflow: AppTool, orders_service: RunningService) -> None:
    out = (await workflow.run({"order_id": "ord_1002"}, session(ALICE))).result
    assert out["error_code"] == "CONFLICT" and "shipped" in out["message"]
    assert cancels(orders_service) == []


async def test_a_repeated_or_concurrent_cancel_changes_the_order_once(
    workflow: AppTool, orders_service: RunningService
) -> None:
    args = {"order_id": "ord_1009", "reason": "other"}
    outcomes = await asyncio.gather(*(workflow.run(args, session(ALICE, confirmed=True)) for _ in range(4)))
    sent = cancels(orders_service)
    keys = {r.headers["idempotency-key"] for r in sent}
    assert len(keys) == 1  # every attempt carried the same key
    assert orders_service.state.snapshot()["idempotency_keys"]["cancelOrder"] == [next(iter(keys))] * len(sent)
    ok = [o.result for o in outcomes if o.result["status"] == "ok"]
    late = [o.result for o in outcomes if o.result["status"] != "ok"]
    assert ok and all(r["untrusted"]["data"]["status"] == "cancelled" for r in ok)
    assert all(r["error_code"] == "CONFLICT" for r in late)  # the ones that looked after the change


async def test_the_guard_logs_the_workflow_and_its_steps(
    any_toolset: OperationToolset, orders_service: RunningService, tmp_path: Any
) -> None:
    guard = Guard(call_log=CallLog.to_file(tmp_path / "calls.jsonl"))
    tool = guard.wrap(cancel_order.bind(tools=any_toolset.tools, scope_keys=any_toolset.settings.scope_keys))
    await tool.run({"order_id": "ord_1013"}, session(ALICE))
    await tool.run({"order_id": "ord_1013"}, session(ALICE, confirmed=True))
    await guard.aclose()
    lines = [json.loads(line) for line in (tmp_path / "calls.jsonl").read_text().splitlines()]
    assert [line["error_code"] for line in lines] == ["CONFIRMATION_REQUIRED", None]
    assert [s["tool"] for s in lines[1]["steps"]] == ["getOrder", "cancelOrder"]
    assert lines[1]["steps"][1]["status"] == 200 and lines[1]["user_id"] == ALICE
    assert "ord_1013" not in json.dumps(lines)  # argument names, never values
