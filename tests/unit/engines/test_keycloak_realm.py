"""The test realm (a pure builder) and how the Keycloak node is started (no JVM here)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from syrupy.assertion import SnapshotAssertion

from scopegate_lab.keycloak_node import BUILD_OPTIONS, KeycloakConfig, KeycloakNode
from scopegate_lab.keycloak_realm import MCP_CLIENT, ORDERS_CLIENT, RealmInfo, realm, rotation_spec, user_profile


def client(rep: dict[str, Any], client_id: str) -> dict[str, Any]:
    return next(c for c in rep["clients"] if c["clientId"] == client_id)


def test_realm_snapshot(snapshot: SnapshotAssertion) -> None:
    assert realm() == snapshot


def test_the_tenant_is_not_the_users_to_edit() -> None:
    attrs = {a["name"]: a for a in user_profile()["attributes"]}
    assert attrs["tenant"]["permissions"]["edit"] == ["admin"]
    assert attrs["customer_id"]["permissions"]["edit"] == ["admin"]
    assert user_profile()["unmanagedAttributePolicy"] == "ADMIN_VIEW"


def test_clients_have_only_the_flows_they_need() -> None:
    rep = realm()
    for c in rep["clients"]:
        assert c["standardFlowEnabled"] is False and c["implicitFlowEnabled"] is False
        assert c["publicClient"] is False and c["secret"]
    mcp, orders = client(rep, MCP_CLIENT), client(rep, ORDERS_CLIENT)
    assert mcp["attributes"] == {"standard.token.exchange.enabled": "true"}
    assert not mcp["directAccessGrantsEnabled"] and not mcp["serviceAccountsEnabled"]
    assert not orders["directAccessGrantsEnabled"] and not orders["serviceAccountsEnabled"]
    assert "orders-audience" in mcp["defaultClientScopes"]  # exchanged tokens may name the orders API
    assert client(rep, "short-lived")["attributes"]["access.token.lifespan"] == "2"
    accounts = {u["serviceAccountClientId"]: u for u in rep["users"] if "serviceAccountClientId" in u}
    assert accounts["acme-bot"]["attributes"] == {"tenant": ["acme"]}
    assert accounts["scopegate-admin"]["clientRoles"]["realm-management"][0] == "manage-realm"


def test_the_rotation_realm_is_separate() -> None:
    rep = realm(rotation_spec())
    assert rep["realm"] == "scopegate-rotation" and next(u["username"] for u in rep["users"]) == "bob"
    info = RealmInfo("http://127.0.0.1:1", rotation_spec())
    assert info.issuer == "http://127.0.0.1:1/realms/scopegate-rotation"
    assert info.token_endpoint.endswith("/realms/scopegate-rotation/protocol/openid-connect/token")


def test_node_command_and_import_files(tmp_path: Path) -> None:
    node = KeycloakNode(KeycloakConfig(state_dir=tmp_path, java="/opt/java/bin/java", heap="256m"))
    (node.config.seed / "h2").mkdir(parents=True)
    (node.config.seed / "h2" / "keycloakdb.mv.db").write_bytes(b"seed")
    node._prepare(clean=True)
    data = node.config.dist / "data"
    assert (data / "h2" / "keycloakdb.mv.db").read_bytes() == b"seed"  # a clean start copies the seed
    imported = sorted(p.name for p in (data / "import").iterdir())
    assert imported == ["scopegate-realm.json", "scopegate-rotation-realm.json"]
    assert json.loads((data / "import" / "scopegate-realm.json").read_text())["realm"] == "scopegate"
    cmd, env = node._command(18080)
    assert cmd[1:3] == ["start", "--optimized"] and "--cache=local" in cmd and "--http-host=127.0.0.1" in cmd
    assert "--hostname=http://127.0.0.1:18080" in cmd and "--import-realm" in cmd
    assert env is not None and env["JAVA"] == "/opt/java/bin/java" and env["JAVA_OPTS_KC_HEAP"].endswith("-Xmx256m")
    assert not node.is_built() and "--db=dev-file" in BUILD_OPTIONS
