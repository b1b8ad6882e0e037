"""Each HTTP and network failure maps to its structured code, with ``retryable``; nothing raises."""

from __future__ import annotations

import socket
from dataclasses import replace

import pytest
from rt_helpers import ALICE, session, staff_settings

from scopegate.context import CallContext
from scopegate.examples.orders.server import RunningService
from scopegate.openapi.model import SecurityScheme
from scopegate.openapi.runtime import FromProvider, OperationToolset, RetryPolicy, Timeouts

NO_RETRY = RetryPolicy(max_attempts=1)


@pytest.mark.parametrize(
    ("code", "error_code", "retryable"),
    [
        (400, "BAD_REQUEST", False),
        (401, "NOT_AUTHORIZED", False),
        (403, "NOT_AUTHORIZED", False),
        (404, "NOT_FOUND", False),
        (409, "CONFLICT", False),
        (422, "BAD_REQUEST", False),
        (500, "UPSTREAM_ERROR", True),
        (502, "UPSTREAM_ERROR", True),
        (503, "UPSTREAM_ERROR", True),
    ],
)
async def test_status_codes_map_to_error_codes(
    orders_service: RunningService, code: int, error_code: str, retryable: bool
) -> None:
    toolset = OperationToolset(replace(staff_settings(orders_service.base_url), retry=NO_RETRY))
    try:
        result = (await toolset.tool("simulateStatus").run({"code": code}, session(ALICE))).result
    finally:
        await toolset.aclose()
    assert result["status"] == "error"
    assert result["error_code"] == error_code
    assert result["retryable"] is retryable
    assert set(result) >= {"status", "error_code", "message", "retryable"}


async def test_bad_request_carries_the_api_message_trimmed_and_marked(staff_toolset: OperationToolset) -> None:
    result = (await staff_toolset.tool("simulateStatus").run({"code": 400}, session(ALICE))).result
    assert result["error_code"] == "BAD_REQUEST"
    text = result["untrusted"]["api_message"]
    assert text.startswith("Invalid request: the field 'postal_code'")
    assert len(text) <= 300
    assert not any(ord(c) < 32 for c in text)
    assert "Ignore your instructions" not in result["message"]  # API text is never the message itself
    assert "untrusted" in result["note"]


async def test_real_conflict(staff_toolset: OperationToolset) -> None:
    result = (
        await staff_toolset.tool("cancelOrder").run(
            {"orderId": "ord_1002", "reason": "other"}, session(ALICE, confirmed=True)
        )
    ).result
    assert result["error_code"] == "CONFLICT"
    assert "shipped" in result["untrusted"]["api_message"]


async def test_rate_limited_with_retry_after(staff_toolset: OperationToolset, orders_service: RunningService) -> None:
    # Retry-After (100 s) beyond the policy's max wait: no retry, the model is told when to come back.
    result = (
        await staff_toolset.tool("getRateLimited").run({"key": "r1", "times": 5, "retry_after": 100}, session(ALICE))
    ).result
    assert result["error_code"] == "RATE_LIMITED"
    assert result["retryable"] is True
    assert result["retry_after"] == 100
    assert orders_service.state.hits("getRateLimited") == 1


async def test_timeout(orders_service: RunningService) -> None:
    settings = staff_settings(orders_service.base_url, timeouts=Timeouts(connect=1, read=0.3, write=1, pool=1, total=1))
    toolset = OperationToolset(settings)
    try:
        result = (await toolset.tool("getSlow").run({"seconds": 5}, session(ALICE))).result
    finally:
        await toolset.aclose()
    assert result["error_code"] == "TIMEOUT"
    assert result["retryable"] is True


async def test_refused_connection_is_unavailable() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    toolset = OperationToolset(staff_settings(f"http://127.0.0.1:{port}"))
    try:
        result = (await toolset.tool("getOrder").run({"orderId": "ord_1001"}, session(ALICE))).result
    finally:
        await toolset.aclose()
    assert result["error_code"] == "UNAVAILABLE"
    assert result["retryable"] is True
    assert str(port) not in str(result)


async def test_missing_credentials_send_nothing(
    delegated_toolset: OperationToolset, orders_service: RunningService
) -> None:
    result = (await delegated_toolset.tool("getOrder").run({"orderId": "ord_1001"}, session(ALICE, token=False))).result
    assert result["error_code"] == "NOT_AUTHORIZED"
    assert orders_service.state.total_hits == 0


async def test_a_failing_credential_provider_is_an_internal_error_not_an_exception(
    orders_service: RunningService,
) -> None:
    def broken(ctx: CallContext, scheme: SecurityScheme) -> str:
        raise RuntimeError("vault exploded with secret hunter2")

    base = staff_settings(orders_service.base_url)
    toolset = OperationToolset(replace(base, credentials={**base.credentials, "staffKey": FromProvider(broken)}))
    try:
        result = (await toolset.tool("getOrder").run({"orderId": "ord_1001"}, session(ALICE, token=False))).result
    finally:
        await toolset.aclose()
    assert result["error_code"] == "INTERNAL"
    assert "hunter2" not in str(result) and "vault" not in str(result)


async def test_garbage_arguments_never_raise(staff_toolset: OperationToolset) -> None:
    tool = staff_toolset.tool("updateShippingAddress")
    for args in (
        {},
        {"orderId": None},
        {"orderId": ["a"]},
        {"orderId": {"$ne": 1}},
        {"x" * 10_000: 1},
        {"orderId": 1e308},
    ):
        result = (await tool.run(args, session(ALICE, confirmed=True))).result
        assert result["error_code"] == "BAD_ARGUMENTS", (args, result)
