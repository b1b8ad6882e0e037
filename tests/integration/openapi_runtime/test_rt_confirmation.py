"""State-changing operations need approval; asking or a rejection sends nothing at all."""

from __future__ import annotations

from rt_helpers import ALICE, session

from scopegate.examples.orders.server import RunningService
from scopegate.openapi.runtime import OperationToolset

CANCEL = {"orderId": "ord_1001", "reason": "changed_mind"}


async def test_reads_need_no_confirmation(staff_toolset: OperationToolset) -> None:
    assert not staff_toolset.tool("getOrder").requires_confirmation
    result = (await staff_toolset.tool("getOrder").run({"orderId": "ord_1001"}, session(ALICE))).result
    assert result["status"] == "ok"


async def test_writes_ask_first_and_send_nothing(
    staff_toolset: OperationToolset, orders_service: RunningService
) -> None:
    for op in ("updateShippingAddress", "cancelOrder", "addOrderNote", "postFlaky"):
        assert staff_toolset.tool(op).requires_confirmation, op
    result = (await staff_toolset.tool("cancelOrder").run(CANCEL, session(ALICE))).result
    assert result["error_code"] == "CONFIRMATION_REQUIRED"
    assert result["confirmation"]["payload"] == {
        "tool": "cancelOrder",
        "operation": "cancelOrder",
        "method": "POST",
        "path": "/orders/{orderId}/cancel",
        "arguments": CANCEL,
    }
    assert "ord_1001" in result["confirmation"]["hint"]
    assert orders_service.state.total_hits == 0  # not even the ownership lookup


async def test_rejection_sends_nothing(staff_toolset: OperationToolset, orders_service: RunningService) -> None:
    result = (await staff_toolset.tool("cancelOrder").run(CANCEL, session(ALICE, confirmed=False))).result
    assert result["error_code"] == "CONFIRMATION_REJECTED"
    assert result["retryable"] is False
    assert orders_service.state.total_hits == 0
    with orders_service.state.lock:
        assert orders_service.state.orders["ord_1001"]["status"] == "processing"


async def test_approval_sends_it(staff_toolset: OperationToolset, orders_service: RunningService) -> None:
    result = (await staff_toolset.tool("cancelOrder").run(CANCEL, session(ALICE, confirmed=True))).result
    assert result["status"] == "ok", result
    assert result["untrusted"]["data"]["status"] == "cancelled"
    assert orders_service.state.hits("cancelOrder") == 1
    with orders_service.state.lock:
        assert orders_service.state.orders["ord_1001"]["status"] == "cancelled"


async def test_invalid_arguments_are_reported_before_asking(
    staff_toolset: OperationToolset, orders_service: RunningService
) -> None:
    result = (
        await staff_toolset.tool("cancelOrder").run({"orderId": "ord_1001", "reason": "bored"}, session(ALICE))
    ).result
    assert result["error_code"] == "BAD_ARGUMENTS"
    assert result["fields"] == ["reason"]
    assert orders_service.state.total_hits == 0
