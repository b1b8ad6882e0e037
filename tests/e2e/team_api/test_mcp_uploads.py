"""Issue 37, a team's own API: the same upload over MCP, the file being a resource of the caller.

``scopegate serve`` (HTTP, token table, DEBUG logging) with ``server.uploads``: each user's files
live under ``<folder>/<tenant>/<user>/`` and are that user's MCP resources. The official client
lists its resources, and calls OpenAI's ``createFile`` naming one (by URI or by name); the local
API receives the bytes as the multipart ``file`` part. Another user can neither see nor send
that file, and the bytes never reach a tool result or the server's log.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp_harness import ServerProcess, http_client, opaque_token, start_http_server, write_config, write_token_table
from team_service import RunningTeam, running_team_service

API_KEY = "sk-team-mcp-0d4e2c7b19"
CONTENT = b'{"custom_id": "r-1", "marker": "RESOURCE-BYTES-5a7e"}\n' * 10
USERS = {"ana": opaque_token("team", "ana"), "ben": opaque_token("team", "ben")}


@pytest.fixture(scope="module")
def team() -> Iterator[RunningTeam]:
    with running_team_service({API_KEY: "team"}) as svc:
        yield svc


@pytest.fixture
def server(team: RunningTeam, tmp_path: Path, shared: Callable[..., Path]) -> Iterator[ServerProcess]:
    uploads = tmp_path / "uploads"
    (uploads / "team" / "ana").mkdir(parents=True)
    (uploads / "team" / "ana" / "batch.jsonl").write_bytes(CONTENT)
    (uploads / "team" / "ben").mkdir(parents=True)
    table = write_token_table(
        tmp_path / "tokens.yaml", [{"token": tok, "tenant": "team", "user": user} for user, tok in USERS.items()]
    )
    config = write_config(
        tmp_path / "uploads.yaml",
        server={"name": "uploads-mcp", "uploads": {"folder": str(uploads)}},
        openapi=[
            {
                "name": "files",
                "spec": str(shared("openapi", "openai-openapi.yaml")),
                "base_url": team.base_url,
                "allow": ["createFile"],
                "credentials": {"ApiKeyAuth": {"env": "TEAM_OPENAI_KEY"}},
                "policies": {"createFile": {"confirm": False}},
                "uploads": {"max_file_bytes": 1_000_000},
            }
        ],
        scope={"state_keys": {"tenant": "tenant_id", "user": "user_id"}},
        auth={"token_table": str(table)},
    )
    proc = start_http_server(config, {"TEAM_OPENAI_KEY": API_KEY}, log_dir=tmp_path, args=("--log-level", "debug"))
    try:
        yield proc
    finally:
        proc.stop()


async def session_of(server: ServerProcess, user: str, calls: list[dict[str, Any]]) -> dict[str, Any]:
    async with http_client(server.url, USERS[user]) as client:
        resources = (await client.list_resources()).resources
        results = []
        for args in calls:
            result = await client.call_tool("createFile", args)
            data = result.structured_content or {}
            assert result.is_error == (data.get("status") == "error"), data
            results.append(data)
        read = None
        if resources:
            read = (await client.read_resource(resources[0].uri)).contents[0]
    return {"resources": resources, "results": results, "read": read}


async def test_mcp_upload_of_the_callers_resource(server: ServerProcess, team: RunningTeam) -> None:
    team.state.clear()
    ana = await session_of(
        server,
        "ana",
        [
            {"file": "scopegate://uploads/batch.jsonl", "purpose": "batch"},
            {"file": "batch.jsonl", "purpose": "user_data"},
        ],
    )
    assert [(r.name, str(r.uri), r.size) for r in ana["resources"]] == [
        ("batch.jsonl", "scopegate://uploads/batch.jsonl", len(CONTENT))
    ]
    assert ana["read"].blob  # the client can read its own resource
    by_uri, by_name = ana["results"]
    assert by_uri["status"] == "ok" and by_name["status"] == "ok", ana["results"]
    first, second = team.state.requests()
    for seen, purpose in ((first, b"batch"), (second, b"user_data")):
        file_part = next(p for p in seen.parts if p["name"] == "file")
        assert file_part["filename"] == "batch.jsonl" and file_part["data"] == CONTENT
        assert [p["data"] for p in seen.parts if p["name"] == "purpose"] == [purpose]
        assert seen.headers["authorization"] == f"Bearer {API_KEY}"

    # Ben cannot see Ana's file, nor upload it by name, URI or a path around his folder.
    team.state.clear()
    ben = await session_of(
        server,
        "ben",
        [
            {"file": "batch.jsonl", "purpose": "batch"},
            {"file": "scopegate://uploads/batch.jsonl", "purpose": "batch"},
            {"file": "../ana/batch.jsonl", "purpose": "batch"},
        ],
    )
    assert ben["resources"] == []
    assert [r["error_code"] for r in ben["results"]] == ["FILE_NOT_FOUND"] * 3, ben["results"]
    assert ben["results"][0]["available"] == []
    assert team.state.requests() == []

    shown = json.dumps(ana["results"] + ben["results"]) + server.stderr()
    assert "RESOURCE-BYTES" not in shown and API_KEY not in shown
