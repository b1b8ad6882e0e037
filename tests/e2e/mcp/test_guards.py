"""Guards over MCP: the call cap per session (and per principal without one), the call log, metrics."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from mcp_harness import World, http_client, in_thread_http_server, search_tool_config, write_config

from scopegate.config import ToolApp, build_app, load_config
from scopegate.server.http_app import build_http_app


@pytest.fixture
async def capped(world: World, tmp_path: Path) -> AsyncIterator[tuple[ToolApp, Path]]:
    config = write_config(
        tmp_path / "capped.yaml",
        backends={"local": {"type": "embedded", "path": str(world.data)}},
        search_tools=[search_tool_config()],
        auth={"token_table": str(world.folder / "tokens.yaml")},
        guards={
            "cap": {"families": {"search": 3}, "window_s": 3600},
            "log": {"path": str(tmp_path / "calls.jsonl")},
        },
    )
    app = await build_app(load_config(config))
    try:
        yield app, tmp_path / "calls.jsonl"
    finally:
        await app.aclose()


async def _searches(url: str, token: str, n: int, mode: str, **headers: str) -> list[str | None]:
    codes: list[str | None] = []
    async with http_client(url, token, mode=mode, headers=headers) as client:
        for i in range(n):
            out = await client.call_tool("search_tickets", {"query": f"refund {i}"})
            codes.append(out.structured_content.get("error_code"))
    return codes


async def test_cap_per_session_and_per_principal(world: World, capped: tuple[ToolApp, Path]) -> None:
    app, log_path = capped
    with in_thread_http_server(build_http_app(app)) as base:
        url = f"{base}/mcp"
        acme, globex = world.tokens["acme"], world.tokens["globex"]
        # Handshake era: one budget per MCP session; a new session starts afresh.
        assert await _searches(url, acme, 4, "legacy") == [None, None, None, "CALL_LIMIT"]
        assert await _searches(url, acme, 1, "legacy") == [None]
        # 2026-07-28 requests carry no session: the verified principal is the session.
        assert await _searches(url, acme, 3, "auto") == [None, None, None]
        assert await _searches(url, acme, 1, "auto") == ["CALL_LIMIT"]
        # A session id the client makes up does not buy a fresh budget.
        assert await _searches(url, acme, 1, "auto", **{"Mcp-Session-Id": "made-up-session"}) == ["CALL_LIMIT"]
        assert await _searches(url, globex, 1, "auto") == [None]  # another principal, its own budget
        metrics = httpx.get(f"{base}/metrics", headers={"Authorization": f"Bearer {acme}"}, timeout=10).text
        assert 'scopegate_tool_errors_total{code="CALL_LIMIT",tool="search_tickets"}' in metrics
    app.guard.call_log.flush()
    records = [json.loads(line) for line in log_path.read_text("utf-8").splitlines()]
    calls = [r for r in records if r.get("event") == "call"]
    assert len(calls) == 11
    assert {r["tenant_id"] for r in calls} == {"acme", "globex"}
    text = log_path.read_text("utf-8")
    for token in world.tokens.values():
        assert token not in text
