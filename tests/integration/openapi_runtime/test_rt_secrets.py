"""Credentials never appear in declarations, logs, errors or responses, and reach only the API."""

from __future__ import annotations

import json
import logging
from dataclasses import replace

import pytest
from rt_helpers import ALICE, SECRETS, delegated_settings, session, staff_settings

from scopegate.examples.orders.data import CUSTOMERS, REPORTS_KEY, STAFF_KEY
from scopegate.examples.orders.server import RunningService
from scopegate.openapi.runtime import FromProvider, OperationToolset


def assert_no_secret(text: str) -> None:
    for secret in SECRETS:
        assert secret not in text
        assert secret[:12] not in text  # not even a recognisable prefix


def test_declarations_carry_no_credentials(staff_toolset: OperationToolset) -> None:
    for tool in staff_toolset.tools:
        declared = json.dumps([tool.name, tool.description, tool.parameters_schema()])
        assert_no_secret(declared)
        props = tool.parameters_schema().get("properties", {})
        assert not {"api_key", "Authorization", "X-Staff-Key"} & set(props), tool.name


async def test_credentials_reach_the_api_where_the_scheme_says(
    staff_toolset: OperationToolset, delegated_toolset: OperationToolset, orders_service: RunningService
) -> None:
    await staff_toolset.tool("getOrder").run({"orderId": "ord_1001"}, session(ALICE))
    await delegated_toolset.tool("getOrder").run({"orderId": "ord_1001"}, session(ALICE))
    await staff_toolset.tool("getSalesSummary").run({}, session(ALICE))
    await staff_toolset.tool("getFlaky").run({"key": "public", "failures": 0}, session(ALICE))
    staff, delegated, report, public = orders_service.state.recorded()
    assert staff.headers.get("x-staff-key") == STAFF_KEY and "authorization" not in staff.headers
    assert delegated.headers.get("authorization") == f"Bearer {CUSTOMERS[ALICE].token}"
    assert report.query == f"api_key={REPORTS_KEY}"
    assert "authorization" not in public.headers and "x-staff-key" not in public.headers  # security: []


async def test_no_secret_in_responses_errors_or_logs(
    orders_service: RunningService, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    wrong_key = "reports-key-WRONG-0123456789"
    base = staff_settings(orders_service.base_url)
    toolset = OperationToolset(base)
    delegated = OperationToolset(delegated_settings(orders_service.base_url))
    wrong = OperationToolset(
        replace(base, credentials={**base.credentials, "reportsKey": FromProvider(lambda c, s: wrong_key)})
    )
    try:
        results = [
            (await delegated.tool("getMe").run({}, session(ALICE))).result,  # echoes the bearer token back
            (await toolset.tool("getSalesSummary").run({}, session(ALICE))).result,  # key in the query string
            (await wrong.tool("getSalesSummary").run({}, session(ALICE))).result,  # 400 quoting the key it got
            (await toolset.tool("getOrder").run({"orderId": "ord_2001"}, session(ALICE))).result,
            (await toolset.tool("simulateStatus").run({"code": 401}, session(ALICE))).result,
        ]
    finally:
        await toolset.aclose()
        await delegated.aclose()
        await wrong.aclose()
    me, summary, bad_key, _, _ = results
    assert me["untrusted"]["data"]["debug"]["authorization"] == "Bearer [redacted]"
    assert summary["status"] == "ok"
    assert bad_key["error_code"] == "BAD_REQUEST"
    assert "[redacted]" in bad_key["untrusted"]["api_message"]
    dumped = json.dumps(results) + caplog.text
    assert_no_secret(dumped)
    assert wrong_key not in dumped
    calls = [r for r in caplog.records if r.name == "scopegate.openapi.calls"]
    assert len(calls) == 5  # one line per call


async def test_log_line_has_names_not_values(staff_toolset: OperationToolset, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="scopegate.openapi.calls")
    tool = staff_toolset.tool("updateShippingAddress")
    args = {
        "orderId": "ord_1001",
        "name": "Alice Private",
        "line1": "7 Secret Lane",
        "city": "Paris",
        "postal_code": "75001",
        "country": "FR",
    }
    outcome = await tool.run(args, session(ALICE, confirmed=True))
    result = outcome.result
    (record,) = [r for r in caplog.records if r.name == "scopegate.openapi.calls"]
    line = json.loads(record.getMessage())
    assert line == outcome.log
    assert line["operation_id"] == "updateShippingAddress"
    assert line["method"] == "PUT"
    assert line["path"] == "/orders/{orderId}/shipping-address"
    assert line["status"] == 200 and line["outcome"] == "ok" and line["attempts"] == 1
    assert line["request_id"] == result["request_id"]
    assert line["latency_ms"] >= 0
    assert line["arguments"] == sorted(args)
    assert "Secret Lane" not in record.getMessage() and "Alice Private" not in record.getMessage()


async def test_request_id_is_sent_to_the_api(staff_toolset: OperationToolset, orders_service: RunningService) -> None:
    result = (await staff_toolset.tool("getOrder").run({"orderId": "ord_1001"}, session(ALICE))).result
    assert orders_service.state.recorded()[-1].headers["x-request-id"] == result["request_id"]
