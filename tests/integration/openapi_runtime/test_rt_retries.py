"""Retries only where a repeat is harmless; counted on the server side."""

from __future__ import annotations

from dataclasses import replace

from rt_helpers import ALICE, session, staff_settings

from scopegate.examples.orders.server import RunningService
from scopegate.openapi.runtime import OperationPolicy, OperationToolset

YES = session(ALICE, confirmed=True)


async def test_get_is_retried_until_it_succeeds(
    staff_toolset: OperationToolset, orders_service: RunningService
) -> None:
    result = (await staff_toolset.tool("getFlaky").run({"key": "g1", "failures": 2}, session(ALICE))).result
    assert result["status"] == "ok", result
    assert orders_service.state.hits("/flaky/g1") == 3


async def test_retries_are_capped(staff_toolset: OperationToolset, orders_service: RunningService) -> None:
    result = (await staff_toolset.tool("getFlaky").run({"key": "g2", "failures": 9}, session(ALICE))).result
    assert result["error_code"] == "UPSTREAM_ERROR" and result["retryable"] is True
    assert orders_service.state.hits("/flaky/g2") == 3  # max_attempts


async def test_post_is_never_retried(staff_toolset: OperationToolset, orders_service: RunningService) -> None:
    result = (await staff_toolset.tool("postFlaky").run({"key": "p1", "failures": 1}, YES)).result
    assert result["error_code"] == "UPSTREAM_ERROR"
    assert orders_service.state.hits("/flaky/p1") == 1


async def test_post_with_idempotency_key_is_retried_with_one_key_per_call(
    staff_toolset: OperationToolset, orders_service: RunningService
) -> None:
    tool = staff_toolset.tool("postFlakyIdempotent")
    assert not any("dempotency" in name for name in tool.parameters_schema()["properties"])
    result = (await tool.run({"key": "i1", "failures": 2}, YES)).result
    assert result["status"] == "ok", result
    assert orders_service.state.hits("/flaky/i1/idempotent") == 3
    keys = orders_service.state.snapshot()["idempotency_keys"]["i1"]
    assert len(keys) == 3 and len(set(keys)) == 1 and len(keys[0]) >= 16
    await tool.run({"key": "i1", "failures": 0}, YES)
    keys = orders_service.state.snapshot()["idempotency_keys"]["i1"]
    assert keys[3] != keys[0]  # a new logical call, a new key


async def test_model_cannot_choose_the_idempotency_key(
    staff_toolset: OperationToolset, orders_service: RunningService
) -> None:
    tool = staff_toolset.tool("cancelOrder")
    result = (await tool.run({"orderId": "ord_1001", "reason": "other", "Idempotency_Key": "fixed"}, YES)).result
    assert result["error_code"] == "BAD_ARGUMENTS"
    assert orders_service.state.total_hits == 0


async def test_retry_after_is_honoured(staff_toolset: OperationToolset, orders_service: RunningService) -> None:
    result = (
        await staff_toolset.tool("getRateLimited").run({"key": "ra", "times": 1, "retry_after": 1}, session(ALICE))
    ).result
    assert result["status"] == "ok", result
    first, second = [r.at for r in orders_service.state.recorded() if r.raw_path == "/rate-limited/ra"]
    assert second - first >= 1.0  # the server asked for one second


async def test_retries_can_be_switched_off_per_operation(orders_service: RunningService) -> None:
    base = staff_settings(orders_service.base_url)
    toolset = OperationToolset(replace(base, policies={**base.policies, "getFlaky": OperationPolicy(retry=False)}))
    try:
        result = (await toolset.tool("getFlaky").run({"key": "g3", "failures": 1}, session(ALICE))).result
    finally:
        await toolset.aclose()
    assert result["error_code"] == "UPSTREAM_ERROR"
    assert orders_service.state.hits("/flaky/g3") == 1


async def test_client_errors_are_not_retried(staff_toolset: OperationToolset, orders_service: RunningService) -> None:
    for code in (400, 404, 409, 500):
        await staff_toolset.tool("simulateStatus").run({"code": code}, session(ALICE))
        assert orders_service.state.hits(f"/status/{code}") == 1, code
