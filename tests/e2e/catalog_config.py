"""The one YAML of the catalog end-to-end tests (ADK and MCP): the orders API in catalog mode.

Selected: every read tagged ``orders`` (by rule) but the legacy redirect, and the two writes
named in the allowlist. Outside the allowlist: ``addOrderNote`` (a write not named), ``getMe`` and
``getSalesSummary`` (other tags). Scopes: reads need ``orders:read``, writes ``orders:write``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from scopegate.examples.orders import SPEC_PATH

LOOKED_UP = "getOrder(orderId=orderId).customer_id == state.user_id"
OUTSIDE = ("addOrderNote", "getMe", "getSalesSummary", "getOrderLegacy")
READ_SCOPES = ["orders:read"]
ALL_SCOPES = ["orders:read", "orders:write"]


def catalog_config(
    folder: Path, base_url: str, token_table: Path, *, log: Path | None = None, mode: str = "catalog"
) -> Path:
    guards: dict[str, Any] = {"cap": {"families": {"openapi": 1000, "catalog": 1000}, "window_s": 3600}}
    if log is not None:
        guards["log"] = {"path": str(log)}
    data = {
        "version": 1,
        "server": {"name": "orders-catalog"},
        "openapi": [
            {
                "name": "orders",
                "spec": str(SPEC_PATH),
                "base_url": base_url,
                "mode": mode,
                "allow": ["updateShippingAddress", "cancelOrder"],
                "include": ["tag:orders"],
                "exclude": ["/orders/*/legacy"],
                "credentials": {"staffKey": {"env": "ORDERS_STAFF_KEY"}},
                "policies": {
                    "listOrders": {"bind": {"customer_id": "user_id"}},
                    "getOrder": {"ownership": "response.customer_id == state.user_id"},
                    "updateShippingAddress": {"ownership": LOOKED_UP},
                    "cancelOrder": {"ownership": LOOKED_UP},
                },
                "catalog": {"max_results": 5},
            }
        ],
        "scope": {"state_keys": {"tenant": "tenant_id", "user": "user_id"}, "source": "state"},
        "auth": {
            "token_table": str(token_table),
            "scopes": {"read": READ_SCOPES, "write": ["orders:write"]},
        },
        "guards": guards,
    }
    path = folder / "orders-catalog.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), "utf-8")
    return path
