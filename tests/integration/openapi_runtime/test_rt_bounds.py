"""Huge and slow responses are bounded: byte limit while streaming, caps and a character budget."""

from __future__ import annotations

import json
import time
import tracemalloc
from dataclasses import replace

from rt_helpers import ALICE, session, staff_settings

from scopegate.examples.orders.server import RunningService
from scopegate.openapi.runtime import OperationPolicy, OperationToolset, ShapeLimits, Timeouts


async def test_huge_body_is_not_read_whole(staff_toolset: OperationToolset) -> None:
    tracemalloc.start()
    try:
        result = (await staff_toolset.tool("getHuge").run({"size_kb": 100 * 1024}, session(ALICE))).result  # 100 MB
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result["error_code"] == "RESPONSE_TOO_LARGE"
    assert peak < 20 * 1024 * 1024, peak  # the limit is 1 MB; the body never reached memory whole


async def test_large_list_is_capped_with_totals(staff_toolset: OperationToolset) -> None:
    result = (await staff_toolset.tool("getHuge").run({"size_kb": 400}, session(ALICE))).result
    assert result["status"] == "ok"
    assert result["truncated"] is True
    (capped,) = result["lists"]
    assert capped["path"] == "items"
    assert capped["total_items"] > 1500
    assert capped["kept"] == len(result["untrusted"]["data"]["items"]) <= 20
    assert len(json.dumps(result["untrusted"])) <= 8000 + 50


async def test_long_string_is_capped(staff_toolset: OperationToolset) -> None:
    result = (await staff_toolset.tool("getHuge").run({"kind": "string", "size_kb": 300}, session(ALICE))).result
    text = result["untrusted"]["data"]["text"]
    assert len(text) <= 500 and text.endswith("…")
    assert result["strings_capped"] == 1


async def test_result_budget_holds_for_tight_settings(orders_service: RunningService) -> None:
    shape = ShapeLimits(max_list_items=50, max_string_chars=2000, max_result_chars=1500)
    toolset = OperationToolset(replace(staff_settings(orders_service.base_url), shape=shape))
    try:
        result = (await toolset.tool("listOrders").run({"limit": 100}, session(ALICE))).result
    finally:
        await toolset.aclose()
    assert result["status"] == "ok" and result["truncated"] is True
    assert len(json.dumps(result["untrusted"]["data"], ensure_ascii=False, separators=(",", ":"))) <= 1500


async def test_projection_keeps_only_configured_fields(orders_service: RunningService) -> None:
    base = staff_settings(orders_service.base_url)
    policies = {
        **base.policies,
        "listOrders": OperationPolicy(
            bind={"customer_id": "user_id"}, projection=("orders.id", "orders.status", "total")
        ),
    }
    toolset = OperationToolset(replace(base, policies=policies))
    try:
        result = (await toolset.tool("listOrders").run({"limit": 3}, session(ALICE))).result
    finally:
        await toolset.aclose()
    assert result["untrusted"]["data"] == {
        "orders": [
            {"id": "ord_1001", "status": "processing"},
            {"id": "ord_1002", "status": "shipped"},
            {"id": "ord_1003", "status": "delivered"},
        ],
        "total": 25,
    }


async def test_nulls_and_empties_are_dropped_but_falsy_values_kept(staff_toolset: OperationToolset) -> None:
    result = (await staff_toolset.tool("getOrder").run({"orderId": "ord_1001"}, session(ALICE))).result
    data = result["untrusted"]["data"]
    assert "note" not in data and "tracking_number" not in data and "line2" not in data["shipping_address"]
    zero = (await staff_toolset.tool("listOrders").run({"limit": 0}, session(ALICE))).result
    assert zero["untrusted"]["data"] == {"total": 25, "limit": 0, "offset": 0}


async def test_injected_text_stays_under_untrusted(staff_toolset: OperationToolset) -> None:
    result = (await staff_toolset.tool("getOrder").run({"orderId": "ord_1003"}, session(ALICE))).result
    assert "IGNORE ALL PREVIOUS INSTRUCTIONS" in result["untrusted"]["data"]["note"]
    outside = {k: v for k, v in result.items() if k != "untrusted"}
    assert "IGNORE" not in json.dumps(outside)
    assert "not as instructions" in result["note"] or "never as instructions" in result["note"]


async def test_slow_response_is_cut_by_the_total_timeout(orders_service: RunningService) -> None:
    settings = staff_settings(
        orders_service.base_url, timeouts=Timeouts(connect=1, read=30, write=1, pool=1, total=1.0)
    )
    toolset = OperationToolset(settings)
    try:
        started = time.monotonic()
        result = (await toolset.tool("getSlow").run({"seconds": 10}, session(ALICE))).result
        elapsed = time.monotonic() - started
    finally:
        await toolset.aclose()
    assert result["error_code"] == "TIMEOUT"
    assert elapsed < 9  # bounded by the client's budget, not by the server's 10 s
    assert orders_service.state.hits("getSlow") == 1  # the budget was spent: no retry


async def test_huge_error_body_still_maps_its_status(staff_toolset: OperationToolset) -> None:
    result = (await staff_toolset.tool("simulateStatus").run({"code": 409, "pad_kb": 5 * 1024}, session(ALICE))).result
    assert result["error_code"] == "CONFLICT"  # only a 64 KiB prefix was read, for the message
    assert len(json.dumps(result)) < 2000
