"""What reaches the API: falsy values, JSON and form bodies, validation against the original schema."""

from __future__ import annotations

import json
from urllib.parse import parse_qs

from rt_helpers import ALICE, session

from scopegate.context import CallContext
from scopegate.examples.orders.server import RunningService
from scopegate.openapi.runtime import OperationToolset
from scopegate.tools import ScopedTool

YES = session(ALICE, confirmed=True)


async def test_falsy_query_values_are_sent(staff_toolset: OperationToolset, orders_service: RunningService) -> None:
    result = (await staff_toolset.tool("listOrders").run({"limit": 0, "offset": 0}, session(ALICE))).result
    assert result["status"] == "ok"
    assert orders_service.state.recorded()[-1].query == "limit=0&offset=0&customer_id=cust_alice"


async def test_json_body_with_empty_string_and_unicode(
    staff_toolset: OperationToolset, orders_service: RunningService
) -> None:
    args = {
        "orderId": "ord_1001",
        "name": "Zoë 東京 🚚",
        "line1": "1 Rue",
        "line2": "",
        "city": "Paris",
        "postal_code": "0",
        "country": "FR",
    }
    result = (await staff_toolset.tool("updateShippingAddress").run(args, YES)).result
    assert result["status"] == "ok", result
    record = orders_service.state.recorded()[-1]
    assert record.headers["content-type"] == "application/json"
    body = json.loads(record.body)
    assert body == {k: v for k, v in args.items() if k != "orderId"}
    assert body["line2"] == "" and body["postal_code"] == "0"


async def test_form_body(staff_toolset: OperationToolset, orders_service: RunningService) -> None:
    text = "Ring twice & say 'hi' = ok? 100% #1 / é"
    result = (
        await staff_toolset.tool("addOrderNote").run(
            {"orderId": "ord_1001", "text": text, "visible_to_courier": False}, YES
        )
    ).result
    assert result["status"] == "ok", result
    assert result["untrusted"]["data"]["note"] == text
    record = orders_service.state.recorded()[-1]
    assert record.headers["content-type"] == "application/x-www-form-urlencoded"
    assert parse_qs(record.body.decode()) == {"text": [text], "visible_to_courier": ["false"]}


async def test_body_is_validated_against_the_original_schema(
    staff_toolset: OperationToolset, orders_service: RunningService
) -> None:
    tool = staff_toolset.tool("updateShippingAddress")
    result = (await tool.run({"orderId": "ord_1001", "name": "", "line1": "x", "country": "france"}, YES)).result
    assert result["error_code"] == "BAD_ARGUMENTS"
    assert result["fields"] == ["city", "country", "name", "postal_code"]
    problems = {p["field"]: p["problem"] for p in result["problems"]}
    assert problems["city"] == "is required"
    assert "pattern" in problems["country"]
    assert orders_service.state.total_hits == 0


async def test_integral_floats_from_models_are_accepted(
    staff_toolset: OperationToolset, orders_service: RunningService
) -> None:
    result = (await staff_toolset.tool("listOrders").run({"limit": 2.0}, session(ALICE))).result
    assert result["status"] == "ok"
    assert orders_service.state.recorded()[-1].query.startswith("limit=2&")
    bad = (await staff_toolset.tool("listOrders").run({"limit": 2.5}, session(ALICE))).result
    assert bad["error_code"] == "BAD_ARGUMENTS"


def test_tools_implement_the_scoped_tool_protocol(staff_toolset: OperationToolset) -> None:
    for tool in staff_toolset.tools:
        assert isinstance(tool, ScopedTool)
        assert tool.family == "openapi"
        assert tool.read_only == (tool.operation.method == "GET")
    scope = staff_toolset.tool("getOrder").scope_of(session(ALICE))
    assert scope is not None and scope.user_id == ALICE
    assert staff_toolset.tool("getOrder").scope_of(CallContext(state={})) is None
