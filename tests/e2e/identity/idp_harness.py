"""What the identity end-to-end tests share: a config on the local Keycloak, servers, tokens.

One Keycloak per session (the ``keycloak`` fixture), one orders API that only
accepts tokens Keycloak issued for it (OIDC), and ``scopegate serve`` configs
whose ``auth`` section points at the realm: JWTs with the provider's JWKS
(discovered from its metadata), scopes per tool, and token exchange for the
orders API.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import uvicorn

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "mcp"))

from mcp_harness import free_port, search_tool_config, serving_in_thread, write_config

from scopegate.config import build_app, load_config
from scopegate.examples.orders import SPEC_PATH
from scopegate.examples.orders.server import RunningService
from scopegate.server.http_app import build_http_app
from scopegate_lab.keycloak import RealmClient
from scopegate_lab.keycloak_realm import MCP_CLIENT, ORDERS_CLIENT, RealmInfo

SECRET_ENV = "SG_IDP_MCP_SECRET"
METRICS_ENV = "SG_IDP_METRICS_TOKEN"  # /metrics wants a bearer token (issue 36, L9): the scraper's own
METRICS_TOKEN = "sg-idp-e2e-metrics-scraper-token"


@dataclass
class IdpWorld:
    """The session's world: the realm, its admin client, the ticket index and owners, the orders API, a config."""

    idp: RealmInfo
    realm: RealmClient
    folder: Path
    data: Path
    owner: dict[str, str]  # ticket id -> tenant
    orders: RunningService
    config: Path


CLAIMS = {"tenant": "tenant_id", "user": "customer_id", "groups": "groups"}
SCOPES = {
    "tools": {"search": ["tickets:read"], "fetch": ["tickets:read"]},
    "read": ["orders:read"],
    "write": ["orders:write"],
    "implies": {"orders:admin": ["orders:write"], "orders:write": ["orders:read"]},
}
ORDER_POLICIES = {
    "listOrders": {
        "bind": {"customer_id": "user_id"},
        "projection": ["orders.id", "orders.status", "orders.customer_id"],
    },
    "getOrder": {"ownership": "response.customer_id == state.user_id"},
    "updateShippingAddress": {"ownership": "getOrder(orderId=orderId).customer_id == state.user_id"},
}


def auth_section(idp: RealmInfo, **overrides: Any) -> dict[str, Any]:
    auth: dict[str, Any] = {
        "provider": {"issuer": idp.issuer, "client_id": MCP_CLIENT, "client_secret_env": SECRET_ENV},
        "jwt": {"issuer": idp.issuer, "audience": MCP_CLIENT, "discover": True, "claims": CLAIMS, "leeway_s": 0},
        "scopes": SCOPES,
    }
    auth.update(overrides)
    return auth


def orders_section(orders_url: str, *, policies: Mapping[str, Any] | None = None, audience: str = ORDERS_CLIENT) -> Any:
    return {
        "name": "orders",
        "spec": str(SPEC_PATH),
        "allow": ["listOrders", "getOrder", "updateShippingAddress"],
        "base_url": orders_url,
        "credentials": {
            "customerToken": {"exchange": {"audience": audience, "scopes": ["orders:read", "orders:write"]}}
        },
        "policies": dict(ORDER_POLICIES if policies is None else policies),
    }


def write_idp_config(
    path: Path, idp: RealmInfo, data: Path, orders_url: str, *, auth: Mapping[str, Any] | None = None, **orders: Any
) -> Path:
    return write_config(
        path,
        server={"name": "scopegate-idp", "http": {"metrics_token_env": METRICS_ENV}},
        backends={"local": {"type": "embedded", "path": str(data)}},
        search_tools=[search_tool_config()],
        openapi=[orders_section(orders_url, **orders)],
        scope={"state_keys": {"tenant": "tenant_id", "user": "user_id", "groups": "group_ids"}},
        auth=dict(auth or auth_section(idp)),
        guards={"cap": {"families": {"search": 1000, "openapi": 1000}, "window_s": 3600}},
    )


@contextlib.contextmanager
def in_thread_server(config: Path) -> Iterator[str]:
    """The config's HTTP app under uvicorn in a thread, on a port chosen first (so its resource URI is right).

    The app is built, served and closed on the thread's own event loop (its HTTP clients live there)."""
    port = free_port()
    cfg = load_config(config)
    http = replace(cfg.server.http, port=port)
    stop = threading.Event()
    errors: list[BaseException] = []

    async def serve() -> None:
        app = await build_app(cfg, resource=f"http://127.0.0.1:{port}/mcp")
        try:
            asgi = build_http_app(app, http=http)
            server = uvicorn.Server(
                uvicorn.Config(asgi, host="127.0.0.1", port=port, log_level="warning", lifespan="on", access_log=False)
            )
            task = asyncio.create_task(server.serve())
            while not stop.is_set() and not task.done():
                await asyncio.sleep(0.05)
            server.should_exit = True
            await task
        finally:
            await app.aclose()

    def run() -> None:
        try:
            asyncio.run(serve())
        except BaseException as exc:  # surfaced by the test
            errors.append(exc)

    with serving_in_thread(run, stop.set, port) as base:
        yield base
    if errors:
        raise errors[0]
