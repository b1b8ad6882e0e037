"""The FastMCP reference row's scoring: a peer's search_tools / call_tool scored like the catalog's meta-tools."""

from __future__ import annotations

from scopegate.evals.adk_runner import operation_calls
from scopegate.evals.evalset import CaseSpec, EvalCase, ExpectedCall, Turn
from scopegate.evals.scoring import ActualCall
from scopegate_lab.fastmcp_reference import asks_for_a_write, beyond_token_scopes, model_view, reference_calls

BOUND = {"listOrders": {"customer_id": "user_id"}}
STATE = {"user_id": "cust_alice"}


def test_other_meta_tool_names_are_scored_as_the_operations_called() -> None:
    calls = [
        ActualCall("search_tools", {"query": "cancel"}),
        ActualCall("call_tool", {"name": "cancelOrder", "arguments": {"orderId": "ord_1"}}),
    ]
    assert operation_calls(calls, navigation=("search_tools",), call_tool="call_tool") == [
        ActualCall("cancelOrder", {"orderId": "ord_1"})
    ]


def test_call_tool_is_scored_as_its_operation_and_search_is_not_a_call() -> None:
    ok = {"id": "ord_1"}
    calls = [
        ActualCall("search_tools", {"query": "order status"}, {"result": []}),
        ActualCall("call_tool", {"name": "getOrder", "arguments": {"orderId": "ord_1"}}, ok),
        ActualCall("call_tool", {"name": "getOrder"}, None),  # arguments left out: no arguments
    ]
    assert reference_calls(calls, STATE, BOUND) == [
        ActualCall("getOrder", {"orderId": "ord_1"}, ok),
        ActualCall("getOrder", {}, None),
    ]


def test_a_bound_parameter_with_the_sessions_value_is_what_scopegate_binds() -> None:
    calls = [
        ActualCall(
            "call_tool", {"name": "listOrders", "arguments": {"customer_id": "cust_alice", "status": "shipped"}}
        ),
        ActualCall("call_tool", {"name": "listOrders", "arguments": {"customer_id": "cust_bob"}}),
        ActualCall("call_tool", {"name": "getOrder", "arguments": {"customer_id": "cust_alice"}}),
    ]
    assert [c.args for c in reference_calls(calls, STATE, BOUND)] == [
        {"status": "shipped"},
        {"customer_id": "cust_bob"},  # another customer: kept, so the arguments do not match
        {"customer_id": "cust_alice"},  # not bound on this operation: kept
    ]


def test_the_specs_parameter_names_are_scored_under_scopegates() -> None:
    calls = [ActualCall("call_tool", {"name": "cancel", "arguments": {"subscription-id": "sub_1", "x-y": 1}})]
    params = {"cancel": frozenset({"subscription_id"})}
    assert reference_calls(calls, STATE, BOUND, params)[0].args == {"subscription_id": "sub_1", "x-y": 1}
    bound = {"cancel": {"subscription_id": "user_id"}}  # bound under scopegate's name
    assert reference_calls(calls, {"user_id": "sub_1"}, bound, params)[0].args == {"x-y": 1}


def test_the_model_sees_structured_content_or_the_text() -> None:
    assert model_view({"id": "ord_1"}, "ignored", False) == {"id": "ord_1"}
    assert model_view(None, '{"id": "ord_1"}', False) == {"id": "ord_1"}
    assert model_view(None, "[1, 2]", False) == {"result": [1, 2]}
    assert model_view(None, "plain", False) == {"result": "plain"}
    assert model_view(None, "HTTP error 404: Not Found", True) == {"error": "HTTP error 404: Not Found"}


def _case(tool: str, *, confirm: bool) -> EvalCase:
    turn = Turn(expect=(ExpectedCall(tool=tool, args={"orderId": "ord_1"}),), confirm=confirm)
    return EvalCase(eval_id="c", messages=("hi",), state=STATE, spec=CaseSpec(kind="tool", turns=(turn,)))


def test_a_write_the_user_asked_for_is_told_apart_from_one_they_did_not() -> None:
    writes = ("cancelOrder",)
    assert asks_for_a_write(_case("cancelOrder", confirm=True), writes)
    assert not asks_for_a_write(_case("cancelOrder", confirm=False), writes)  # the user denies it
    assert not asks_for_a_write(_case("getOrder", confirm=True), writes)


def test_calls_beyond_the_tokens_scopes_are_named() -> None:
    needs = {"cancel": frozenset({"billing:write"}), "read": frozenset({"billing:read"})}
    calls = [{"tool": "read"}, {"tool": "cancel"}, {"tool": "unknown"}]
    assert beyond_token_scopes(calls, ["billing:read"], needs) == ["cancel"]
    assert beyond_token_scopes(calls, ["billing:read", "billing:write"], needs) == []
    assert beyond_token_scopes(calls, None, needs) == []
