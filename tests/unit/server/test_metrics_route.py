"""The metrics route's access rule (issue 36, L9) in-process: a token, the verifier's, or nobody."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from starlette.applications import Starlette
from starlette.testclient import TestClient

from scopegate.config.model import HttpConfig
from scopegate.identity.model import Identity
from scopegate.identity.tokens import Verification, VerifiedToken
from scopegate.server.http_app import metrics_route
from scopegate.server.metrics import ServerMetrics

APP: Any = SimpleNamespace(guard=None)


class OneToken:
    """Accepts one token, as the MCP endpoint's verifier would."""

    async def verify(self, token: str) -> Verification:
        if token != "good-token-0123456789":
            return Verification.refused("unknown_token")
        return Verification(VerifiedToken(Identity("acme"), "table"))


def client(cfg: HttpConfig, **kw: Any) -> TestClient:
    return TestClient(Starlette(routes=[metrics_route(cfg, APP, ServerMetrics(), **kw)]))


def status(c: TestClient, token: str | None) -> int:
    return c.get("/metrics", headers={"Authorization": f"Bearer {token}"} if token else {}).status_code


def test_the_verifier_decides_by_default() -> None:
    c = client(HttpConfig(), verifier=OneToken())
    assert [status(c, t) for t in (None, "bad", "good-token-0123456789")] == [401, 401, 200]


def test_a_scraper_token_replaces_the_verifier() -> None:
    c = client(HttpConfig(metrics_token_env="SCRAPE"), environ={"SCRAPE": "scraper-secret"}, verifier=OneToken())
    assert [status(c, t) for t in (None, "good-token-0123456789", "scraper-secret")] == [401, 401, 200]


def test_without_a_verifier_or_a_token_nobody_reads_them() -> None:
    c = client(HttpConfig())
    assert [status(c, t) for t in (None, "good-token-0123456789")] == [401, 401]


def test_none_opens_them_on_their_own_listener() -> None:
    c = client(HttpConfig(metrics_port=0, metrics_auth="none"))
    assert status(c, None) == 200
