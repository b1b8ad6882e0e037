"""Shared helpers of the OpenAPI runtime integration tests (settings, sessions, secrets)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from scopegate.context import CallContext
from scopegate.examples.orders import SPEC_PATH
from scopegate.examples.orders.data import ALICE, BOB, CUSTOMERS, REPORTS_KEY, STAFF_KEY
from scopegate.openapi.runtime import (
    FromProvider,
    FromState,
    OperationPolicy,
    RetryPolicy,
    Timeouts,
    ToolsetSettings,
)
from scopegate_lab.hostile import SPEC_PATH as HOSTILE_SPEC
from scopegate_lab.hostile import TOKEN as HOSTILE_TOKEN

ORDER_OPS = ("getOrder", "getOrderLegacy", "updateShippingAddress", "cancelOrder", "addOrderNote")
ALL_OPS = (
    "listOrders",
    *ORDER_OPS,
    "getMe",
    "getSalesSummary",
    "getSlow",
    "getFlaky",
    "postFlaky",
    "postFlakyIdempotent",
    "getRateLimited",
    "getHuge",
    "redirectExternal",
    "openRedirect",
    "simulateStatus",
)
OWNED = "response.customer_id == state.user_id"
LOOKUP = "getOrder(orderId=orderId).customer_id == state.user_id"
POLICIES = {
    "listOrders": OperationPolicy(bind={"customer_id": "user_id"}),
    "getOrder": OperationPolicy(ownership=OWNED),
    "getOrderLegacy": OperationPolicy(ownership=OWNED),
    "updateShippingAddress": OperationPolicy(ownership=LOOKUP),
    "cancelOrder": OperationPolicy(ownership=LOOKUP),
    "addOrderNote": OperationPolicy(ownership=LOOKUP),
}
# Passwords the tests set through createServer: sent to the API, never logged or echoed.
ROOT_PASS = "hunter2-root-pass-8c1e4b"
RECOVERY_PIN = "pin-5521-0077"
# Only the secrets a test could leak; the assertions look for each of them everywhere.
SECRETS = (STAFF_KEY, REPORTS_KEY, HOSTILE_TOKEN, *(c.token for c in CUSTOMERS.values()))
SENSITIVE_VALUES = (ROOT_PASS, RECOVERY_PIN)
MAX_BYTES = 1_000_000


def staff_settings(base_url: str, **overrides: Any) -> ToolsetSettings:
    """Service credential (staff key sees every order): the tool alone enforces ownership."""
    settings = ToolsetSettings(
        spec=SPEC_PATH,
        allow=ALL_OPS,
        base_url=base_url,
        credentials={
            "staffKey": FromProvider(lambda ctx, scheme: STAFF_KEY),
            "reportsKey": FromProvider(lambda ctx, scheme: REPORTS_KEY),
        },
        policies=POLICIES,
        timeouts=Timeouts(connect=2.0, read=5.0, write=5.0, pool=2.0, total=8.0),
        retry=RetryPolicy(max_attempts=3, base_delay=0.01, max_delay=0.05, max_retry_after=2.0),
    )
    return replace(settings, **overrides)


def delegated_settings(base_url: str, **overrides: Any) -> ToolsetSettings:
    """Delegated authority: the user's own token from session state; the API enforces too."""
    settings = staff_settings(base_url)
    creds = {"customerToken": FromState("orders_token")}
    return replace(settings, credentials=creds, **overrides)


def hostile_settings(base_url: str, **overrides: Any) -> ToolsetSettings:
    """The hostile upstream with a bearer token from the service, a 1 MB limit and a short budget."""
    settings = ToolsetSettings(
        spec=HOSTILE_SPEC,
        allow=("getBomb", "createServer"),
        base_url=base_url,
        credentials={"hostileToken": FromProvider(lambda ctx, scheme: HOSTILE_TOKEN)},
        timeouts=Timeouts(connect=2.0, read=5.0, write=5.0, pool=2.0, total=2.0),
        retry=RetryPolicy(max_attempts=2, base_delay=0.01, max_delay=0.05, max_retry_after=1.0),
        max_response_bytes=MAX_BYTES,
    )
    return replace(settings, **overrides)


def session(user: str, *, confirmed: bool | None = None, token: bool = True) -> CallContext:
    state: dict[str, Any] = {"user_id": user}
    if token:
        state["orders_token"] = CUSTOMERS[user].token
    return CallContext(state=state, confirmed=confirmed)


def without_request_id(result: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in result.items() if k != "request_id"}


__all__ = [
    "ALICE",
    "ALL_OPS",
    "BOB",
    "CUSTOMERS",
    "HOSTILE_TOKEN",
    "MAX_BYTES",
    "ORDER_OPS",
    "POLICIES",
    "RECOVERY_PIN",
    "ROOT_PASS",
    "SECRETS",
    "SENSITIVE_VALUES",
    "delegated_settings",
    "hostile_settings",
    "session",
    "staff_settings",
    "without_request_id",
]
