"""Catalog mode in the eval: call_operation(name, arguments) is scored as the operation it called."""

from __future__ import annotations

from scopegate.evals.adk_runner import operation_calls
from scopegate.evals.scoring import ActualCall
from scopegate.evals.worlds import ORDERS_VARIANTS


def test_catalog_calls_are_scored_as_the_operations_called() -> None:
    ok = {"status": "ok"}
    calls = [
        ActualCall("find_operations", {"query": "cancel"}, ok),
        ActualCall("describe_operation", {"name": "cancelOrder"}, ok),
        ActualCall("call_operation", {"name": "cancelOrder", "arguments": {"orderId": "ord_1"}}, ok),
        ActualCall("call_operation", {"name": 3, "arguments": "x"}, None),
        ActualCall("getOrder", {"orderId": "ord_2"}, ok),
    ]
    assert operation_calls(calls) == [
        ActualCall("cancelOrder", {"orderId": "ord_1"}, ok),
        ActualCall("", {}, None),  # a malformed call is no operation: never the expected one
        ActualCall("getOrder", {"orderId": "ord_2"}, ok),
    ]


def test_the_orders_world_has_a_catalog_variant() -> None:
    assert "catalog" in ORDERS_VARIANTS
