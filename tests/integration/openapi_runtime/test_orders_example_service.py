"""The example orders service: its routes match the pinned spec, and its runner prints the bound port."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import httpx
from fastapi.routing import APIRoute

from scopegate.examples.orders import SPEC_PATH
from scopegate.examples.orders.app import create_app
from scopegate.examples.orders.server import RunningService

METHODS = {"get", "put", "post", "delete", "patch", "head", "options"}


def _spec_routes() -> set[tuple[str, str, str]]:
    spec = json.loads(SPEC_PATH.read_text())
    out = set()
    for path, item in spec["paths"].items():
        for method, op in item.items():
            if method in METHODS:
                out.add((method.upper(), re.sub(r"\{[^}]+\}", "{}", path), op["operationId"]))
    return out


def _app_routes() -> set[tuple[str, str, str]]:
    """(method, path shape, operationId) of the app; handlers are named after their operation in snake_case."""
    out = set()
    for route in create_app().routes:
        if not isinstance(route, APIRoute) or not route.include_in_schema:
            continue
        op_id = re.sub(r"_(\w)", lambda m: m.group(1).upper(), route.name)
        for method in route.methods:
            out.add((method, re.sub(r"\{[^}]+\}", "{}", route.path), op_id))
    return out


def test_app_routes_match_pinned_spec() -> None:
    assert _app_routes() == _spec_routes()


def test_spec_is_openapi_30_with_the_required_operations() -> None:
    spec = json.loads(SPEC_PATH.read_text())
    assert spec["openapi"].startswith("3.0")
    ops = {op for _, _, op in _spec_routes()}
    assert {"listOrders", "getOrder", "updateShippingAddress", "cancelOrder", "getSlow", "getFlaky", "getHuge"} <= ops
    assert {"redirectExternal", "getOrderLegacy", "getRateLimited", "simulateStatus"} <= ops
    cancel = spec["paths"]["/orders/{orderId}/cancel"]["post"]
    assert any(p["name"] == "Idempotency-Key" and p["in"] == "header" for p in cancel["parameters"])


def test_every_request_is_counted_even_unknown_paths(orders_service: RunningService) -> None:
    with httpx.Client(trust_env=False, timeout=5) as client:
        assert client.get(f"{orders_service.base_url}/no/such/path").status_code == 404
        assert client.get(f"{orders_service.base_url}/flaky/x?failures=0").status_code == 200
        hits = client.get(f"{orders_service.base_url}/_control/hits").json()
    assert hits["by_path"] == {"/no/such/path": 1, "/flaky/x": 1}
    assert hits["by_route"] == {"getFlaky": 1}
    assert orders_service.state.total_hits == 2


def test_runner_prints_the_bound_port_and_serves() -> None:
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    src = Path(__file__).resolve().parents[3] / "src"
    env["PYTHONPATH"] = str(src) + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.Popen(
        [sys.executable, "-m", "scopegate.examples.orders", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        match = re.fullmatch(r"listening on (http://127\.0\.0\.1:(\d+))\n", line)
        assert match, line
        assert int(match.group(2)) > 0
        for _ in range(100):
            try:
                reply = httpx.get(f"{match.group(1)}/flaky/runner?failures=0", timeout=2, trust_env=False)
                break
            except httpx.ConnectError:
                time.sleep(0.05)
        assert reply.json() == {"key": "runner", "hits": 1}
    finally:
        proc.terminate()
        proc.wait(timeout=10)
