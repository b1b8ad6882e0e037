"""The catalog evals' world, for real: Chargebee's catalog config over the loopback spec world.

The eval cases (bench/evalsets/catalog) expect these to hold whatever the model does: the customer's
own subscription is found, described and read through call_operation; another customer's is refused
like a missing one and nothing of it reaches the result; a cancellation asks for confirmation and
sends nothing; a listing is bound to the session's customer; the eval's scope check sees another
tenant's ids when they do reach a result. Real HTTP on 127.0.0.1, the spec read from ../shared/data.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from scopegate.config import build_app, load_config
from scopegate.context import CallContext
from scopegate.evals.evalset import load_eval_set
from scopegate.evals.targets import catalog_operations
from scopegate_lab.spec_world import SpecWorld, World

SETS = Path(__file__).resolve().parents[3] / "bench" / "evalsets" / "catalog"
STATE = {"tenant_id": "acme", "user_id": "cus_alice"}


@pytest.fixture
async def world_app(shared: Callable[..., Path], monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[tuple[Any, Any]]:
    spec = shared("openapi", "chargebee_api_v1_spec.json")
    world = SpecWorld(spec, World.load(SETS / "chargebee.world.json"))
    server = world.serve()
    monkeypatch.setenv("CHARGEBEE_URL", f"http://127.0.0.1:{server.server_address[1]}")
    monkeypatch.setenv("SCOPEGATE_SPEC_DIR", str(spec.parent))
    monkeypatch.setenv("CHARGEBEE_API_KEY", "eval-key")
    monkeypatch.setenv("CHARGEBEE_API_PASSWORD", "unused")
    app = await build_app(load_config(SETS / "chargebee.catalog.yaml"), guard=None)
    try:
        yield app, world
    finally:
        await app.aclose()
        server.shutdown()


async def run(app: Any, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    found = next(t for t in app.raw_tools if t.name == tool)
    return dict((await found.run(args, CallContext(state=STATE))).result)


async def test_find_describe_call_the_customers_own_subscription(world_app: tuple[Any, Any]) -> None:
    app, world = world_app
    found = await run(app, "find_operations", {"query": "retrieve a subscription"})
    assert "retrieve_a_subscription" in [o["name"] for o in found["operations"]]
    described = await run(app, "describe_operation", {"name": "retrieve_a_subscription"})
    assert "subscription_id" in described["declaration"]["parameters"]["properties"]
    called = await run(
        app, "call_operation", {"name": "retrieve_a_subscription", "arguments": {"subscription_id": "sub_alice_pro"}}
    )
    assert called["status"] == "ok", called
    data = called["untrusted"]["data"]
    assert data["subscription"]["plan_id"] == "pro-monthly" and data["customer"]["id"] == "cus_alice"
    assert [(c.method, c.path) for c in world.calls] == [("GET", "/subscriptions/sub_alice_pro")]


async def test_another_customers_objects_are_refused_and_never_shown(world_app: tuple[Any, Any]) -> None:
    app, _world = world_app
    check = load_eval_set(SETS / "chargebee.evalset.json").scope_check
    assert check is not None
    foreign = await run(
        app, "call_operation", {"name": "retrieve_a_subscription", "arguments": {"subscription_id": "sub_bob_team"}}
    )
    missing = await run(
        app, "call_operation", {"name": "retrieve_a_subscription", "arguments": {"subscription_id": "sub_nobody"}}
    )
    assert foreign["error_code"] == missing["error_code"] == "NOT_FOUND"
    assert check.violations(STATE, foreign) == []
    # the same check does see Bob's data where it would reach the model
    assert "sub_bob_team" in check.violations(STATE, {"data": {"subscription": {"id": "sub_bob_team"}}})


async def test_a_cancellation_asks_first_and_sends_nothing(world_app: tuple[Any, Any]) -> None:
    app, world = world_app
    asked = await run(
        app, "call_operation", {"name": "cancel_a_subscription", "arguments": {"subscription_id": "sub_alice_pro"}}
    )
    assert asked["error_code"] == "CONFIRMATION_REQUIRED"
    assert [c for c in world.calls if c.method != "GET"] == []
    assert catalog_operations(app.raw_tools)["cancel_a_subscription"].requires_confirmation


async def test_a_listing_is_bound_to_the_sessions_customer(world_app: tuple[Any, Any]) -> None:
    app, world = world_app
    listed = await run(app, "call_operation", {"name": "list_invoices_for_a_customer", "arguments": {}})
    ids = [item["invoice"]["id"] for item in listed["untrusted"]["data"]["list"]]
    assert ids == ["inv_1001", "inv_1002"]
    assert world.calls[-1].path == "/customers/cus_alice/invoices"
    assert "inv_2001" not in json.dumps(listed)
