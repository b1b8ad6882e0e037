"""Who may read ``/metrics`` (issue 36, L9): by default only a caller with a bearer token.

Since wave 1, ``/metrics`` on the MCP port answered anyone who could reach the port (tool names,
call volumes, refusal reasons, identity-provider health). Now ``server.http.metrics_auth`` decides:
``bearer`` (the default) wants the token of ``metrics_token_env`` or any token the MCP endpoint
accepts; ``none`` is allowed only on a listener of its own (``metrics_port``); ``metrics_path: null``
turns metrics off.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import yaml
from mcp_harness import ServerProcess, World, free_port, start_http_server

from scopegate.config import load_config
from scopegate.errors import ConfigError


def get(url: str, token: str | None = None) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    return httpx.get(url, headers=headers, timeout=10)


def variant(world: World, folder: Path, name: str, **http: object) -> Path:
    """The session's config with other ``server.http`` keys."""
    data = yaml.safe_load(world.config.read_text("utf-8"))
    data["server"] = {**data.get("server", {}), "http": {**data.get("server", {}).get("http", {}), **http}}
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), "utf-8")
    return path


def test_metrics_on_the_mcp_port_need_a_token_the_mcp_endpoint_accepts(world: World, server: ServerProcess) -> None:
    url = f"{server.base}/metrics"
    anonymous = get(url)
    assert anonymous.status_code == 401 and "scopegate_" not in anonymous.text
    assert anonymous.headers["www-authenticate"] == "Bearer"
    assert get(url, "sg-e2e-not-a-real-token-000000000000").status_code == 401
    assert get(url, world.jwt("acme", aud="another-service")).status_code == 401
    for token in (world.tokens["acme"], world.jwt("globex")):  # a table token, a JWT
        shown = get(url, token)
        assert shown.status_code == 200 and "scopegate_tool_calls_total" in shown.text


@pytest.fixture(scope="module")
def side_and_off(world: World) -> Iterator[tuple[ServerProcess, int, ServerProcess]]:
    folder = world.folder / "metrics-access"
    folder.mkdir(exist_ok=True)
    side_port = free_port()
    side = start_http_server(
        variant(world, folder, "side", metrics_port=side_port, metrics_auth="none"), log_dir=folder
    )
    try:
        off = start_http_server(variant(world, folder, "off", metrics_path=None), log_dir=folder)
        try:
            yield side, side_port, off
        finally:
            off.stop()
    finally:
        side.stop()


def test_open_metrics_only_on_a_listener_of_their_own_and_off_means_off(
    world: World, side_and_off: tuple[ServerProcess, int, ServerProcess]
) -> None:
    side, side_port, off = side_and_off
    assert get(f"{side.base}/metrics", world.tokens["acme"]).status_code == 404  # not on the MCP port
    scraped = get(f"http://127.0.0.1:{side_port}/metrics")
    assert scraped.status_code == 200 and "scopegate_" in scraped.text
    assert get(f"{off.base}/metrics", world.tokens["acme"]).status_code == 404
    assert get(f"{off.base}/healthz").status_code == 200


def test_unauthenticated_metrics_on_the_mcp_port_are_refused_at_load(world: World, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="metrics_auth 'none' needs metrics_port"):
        load_config(variant(world, tmp_path, "open", metrics_auth="none"))
