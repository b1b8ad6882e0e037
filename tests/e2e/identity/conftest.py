"""Fixtures of the identity end-to-end tests: Keycloak's realm, the orders API on OIDC, a served config."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "mcp"))

from idp_harness import METRICS_ENV, METRICS_TOKEN, SECRET_ENV, IdpWorld, write_idp_config
from mcp_harness import ServerProcess, start_http_server

from scopegate.backends.embedded import EmbeddedBackend
from scopegate.demo.corpus import generate_tickets, ticket_spec
from scopegate.examples.orders.oidc import OidcSettings
from scopegate.examples.orders.server import running_orders_service
from scopegate_lab.keycloak import RealmClient
from scopegate_lab.keycloak_realm import MCP_CLIENT, RealmInfo

pytestmark = pytest.mark.keycloak


@pytest.fixture(scope="session")
def idp_world(keycloak: RealmInfo, tmp_path_factory: pytest.TempPathFactory) -> Iterator[IdpWorld]:
    os.environ[SECRET_ENV] = keycloak.secret(MCP_CLIENT)
    os.environ[METRICS_ENV] = METRICS_TOKEN
    folder = tmp_path_factory.mktemp("idp-e2e")
    data = folder / "data"
    tickets = list(generate_tickets(per_tenant=40))
    EmbeddedBackend(ticket_spec(), data / "tickets").ingest_sync(tickets, batch_size=1000)
    oidc = OidcSettings(issuer=keycloak.issuer, jwks_url=keycloak.jwks_uri)
    realm = RealmClient(keycloak)
    with running_orders_service(oidc=oidc) as orders:
        config = write_idp_config(folder / "scopegate.yaml", keycloak, data, orders.base_url)
        try:
            yield IdpWorld(keycloak, realm, folder, data, {t["ticket_id"]: t["tenant_id"] for t in tickets}, orders,
                           config)  # fmt: skip
        finally:
            realm.close()


@pytest.fixture(scope="session")
def idp_server(idp_world: IdpWorld) -> Iterator[ServerProcess]:
    """``scopegate serve`` over HTTP with the realm's auth, for the whole session."""
    proc = start_http_server(idp_world.config, {SECRET_ENV: os.environ[SECRET_ENV]}, log_dir=idp_world.folder)
    try:
        yield proc
    finally:
        proc.stop()


@pytest.fixture(autouse=True)
def _fresh_orders(idp_world: IdpWorld) -> None:
    idp_world.orders.state.reset()
