"""OpenAPI toolsets from the config: the same tools as ``OperationToolset(ToolsetSettings(...))``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from scopegate.config import build_app, declarations, load_config
from scopegate.config.loader import ConfigValidationError
from scopegate.demo.orders_demo import orders_settings
from scopegate.errors import ConfigError
from scopegate.examples.orders import SPEC_PATH
from scopegate.examples.orders.data import STAFF_KEY
from scopegate.openapi.runtime import OperationToolset

BASE_URL = "http://127.0.0.1:9"
OWNED = "response.customer_id == state.user_id"
LOOKED_UP = "getOrder(orderId=orderId).customer_id == state.user_id"


def orders_entry(**extra: Any) -> dict[str, Any]:
    """The config twin of ``scopegate.demo.orders_demo.orders_settings``."""
    entry: dict[str, Any] = {
        "name": "orders",
        "spec": str(SPEC_PATH),
        "base_url": BASE_URL,
        "allow": ["listOrders", "getOrder", "updateShippingAddress", "cancelOrder"],
        "credentials": {"staffKey": {"env": "ORDERS_STAFF_KEY"}},
        "policies": {
            "listOrders": {"bind": {"customer_id": "user_id"}, "projection": ["orders.id", "orders.status", "total"]},
            "getOrder": {"ownership": OWNED},
            "updateShippingAddress": {"ownership": LOOKED_UP},
            "cancelOrder": {"ownership": LOOKED_UP},
        },
    }
    entry.update(extra)
    return entry


def write(tmp_path: Path, *entries: dict[str, Any]) -> Path:
    path = tmp_path / "scopegate.yaml"
    path.write_text(yaml.safe_dump({"version": 1, "openapi": list(entries)}), "utf-8")
    return path


async def test_same_declarations_as_the_python_api(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ORDERS_STAFF_KEY", STAFF_KEY)
    app = await build_app(load_config(write(tmp_path, orders_entry()), environ={}), guard=None)
    python = OperationToolset(orders_settings(BASE_URL))
    try:
        assert declarations(app.tools) == declarations(list(python.tools))
        by_name = {d["name"]: d for d in declarations(app.tools)}
        assert by_name["updateShippingAddress"]["requires_confirmation"] is True
        assert by_name["updateShippingAddress"]["annotations"]["destructiveHint"] is True
        assert by_name["getOrder"]["annotations"]["readOnlyHint"] is True
        assert "customer_id" not in by_name["listOrders"]["parameters"]["properties"]
    finally:
        await app.aclose()
        await python.aclose()


async def test_confirm_always(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ORDERS_STAFF_KEY", STAFF_KEY)
    entry = orders_entry(confirm="always")
    entry["policies"]["getOrder"]["confirm"] = False
    app = await build_app(load_config(write(tmp_path, entry), environ={}), guard=None)
    try:
        asks = {d["name"]: d["requires_confirmation"] for d in declarations(app.tools)}
        assert asks == {"listOrders": True, "getOrder": False, "updateShippingAddress": True, "cancelOrder": True}
    finally:
        await app.aclose()


async def test_missing_secret_and_bad_entries(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ORDERS_STAFF_KEY", raising=False)
    with pytest.raises(ConfigError, match="ORDERS_STAFF_KEY is not set"):
        await build_app(load_config(write(tmp_path, orders_entry()), environ={}))
    monkeypatch.setenv("ORDERS_STAFF_KEY", STAFF_KEY)
    with pytest.raises(ConfigError, match="deleteEverything"):
        await build_app(load_config(write(tmp_path, orders_entry(allow=["deleteEverything"])), environ={}))
    with pytest.raises(ConfigError, match="no such file"):
        await build_app(load_config(write(tmp_path, orders_entry(spec="missing.json")), environ={}))
    bad = orders_entry()
    bad["policies"]["getOrder"]["ownership"] = "whatever"
    with pytest.raises(ConfigError, match="ownership rule"):
        await build_app(load_config(write(tmp_path, bad), environ={}))


def test_credential_needs_one_source(tmp_path: Path) -> None:
    entry = orders_entry(credentials={"staffKey": {"env": "A", "state_key": "b"}})
    with pytest.raises(ConfigValidationError) as info:
        load_config(write(tmp_path, entry), environ={})
    assert info.value.problems[0].path == "openapi[0].credentials.staffKey"
    entry = orders_entry(credentials={"basic": {"username_env": "U"}})
    with pytest.raises(ConfigValidationError):
        load_config(write(tmp_path, entry), environ={})


def test_confirm_never_is_not_a_policy(tmp_path: Path) -> None:
    with pytest.raises(ConfigValidationError) as info:
        load_config(write(tmp_path, orders_entry(confirm="never")), environ={})
    assert info.value.problems[0].path == "openapi[0].confirm"


async def test_a_multi_file_spec_from_the_config(tmp_path: Path) -> None:
    """`spec` is the root file; `allow_external_refs` lets its $refs reach the files next to it."""
    (tmp_path / "ops").mkdir()
    (tmp_path / "ops" / "list.yaml").write_text(
        "operationId: listThings\nparameters:\n  - {name: limit, in: query, schema: {type: integer}}\n"
        "responses: {'200': {description: ok}}\n",
        "utf-8",
    )
    root = tmp_path / "api.yaml"
    root.write_text(
        "openapi: 3.0.3\ninfo: {title: t, version: '1'}\nservers: [{url: 'https://api.example.test'}]\n"
        "paths:\n  /things:\n    get: {$ref: 'ops/list.yaml'}\n",
        "utf-8",
    )
    entry = {"name": "things", "spec": str(root), "allow": ["listThings"]}
    with pytest.raises(ConfigError, match="external references are disabled"):
        await build_app(load_config(write(tmp_path, entry), environ={}), guard=None)
    app = await build_app(load_config(write(tmp_path, {**entry, "allow_external_refs": True}), environ={}), guard=None)
    try:
        (decl,) = declarations(app.tools)
        assert list(decl["parameters"]["properties"]) == ["limit"]
    finally:
        await app.aclose()
