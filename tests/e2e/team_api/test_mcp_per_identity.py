"""Issue 37, a team's own API: per-user downstream credentials over MCP with the token table, no provider.

``scopegate serve`` (HTTP, DEBUG logging) authenticates three users with a token table. The
OpenAPI toolset's credential is ``per_identity``: each verified identity selects its own secret
from a store (a mode-checked file, or environment variables keyed by identity). The local API
sees two different credentials for two users; a third user, who has none, gets a structured
error and nothing is sent (never someone else's key). No key reaches a tool result or the log.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from mcp_harness import ServerProcess, http_client, opaque_token, start_http_server, write_config, write_token_table
from team_service import TEAM_SPEC, RunningTeam, running_team_service

ANA_KEY = "ana-downstream-4f1c2e9a"
BEN_KEY = "ben-downstream-b7d3a610"
USERS = {"ana": opaque_token("team", "ana"), "ben": opaque_token("team", "ben"), "cal": opaque_token("team", "cal")}


@pytest.fixture(scope="module")
def team() -> Iterator[RunningTeam]:
    with running_team_service({ANA_KEY: "ana", BEN_KEY: "ben"}) as svc:
        yield svc


def serve(folder: Path, team: RunningTeam, credential: dict[str, Any], env: dict[str, str]) -> ServerProcess:
    folder.mkdir(parents=True, exist_ok=True)
    spec = folder / "team-openapi.json"
    spec.write_text(json.dumps(TEAM_SPEC), "utf-8")
    table = write_token_table(
        folder / "tokens.yaml", [{"token": tok, "tenant": "team", "user": user} for user, tok in USERS.items()]
    )
    config = write_config(
        folder / "team.yaml",
        server={"name": "team-mcp"},
        openapi=[
            {
                "name": "team",
                "spec": str(spec),
                "base_url": team.base_url,
                "allow": ["getWidget"],
                "security_schemes": {"teamKey": {"type": "api_key", "header": "X-Team-Key"}},
                "credentials": {"teamKey": credential},
            }
        ],
        scope={"state_keys": {"tenant": "tenant_id", "user": "user_id"}},
        auth={"token_table": str(table)},
    )
    return start_http_server(config, env, log_dir=folder, args=("--log-level", "debug"))


async def call_as(server: ServerProcess, user: str, args: dict[str, Any]) -> tuple[dict[str, Any], str]:
    async with http_client(server.url, USERS[user]) as client:
        listed = await client.list_tools()
        result = await client.call_tool("getWidget", args)
    data: dict[str, Any] = result.structured_content or {}
    assert result.is_error == (data.get("status") == "error"), data
    shown = json.dumps([t.model_dump(mode="json") for t in listed.tools]) + json.dumps(
        [c.model_dump(mode="json") for c in result.content]
    )
    return data, shown


def secrets_file(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "team-secrets.yaml"
    path.write_text(yaml.safe_dump({"secrets": {"team/ana": ANA_KEY, "team/ben": BEN_KEY}}), "utf-8")
    os.chmod(path, 0o600)
    return path


@pytest.mark.parametrize("store", ["file", "env"])
async def test_each_mcp_user_reaches_the_api_with_its_own_credential(
    team: RunningTeam, tmp_path: Path, store: str
) -> None:
    if store == "file":
        credential: dict[str, Any] = {"per_identity": {"file": str(secrets_file(tmp_path))}}
        env: dict[str, str] = {}
    else:
        credential = {"per_identity": {"env": {"team/ana": "ANA_TEAM_KEY", "team/ben": "BEN_TEAM_KEY"}}}
        env = {"ANA_TEAM_KEY": ANA_KEY, "BEN_TEAM_KEY": BEN_KEY}
    server = serve(tmp_path / "srv", team, credential, env)
    team.state.clear()
    try:
        ana, ana_shown = await call_as(server, "ana", {"id": "echo"})
        ben, ben_shown = await call_as(server, "ben", {"id": "echo"})
        cal, cal_shown = await call_as(server, "cal", {"id": "w-1"})
    finally:
        server.stop()

    # The API saw two different credentials, each user's own, and answered for each account.
    assert [r.headers.get("x-team-key") for r in team.state.requests()] == [ANA_KEY, BEN_KEY]
    assert ana["status"] == "ok" and ana["untrusted"]["data"]["account"] == "ana", ana
    assert ben["status"] == "ok" and ben["untrusted"]["data"]["account"] == "ben", ben
    # The API echoed the key back; the tool result carries it redacted.
    assert ana["untrusted"]["data"]["debug"] == "served for credential [redacted]"

    # A user with no credential: a structured error, nothing sent (not someone else's key).
    assert cal["status"] == "error" and cal["error_code"] == "NOT_AUTHORIZED", cal
    assert cal["retryable"] is False and "no credential" in cal["message"].lower()
    assert len(team.state.requests()) == 2

    everything = json.dumps([ana, ben, cal]) + ana_shown + ben_shown + cal_shown + server.stderr()
    assert ANA_KEY not in everything and BEN_KEY not in everything
    assert "X-Team-Key" not in ana_shown  # the credential's header is never a tool argument


def test_a_secrets_file_others_can_read_is_refused_at_start(team: RunningTeam, tmp_path: Path) -> None:
    path = secrets_file(tmp_path)
    os.chmod(path, 0o644)
    with pytest.raises(RuntimeError, match="readable by others"):
        serve(tmp_path / "srv", team, {"per_identity": {"file": str(path)}}, {})
