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
