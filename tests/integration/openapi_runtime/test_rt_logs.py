"""Secrets in logs: no logger at any level shows a configured credential or a sensitive argument,
and other users of httpx in the same process keep their logging exactly as it was."""

from __future__ import annotations

import json
import logging
from dataclasses import replace

import httpx
import pytest
from rt_helpers import (
    ALICE,
    HOSTILE_TOKEN,
    RECOVERY_PIN,
    REPORTS_KEY,
    ROOT_PASS,
    SECRETS,
    delegated_settings,
    hostile_settings,
    session,
    staff_settings,
)

from scopegate.examples.orders.data import CUSTOMERS
from scopegate.examples.orders.server import RunningService
from scopegate.openapi.runtime import OperationPolicy, OperationToolset
from scopegate_lab.hostile import RunningHostile

SERVER = {
    "name": "web-1",
    "region": "eu",
    "root_pass": ROOT_PASS,
    "recovery": {"email": "a@x.test", "pin": RECOVERY_PIN},
}


def records_of(caplog: pytest.LogCaptureFixture, name: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == name]


async def test_httpcore_debug_never_shows_an_echoed_bearer_token(
    orders_service: RunningService, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    toolset = OperationToolset(delegated_settings(orders_service.base_url))
    try:
        me = (await toolset.tool("getMe").run({}, session(ALICE))).result
    finally:
        await toolset.aclose()
    assert me["status"] == "ok"
    token = CUSTOMERS[ALICE].token
    headers = [m for m in records_of(caplog, "httpcore.http11") if m.startswith("receive_response_headers.complete")]
    assert headers, "httpcore logged no response headers: the test would prove nothing"
    assert any("b'Bearer [redacted]'" in m and "x-echo-authorization" in m.lower() for m in headers), headers
    assert token not in caplog.text


async def test_api_key_in_the_query_is_redacted_from_the_httpx_log(
    staff_toolset: OperationToolset, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    result = (await staff_toolset.tool("getSalesSummary").run({}, session(ALICE))).result
    assert result["status"] == "ok"
    (line,) = [m for m in records_of(caplog, "httpx") if "/reports/summary" in m]
    assert "api_key=[redacted]" in line
    assert REPORTS_KEY not in caplog.text


async def test_other_httpx_users_in_the_process_keep_their_logs(
    staff_toolset: OperationToolset,
    orders_service: RunningService,
    hostile: RunningHostile,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """scopegate's filter only touches records of scopegate's own requests (a context variable)."""
    caplog.set_level(logging.DEBUG)
    await staff_toolset.tool("getSalesSummary").run({}, session(ALICE))  # a scopegate call first
    own_token = "someone-elses-token-0123456789"
    async with httpx.AsyncClient() as other:
        await other.get(
            f"{orders_service.base_url}/reports/summary",
            params={"api_key": "their-own-query-value"},
        )
        await other.get(f"{hostile.base_url}/nothing", headers={"Authorization": f"Bearer {own_token}"})
    theirs = [r for r in caplog.records if r.name == "httpx" and "their-own-query-value" in r.getMessage()]
    assert theirs, "another client's URL (with its query) must be logged as httpx logs it"
    (record,) = theirs
    assert any(isinstance(a, httpx.URL) for a in record.args or ())  # the record itself was not rewritten
    # Another client's echoed header is logged by httpcore as it always was.
    assert f"Bearer {own_token}" in caplog.text
    # ... and even a value that is a scopegate secret is not touched outside scopegate's requests.
    async with httpx.AsyncClient() as other:
        await other.get(f"{orders_service.base_url}/reports/summary", params={"api_key": REPORTS_KEY[:-1] + "X"})
    assert REPORTS_KEY[:-1] + "X" in caplog.text


async def test_sensitive_fields_are_sent_but_never_logged_confirmed_or_echoed(
    hostile: RunningHostile, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    toolset = OperationToolset(replace(hostile_settings(hostile.base_url), log_argument_values=True))
    tool = toolset.tool("createServer")
    try:
        asked = await tool.run(SERVER, session(ALICE))  # no approval yet: the confirmation prompt
        created = await tool.run(SERVER, session(ALICE, confirmed=True))
        refused = await tool.run({**SERVER, "region": "bad"}, session(ALICE, confirmed=True))
    finally:
        await toolset.aclose()
    assert asked.result["error_code"] == "CONFIRMATION_REQUIRED"
    confirmation = asked.result["confirmation"]
    assert confirmation["payload"]["arguments"]["root_pass"] == "[redacted]"
    assert confirmation["payload"]["arguments"]["recovery"] == {"email": "a@x.test", "pin": "[redacted]"}
    assert 'root_pass="[redacted]"' in confirmation["hint"]
    assert created.result["status"] == "ok"
    assert created.result["untrusted"]["data"]["root_pass"] == "[redacted]"  # the API echoed it
    assert created.log["argument_values"]["root_pass"] == "[redacted]"
    assert created.log["argument_values"]["name"] == "web-1"  # other values are logged as configured
    assert refused.result["error_code"] == "BAD_REQUEST"
    assert "[redacted]" in refused.result["untrusted"]["api_message"]
    sent = [json.loads(r.body) for r in hostile.state.recorded() if r.target == "/servers"]
    assert [s["root_pass"] for s in sent] == [ROOT_PASS, ROOT_PASS]  # really sent, both times
    assert sent[0]["recovery"]["pin"] == RECOVERY_PIN
    everything = json.dumps([asked.result, asked.log, created.result, created.log, refused.result, refused.log])
    for value in (ROOT_PASS, RECOVERY_PIN, HOSTILE_TOKEN):
        assert value not in everything
        assert value not in caplog.text  # incl. httpcore's echo of X-Echo-Root-Pass


async def test_a_configured_sensitive_path_is_masked(hostile: RunningHostile) -> None:
    settings = hostile_settings(
        hostile.base_url,
        log_argument_values=True,
        sensitive_fields=(),
        policies={"createServer": OperationPolicy(sensitive=("name",))},
    )
    toolset = OperationToolset(settings)
    try:
        outcome = await toolset.tool("createServer").run(SERVER, session(ALICE, confirmed=True))
    finally:
        await toolset.aclose()
    values = outcome.log["argument_values"]
    assert values["name"] == "[redacted]"  # from the policy
    assert values["root_pass"] == "[redacted]"  # format: password, without any configured name
    assert values["recovery"]["pin"] == "[redacted]"  # writeOnly
    assert values["region"] == "eu"


def test_no_filter_left_on_process_wide_loggers_rewrites_outside_a_call() -> None:
    record = logging.LogRecord("httpx", logging.INFO, __file__, 1, "GET %s", (httpx.URL("http://h/?api_key=v"),), None)
    for name in ("httpx", "httpcore.http11"):
        for f in logging.getLogger(name).filters:
            keep = f.filter(record) if isinstance(f, logging.Filter) else f(record)
            assert keep
    assert record.getMessage() == "GET http://h/?api_key=v"


async def test_staff_key_and_tokens_never_in_a_debug_capture(
    orders_service: RunningService, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    staff = OperationToolset(staff_settings(orders_service.base_url))
    delegated = OperationToolset(delegated_settings(orders_service.base_url))
    try:
        for toolset in (staff, delegated):
            for op, args in (("getOrder", {"orderId": "ord_1001"}), ("listOrders", {"limit": 2}), ("getMe", {})):
                await toolset.tool(op).run(args, session(ALICE))
    finally:
        await staff.aclose()
        await delegated.aclose()
    assert "receive_response_headers" in caplog.text
    for secret in SECRETS:
        assert secret not in caplog.text
