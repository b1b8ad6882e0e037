"""SSRF and path injection: no request ever leaves for another host, and the path never changes.

A second loopback service (the "attacker") counts every request it gets; it must get none.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from rt_helpers import ALICE, session, staff_settings

from scopegate.examples.orders.server import RunningService
from scopegate.openapi.runtime import OperationToolset


def injections(attacker: str) -> list[str]:
    host = attacker.removeprefix("http://")
    return [
        "..",
        ".",
        "../me",
        "../../redirect?to=" + attacker,
        "%2e%2e",
        "%2E%2E%2Fme",
        "..%2F..%2Fme",
        "a/b",
        "a%2Fb",
        "ord_1001/../ord_2001",
        "ord_2001?x=1",
        "ord_2001#frag",
        "ord_1001%23",
        "ord_1001\\..\\..\\me",
        attacker + "/x",
        "//" + host + "/x",
        "@" + host,
        "http:" + host,
        "ord_1001\r\nHost: " + host,
        "ord_1001\nX-Staff-Key: x",
        "．．",
        "%00",
        "\x00",
        "ord_1001%0d%0aHost:%20evil",
        "ord_1001 HTTP/1.1\r\nHost: evil\r\n\r\nGET /",
        "{orderId}",
        "~",
        "%",
        "%%32%65",
        "ord_\u202e1001",
    ]


@pytest.fixture
def attacker_url(attacker: RunningService) -> str:
    return attacker.base_url


async def test_path_parameters_cannot_change_the_path_or_host(
    staff_toolset: OperationToolset, orders_service: RunningService, attacker: RunningService, attacker_url: str
) -> None:
    tool = staff_toolset.tool("getOrder")
    for value in injections(attacker_url):
        result = (await tool.run({"orderId": value}, session(ALICE))).result
        assert result["status"] == "error", (value, result)
        assert result["error_code"] in ("NOT_FOUND", "BAD_ARGUMENTS"), (value, result)
    for record in orders_service.state.recorded():
        # One segment after /orders/, no query, no fragment: the template held.
        assert record.raw_path.startswith("/orders/"), record.raw_path
        assert record.raw_path.count("/") == 2, record.raw_path
        assert record.query == "", record
        assert "\r" not in record.raw_path and "\n" not in record.raw_path
        assert record.headers.get("host", "").startswith("127.0.0.1:")
    assert attacker.state.total_hits == 0


async def test_cross_origin_redirects_are_not_followed(
    staff_toolset: OperationToolset, orders_service: RunningService, attacker: RunningService, attacker_url: str
) -> None:
    host = attacker_url.removeprefix("http://")
    result = (await staff_toolset.tool("redirectExternal").run({}, session(ALICE))).result
    assert result["error_code"] == "REDIRECT_BLOCKED"
    for target in (attacker_url + "/steal", "//" + host + "/steal", "http://localhost:1/", "https://127.0.0.1/"):
        result = (await staff_toolset.tool("openRedirect").run({"to": target}, session(ALICE))).result
        assert result["error_code"] == "REDIRECT_BLOCKED", (target, result)
    assert attacker.state.total_hits == 0
    assert orders_service.state.hits("openRedirect") == 4


async def test_same_origin_redirect_is_followed_and_still_owner_checked(
    staff_toolset: OperationToolset, orders_service: RunningService
) -> None:
    ok = (await staff_toolset.tool("getOrderLegacy").run({"orderId": "ord_1001"}, session(ALICE))).result
    assert ok["status"] == "ok" and ok["untrusted"]["data"]["id"] == "ord_1001"
    refused = (await staff_toolset.tool("getOrderLegacy").run({"orderId": "ord_2001"}, session(ALICE))).result
    assert refused["error_code"] == "NOT_FOUND"
    same = (await staff_toolset.tool("openRedirect").run({"to": "/orders/ord_1001"}, session(ALICE))).result
    assert same["status"] == "ok"
    assert orders_service.state.hits("getOrderLegacy") == 2


async def test_redirects_can_be_switched_off(orders_service: RunningService, attacker: RunningService) -> None:
    toolset = OperationToolset(replace(staff_settings(orders_service.base_url), redirects="none"))
    try:
        result = (await toolset.tool("getOrderLegacy").run({"orderId": "ord_1001"}, session(ALICE))).result
        assert result["error_code"] == "UPSTREAM_ERROR"
        assert orders_service.state.hits("getOrder") == 0
    finally:
        await toolset.aclose()


async def test_query_values_stay_values(
    staff_toolset: OperationToolset, orders_service: RunningService, attacker: RunningService, attacker_url: str
) -> None:
    tool = staff_toolset.tool("getFlaky")
    for key in ("k&failures=9", "k#x", "k?failures=9", "k=1;failures=9", "k%26failures=9"):
        result = (await tool.run({"key": key, "failures": 0}, session(ALICE))).result
        assert result["status"] == "ok", (key, result)
        # The server saw the whole value as the key: nothing leaked into the query or path.
        assert result["untrusted"]["data"]["key"] == key
    for record in orders_service.state.recorded():
        assert record.query == "failures=0", record
        assert record.raw_path.count("/") == 2, record
        assert record.raw_path.startswith("/flaky/"), record
    as_url = (await tool.run({"key": attacker_url, "failures": 0}, session(ALICE))).result
    assert as_url["error_code"] == "NOT_FOUND"  # sent as one encoded segment; no such route
    bad = (await tool.run({"key": "q", "failures": "0&x=1"}, session(ALICE))).result
    assert bad["error_code"] == "BAD_ARGUMENTS"
    assert attacker.state.total_hits == 0
