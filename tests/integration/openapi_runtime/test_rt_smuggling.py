"""Parameter smuggling around server-owned values, against the real (last-value-wins) orders service.

``listOrders`` binds ``customer_id`` from session state. Give it an object-typed query
parameter (style form, explode: the OpenAPI default) and ``{"filter": {"customer_id": "bob"}}``
used to go out as ``?customer_id=alice&customer_id=bob``: Starlette keeps the last value, and the
staff key sees every order, so alice got bob's orders. The same path could add ``api_key``.
"""

from __future__ import annotations

import copy
import json
from dataclasses import replace
from typing import Any

import pytest
from rt_helpers import ALICE, BOB, session, staff_settings

from scopegate.examples.orders import SPEC_PATH
from scopegate.examples.orders.server import RunningService
from scopegate.openapi.runtime import OperationPolicy, OperationToolset

# Its declared key is no other query parameter (else the translation leaves the filter out).
FILTER = {"name": "filter", "in": "query", "schema": {"type": "object", "properties": {"label": {"type": "string"}}}}


def spec_with_filter() -> dict[str, Any]:
    spec: dict[str, Any] = copy.deepcopy(json.loads(SPEC_PATH.read_text("utf-8")))
    spec["paths"]["/orders"]["get"]["parameters"].append(FILTER)
    spec["paths"]["/reports/summary"]["get"].setdefault("parameters", []).append(FILTER)
    return spec


@pytest.fixture
async def smuggle_toolset(orders_service: RunningService) -> Any:
    base = staff_settings(orders_service.base_url)
    settings = replace(
        base,
        spec=spec_with_filter(),
        allow=("listOrders", "getSalesSummary"),
        policies={"listOrders": OperationPolicy(bind={"customer_id": "user_id"})},
    )
    toolset = OperationToolset(settings)
    yield toolset
    await toolset.aclose()


@pytest.mark.parametrize("spelling", ["customer_id", "CUSTOMER_ID", "Customer_Id"])
async def test_an_exploded_object_cannot_add_the_bound_name(
    smuggle_toolset: OperationToolset, orders_service: RunningService, spelling: str
) -> None:
    result = (await smuggle_toolset.tool("listOrders").run({"filter": {spelling: BOB}}, session(ALICE))).result
    assert result["error_code"] == "BAD_ARGUMENTS", result
    assert orders_service.state.hits("listOrders") == 0  # nothing was sent


async def test_the_filter_still_works_for_its_own_keys(
    smuggle_toolset: OperationToolset, orders_service: RunningService
) -> None:
    result = (await smuggle_toolset.tool("listOrders").run({"filter": {"label": "gift"}}, session(ALICE))).result
    assert result["status"] == "ok"
    (record,) = orders_service.state.recorded()
    assert record.query.count("customer_id=") == 1 and f"customer_id={ALICE}" in record.query
    assert "label=gift" in record.query


async def test_an_exploded_object_cannot_add_a_credential_name(
    smuggle_toolset: OperationToolset, orders_service: RunningService
) -> None:
    result = (await smuggle_toolset.tool("getSalesSummary").run({"filter": {"api_key": "x"}}, session(ALICE))).result
    assert result["error_code"] == "BAD_ARGUMENTS", result
    assert orders_service.state.hits("getSalesSummary") == 0
    ok = (await smuggle_toolset.tool("getSalesSummary").run({}, session(ALICE))).result
    assert ok["status"] == "ok"


# Issue 36 (L2): an object-typed path parameter put its keys into the path, where no check looked:
# {"sel": {"customer_id": "bob"}} went out as /m/orders/;customer_id=bob?customer_id=alice (matrix,
# explode), which JAX-RS and Spring read as a parameter. Every style and explode is refused now.
def spec_with_path_object(style: str, explode: bool) -> dict[str, Any]:
    spec = spec_with_filter()
    selector = {
        "name": "sel", "in": "path", "required": True, "style": style, "explode": explode,
        "schema": {"type": "object", "properties": {"label": {"type": "string"}}},
    }  # fmt: skip
    customer = {"name": "customer_id", "in": "query", "schema": {"type": "string"}}
    spec["paths"]["/m/orders/{sel}"] = {
        "get": {
            "operationId": "listOrdersBySelector",
            "summary": "Orders picked by a selector.",
            "parameters": [selector, customer],
            "responses": {"200": {"description": "Orders", "content": {"application/json": {"schema": {}}}}},
        }
    }
    return spec


async def path_object_toolset(orders_service: RunningService, style: str, explode: bool) -> OperationToolset:
    settings = replace(
        staff_settings(orders_service.base_url),
        spec=spec_with_path_object(style, explode),
        allow=("listOrdersBySelector",),
        policies={"listOrdersBySelector": OperationPolicy(bind={"customer_id": "user_id"})},
    )
    return OperationToolset(settings)


PATH_STYLES = [("matrix", True), ("matrix", False), ("label", True), ("label", False), ("simple", True)]


@pytest.mark.parametrize(("style", "explode"), PATH_STYLES)
@pytest.mark.parametrize("key", ["customer_id", "Customer-Id", "api_key"])
async def test_an_object_path_parameter_cannot_add_a_reserved_name(
    orders_service: RunningService, style: str, explode: bool, key: str
) -> None:
    toolset = await path_object_toolset(orders_service, style, explode)
    try:
        tool = toolset.tool("listOrdersBySelector")
        result = (await tool.run({"sel": {key: BOB}}, session(ALICE))).result
        assert result["status"] == "error" and result["error_code"] == "BAD_ARGUMENTS", result
        assert result["retryable"] is False
        assert any(p["field"] == f"sel.{key}" for p in result["problems"]), result
        assert orders_service.state.recorded() == []  # nothing was sent
        # Its own keys still go out, next to the bound value.
        await tool.run({"sel": {"label": "gift"}}, session(ALICE))
        (record,) = orders_service.state.recorded()
        assert "label" in record.raw_path and "gift" in record.raw_path and f"customer_id={ALICE}" in record.query
    finally:
        await toolset.aclose()
