"""Pure parts of the runtime: credentials placement and redaction, ownership rules, error mapping,
retry decisions, response shaping, redirect targets."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import pytest

from scopegate.context import CallContext
from scopegate.errors import ConfigError
from scopegate.openapi.model import SecurityScheme
from scopegate.openapi.runtime.credentials import (
    Credential,
    FromProvider,
    FromState,
    NoCredentials,
    Redactor,
    Secret,
    resolve_auth,
)
from scopegate.openapi.runtime.errors import error_for_status, parse_retry_after
from scopegate.openapi.runtime.http import _follow_target
from scopegate.openapi.runtime.ownership import LookupOwner, ResponseOwner, owner_matches, parse_rule
from scopegate.openapi.runtime.response import ShapeLimits, parse_body, project, shape
from scopegate.openapi.runtime.retry import RetryPolicy, Verdict, backoff, may_retry, with_retries

SCHEMES = {
    "bearer": SecurityScheme("bearer", "http", scheme="bearer"),
    "basic": SecurityScheme("basic", "http", scheme="basic"),
    "hkey": SecurityScheme("hkey", "apiKey", name="X-Api-Key", location="header"),
    "qkey": SecurityScheme("qkey", "apiKey", name="api_key", location="query"),
    "ckey": SecurityScheme("ckey", "apiKey", name="sid", location="cookie"),
    "oauth": SecurityScheme("oauth", "oauth2"),
}
CTX = CallContext(state={"token": "tok-123456", "user": "AC1", "password": "pw-999999"})


async def test_credential_placement_per_scheme() -> None:
    sources = {
        "bearer": FromState("token"),
        "basic": FromState("password", username_key="user"),
        "hkey": FromProvider(lambda c, s: "hk-111111"),
        "qkey": FromProvider(lambda c, s: "qk-222222"),
        "ckey": FromProvider(lambda c, s: "ck-333333"),
        "oauth": FromState("token"),
    }
    bearer = await resolve_auth([{"bearer": ()}], SCHEMES, sources, CTX)
    assert bearer.headers == (("Authorization", "Bearer tok-123456"),)
    basic = await resolve_auth([{"basic": ()}], SCHEMES, sources, CTX)
    assert basic.headers == (("Authorization", "Basic " + base64.b64encode(b"AC1:pw-999999").decode()),)
    assert (await resolve_auth([{"hkey": ()}], SCHEMES, sources, CTX)).headers == (("X-Api-Key", "hk-111111"),)
    assert (await resolve_auth([{"qkey": ()}], SCHEMES, sources, CTX)).query == (("api_key", "qk-222222"),)
    assert (await resolve_auth([{"ckey": ()}], SCHEMES, sources, CTX)).cookies == (("sid", "ck-333333"),)
    assert (await resolve_auth([{"oauth": ("read",)}], SCHEMES, sources, CTX)).headers == (
        ("Authorization", "Bearer tok-123456"),
    )
    both = await resolve_auth([{"hkey": (), "qkey": ()}], SCHEMES, sources, CTX)
    assert both.headers == (("X-Api-Key", "hk-111111"),) and both.query == (("api_key", "qk-222222"),)


async def test_alternatives_and_missing_credentials() -> None:
    sources = {"hkey": FromProvider(lambda c, s: "hk-111111")}
    first_possible = await resolve_auth([{"bearer": ()}, {"hkey": ()}], SCHEMES, sources, CTX)
    assert first_possible.headers == (("X-Api-Key", "hk-111111"),)
    assert (await resolve_auth([], SCHEMES, sources, CTX)).empty
    assert (await resolve_auth([{"bearer": ()}, {}], SCHEMES, sources, CTX)).empty  # optional auth
    with pytest.raises(NoCredentials):
        await resolve_auth([{"bearer": ()}], SCHEMES, sources, CTX)
    for bad in ("", "a\r\nb", None, 42):
        with pytest.raises(NoCredentials):
            await resolve_auth([{"bearer": ()}], SCHEMES, {"bearer": FromState("t")}, CallContext(state={"t": bad}))


async def test_async_provider_and_credential_objects() -> None:
    async def vault(ctx: CallContext, scheme: SecurityScheme) -> Credential:
        return Credential(Secret("pw-abcdef"), username="svc")

    auth = await resolve_auth([{"basic": ()}], SCHEMES, {"basic": FromProvider(vault)}, CTX)
    assert auth.headers[0][1] == "Basic " + base64.b64encode(b"svc:pw-abcdef").decode()
    assert "pw-abcdef" in auth.secrets
    assert repr(Secret("pw-abcdef")) == "Secret('***')" and "pw-abcdef" not in str(Credential(Secret("pw-abcdef")))


def test_redactor_scrubs_every_spelling() -> None:
    red = Redactor(("tok/en+1", "tok%2Fen%2B1", "abc"))
    assert red.text("x tok/en+1 y tok%2Fen%2B1 abc") == "x [redacted] y [redacted] abc"  # too short to redact: abc
    assert red.value({"a": ["tok/en+1"], "tok/en+1": 1}) == {"a": ["[redacted]"], "[redacted]": 1}
    assert red.bytes(b'{"t":"tok/en+1"}') == b'{"t":"[redacted]"}'


def test_ownership_rules() -> None:
    assert parse_rule("response.customer_id == state.user_id") == ResponseOwner("customer_id", "user_id")
    assert parse_rule(" getOrder(orderId=orderId, x = y).owner.id == state.uid ") == LookupOwner(
        "getOrder", {"orderId": "orderId", "x": "y"}, "owner.id", "uid"
    )
    for bad in ("customer_id == user_id", "response.a = state.b", "f(x).a == state.b; drop"):
        with pytest.raises(ConfigError):
            parse_rule(bad)
    assert owner_matches({"owner": {"id": 7}}, "owner.id", "7")
    assert not owner_matches({"owner": {"id": 7}}, "owner.id", "8")
    for data in ({}, {"owner": None}, {"owner": {"id": None}}, {"owner": {"id": ["7"]}}, [], "7"):
        assert not owner_matches(data, "owner.id", "7")
    assert not owner_matches({"id": "7"}, "id", None)


@pytest.mark.parametrize(
    ("status", "code", "retryable"),
    [
        (400, "BAD_REQUEST", False),
        (401, "NOT_AUTHORIZED", False),
        (403, "NOT_AUTHORIZED", False),
        (404, "NOT_FOUND", False),
        (410, "NOT_FOUND", False),
        (409, "CONFLICT", False),
        (422, "BAD_REQUEST", False),
        (429, "RATE_LIMITED", True),
        (500, "UPSTREAM_ERROR", True),
        (501, "UPSTREAM_ERROR", False),
        (503, "UPSTREAM_ERROR", True),
        (418, "BAD_REQUEST", False),
    ],
)
def test_status_mapping(status: int, code: str, retryable: bool) -> None:
    env = error_for_status(status, body=b'{"detail": "x"}', content_type="application/json", retry_after=3)
    assert (env["status"], env["error_code"], env["retryable"]) == ("error", code, retryable)
    assert ("retry_after" in env) == (status == 429)


def test_api_message_is_found_cleaned_and_trimmed() -> None:
    bodies = [
        (b'{"error": {"message": "bad \\u0000 field\\n\\tx"}}', "application/json"),
        (b'{"errors": [{"msg": "first"}, {"msg": "second"}]}', "application/problem+json"),
        (b"plain text error", "text/plain"),
        (b"<html>nope</html>", "text/html"),
        (("y" * 5000).encode(), "text/plain; charset=utf-8"),
    ]
    messages = [
        error_for_status(400, body=b, content_type=c).get("untrusted", {}).get("api_message") for b, c in bodies
    ]
    assert messages[:4] == ["bad field x", "first; second", "plain text error", None]
    assert len(messages[4]) == 300 and messages[4].endswith("…")


def test_retry_after_parsing() -> None:
    assert parse_retry_after("7") == 7.0
    soon = datetime.now(UTC) + timedelta(seconds=30)
    assert 25 <= (parse_retry_after(format_datetime(soon, usegmt=True)) or 0) <= 31
    assert parse_retry_after("soon") is None and parse_retry_after(None) is None


def test_which_methods_may_retry() -> None:
    assert [
        m
        for m in ("GET", "HEAD", "OPTIONS", "PUT", "DELETE", "POST", "PATCH")
        if may_retry(m, has_idempotency_key=False)
    ] == ["GET", "HEAD", "OPTIONS", "PUT", "DELETE"]
    assert may_retry("POST", has_idempotency_key=True) and may_retry("patch", has_idempotency_key=True)


def test_backoff_is_capped_full_jitter() -> None:
    policy = RetryPolicy(base_delay=0.1, max_delay=1.0)
    assert [backoff(n, policy, rand=lambda: 1.0) for n in (1, 2, 3, 4, 5, 9)] == [0.1, 0.2, 0.4, 0.8, 1.0, 1.0]
    assert backoff(3, policy, rand=lambda: 0.0) == 0.0


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


async def _run(
    outcomes: list[Verdict], *, allowed: bool = True, deadline: float = 100.0, **policy: Any
) -> tuple[int, list[float]]:
    clock = FakeClock()
    seen: list[int] = []

    async def attempt(n: int) -> Verdict:
        seen.append(n)
        return outcomes[min(n, len(outcomes)) - 1]

    done = await with_retries(
        attempt,
        lambda v: v,
        policy=RetryPolicy(**policy),
        allowed=allowed,
        deadline=deadline,
        clock=clock,
        sleep=clock.sleep,
        rand=lambda: 0.5,
    )
    assert done.attempts == len(seen)
    return done.attempts, clock.sleeps


async def test_retry_loop_decisions() -> None:
    fail, ok = Verdict(True), Verdict(False)
    assert await _run([fail, fail, ok]) == (3, [0.05, 0.1])
    assert (await _run([fail] * 9))[0] == 3  # capped
    assert await _run([fail, ok], allowed=False) == (1, [])  # POST without a key
    assert await _run([Verdict(True, 2.0), ok]) == (2, [2.05])  # honours Retry-After (+ jitter)
    assert await _run([Verdict(True, 60.0), ok]) == (1, [])  # too long to wait: give it back
    assert await _run([fail, ok], deadline=0.01) == (1, [])  # no wait crosses the deadline


def test_shaping_caps_lists_and_strings_and_drops_empties() -> None:
    data = {"items": [{"id": i, "n": None, "e": "", "z": 0, "f": False, "t": "x" * 50} for i in range(30)], "empty": []}
    out = shape(data, ShapeLimits(max_list_items=5, max_string_chars=10, max_result_chars=10_000))
    assert out.truncated and out.lists == [{"path": "items", "total_items": 30, "kept": 5}]
    assert out.data == {"items": [{"id": i, "z": 0, "f": False, "t": "x" * 9 + "…"} for i in range(5)]}
    assert out.strings_capped == 5


def test_shaping_budget_and_depth() -> None:
    deep: dict[str, Any] = {"v": 1}
    for _ in range(20):
        deep = {"d": deep}
    out = shape(deep, ShapeLimits(max_depth=4))
    assert out.data == {"d": {"d": {"d": {"d": "…"}}}} and out.truncated
    big = {"rows": [{"text": "word " * 200} for _ in range(100)]}
    out = shape(big, ShapeLimits(max_result_chars=2000))
    assert len(json.dumps(out.data, separators=(",", ":"), ensure_ascii=False)) <= 2000 and out.truncated


def test_shaping_strips_control_characters() -> None:
    out = shape({"t": "a\x00b\x1b[31mc\nd\te\u200b"}, ShapeLimits())
    assert out.data == {"t": "ab[31mc\nd\te\u200b"}


def test_projection_walks_through_lists() -> None:
    data = {"orders": [{"id": 1, "secret": "s", "addr": {"city": "P", "zip": "1"}}], "total": 1, "x": 2}
    assert project(data, ["orders.id", "orders[].addr.city", "total"]) == {
        "orders": [{"id": 1, "addr": {"city": "P"}}],
        "total": 1,
    }
    assert project(data, None) is data


def test_parse_body_kinds() -> None:
    assert parse_body(b"", "application/json") == ("empty", None)
    assert parse_body(b'{"a":1}', "application/vnd.api+json; charset=utf-8") == ("json", {"a": 1})
    assert parse_body(b"hello", "text/plain") == ("text", "hello")
    assert parse_body(b"not json", "application/json") == ("text", "not json")
    kind, desc = parse_body(b"\x89PNG", "image/png")
    assert kind == "binary" and desc["bytes"] == 4


@pytest.mark.parametrize(
    ("location", "expected"),
    [
        ("/v1/other", "https://api.test/v1/other"),
        ("other", "https://api.test/v1/items/other"),
        ("https://api.test/v1/x", "https://api.test/v1/x"),
        ("https://api.test:443/v1/x", "https://api.test:443/v1/x"),
        ("/v2/x", None),  # same host, outside the pinned base path
        ("/v1x", None),
        ("http://api.test/v1/x", None),  # scheme change
        ("https://api.test:8443/v1/x", None),  # port change
        ("https://evil.test/v1/x", None),
        ("//evil.test/v1/x", None),
        ("https://api.test.evil.test/v1", None),
        ("https://api.test@evil.test/v1", None),
    ],
)
def test_redirect_targets(location: str, expected: str | None) -> None:
    assert _follow_target("https://api.test/v1/items/1", location, "https://api.test/v1") == expected
