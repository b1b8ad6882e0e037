"""Two customers: cross-user access through every tool is refused, NOT_FOUND-shaped, nothing changed."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rt_helpers import ALICE, BOB, session, without_request_id

from scopegate.context import CallContext
from scopegate.examples.orders.data import orders_of, seed_orders
from scopegate.examples.orders.server import RunningService
from scopegate.openapi.runtime import OperationToolset

ALICE_ORDERS = orders_of(ALICE)
BOB_ORDERS = orders_of(BOB)
ADDRESS = {"name": "Mallory", "line1": "1 Evil Street", "city": "Nowhere", "postal_code": "666", "country": "XX"}
ORDER_CALLS: dict[str, dict[str, Any]] = {
    "getOrder": {},
    "getOrderLegacy": {},
    "updateShippingAddress": ADDRESS,
    "cancelOrder": {"reason": "other"},
    "addOrderNote": {"text": "hijacked", "visible_to_courier": True},
}
WRITES = ("updateShippingAddress", "cancelOrder", "addOrderNote")


async def _call(toolset: OperationToolset, op: str, order_id: str, user: str) -> dict[str, Any]:
    tool = toolset.tool(op)
    ctx = session(user, confirmed=True if not tool.read_only else None)
    return (await tool.run({"orderId": order_id, **ORDER_CALLS[op]}, ctx)).result


async def test_own_orders_are_readable(any_toolset: OperationToolset) -> None:
    for op in ("getOrder", "getOrderLegacy"):
        result = await _call(any_toolset, op, "ord_1002", ALICE)
        assert result["status"] == "ok", result
        assert result["untrusted"]["data"]["customer_id"] == ALICE


async def test_other_customers_orders_are_refused_by_every_tool(
    any_toolset: OperationToolset, orders_service: RunningService
) -> None:
    missing = {op: without_request_id(await _call(any_toolset, op, "ord_9999", ALICE)) for op in ORDER_CALLS}
    for op in ORDER_CALLS:
        for order_id in BOB_ORDERS:
            result = without_request_id(await _call(any_toolset, op, order_id, ALICE))
            # Exactly the envelope of an order that does not exist: existence is not revealed.
            assert result == missing[op], (op, order_id, result)
            assert result["error_code"] == "NOT_FOUND"
            assert "cust_bob" not in str(result) and "Bob" not in str(result)
    for op in WRITES:
        assert orders_service.state.hits(op) == 0, f"{op} reached the API for another customer's order"
    with orders_service.state.lock:
        assert {k: v for k, v in orders_service.state.orders.items() if k in BOB_ORDERS} == {
            k: v for k, v in seed_orders().items() if k in BOB_ORDERS
        }


async def test_list_is_scoped_by_session_not_by_model(any_toolset: OperationToolset) -> None:
    tool = any_toolset.tool("listOrders")
    assert "customer_id" not in tool.parameters_schema()["properties"]
    result = (await tool.run({"limit": 100}, session(BOB))).result
    assert result["status"] == "ok"
    data = result["untrusted"]["data"]
    assert data["total"] == len(BOB_ORDERS)
    assert {o["id"] for o in data["orders"]} == set(BOB_ORDERS)
    # The model cannot widen the scope by naming the customer itself.
    sneaky = (await tool.run({"customer_id": ALICE, "limit": 100}, session(BOB))).result
    assert sneaky["error_code"] == "BAD_ARGUMENTS"
    assert sneaky["fields"] == ["customer_id"]


async def test_staff_key_list_is_filtered_inside_the_api_call(
    staff_toolset: OperationToolset, orders_service: RunningService
) -> None:
    result = (await staff_toolset.tool("listOrders").run({"limit": 0}, session(ALICE, token=False))).result
    assert result["untrusted"]["data"]["total"] == len(ALICE_ORDERS)
    assert orders_service.state.recorded()[-1].query == "limit=0&customer_id=cust_alice"


async def test_no_user_in_session_is_no_scope(staff_toolset: OperationToolset, orders_service: RunningService) -> None:
    for op in ("listOrders", "getOrder", "cancelOrder"):
        tool = staff_toolset.tool(op)
        for state in ({}, {"user_id": ""}, {"user_id": None}):
            result = (
                await tool.run({"orderId": "ord_1001", "reason": "other"}, CallContext(state=state, confirmed=True))
            ).result
            assert result["error_code"] == "NO_SCOPE", (op, state, result)
    assert orders_service.state.total_hits == 0


async def test_a_write_on_own_order_goes_through(staff_toolset: OperationToolset) -> None:
    result = await _call(staff_toolset, "updateShippingAddress", "ord_1001", ALICE)
    assert result["status"] == "ok", result
    assert result["untrusted"]["data"]["shipping_address"]["name"] == "Mallory"


ids = st.one_of(
    st.sampled_from(ALICE_ORDERS + BOB_ORDERS),
    st.from_regex(r"ord_[0-9]{1,5}", fullmatch=True),
    st.text(min_size=1, max_size=40),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(order_id=ids, user=st.sampled_from([ALICE, BOB]), op=st.sampled_from(["getOrder", "cancelOrder"]))
async def test_property_only_own_orders_are_ever_visible(
    staff_toolset: OperationToolset, orders_service: RunningService, order_id: str, user: str, op: str
) -> None:
    before = orders_service.state.hits("cancelOrder")
    result = await _call(staff_toolset, op, order_id, user)
    own = order_id in orders_of(user)
    if result["status"] == "ok":
        assert own
        assert result["untrusted"]["data"]["customer_id"] == user
    else:
        assert result["error_code"] in ("NOT_FOUND", "BAD_ARGUMENTS", "CONFLICT"), result
        if not own:
            assert result["error_code"] in ("NOT_FOUND", "BAD_ARGUMENTS")
            assert orders_service.state.hits("cancelOrder") == before
