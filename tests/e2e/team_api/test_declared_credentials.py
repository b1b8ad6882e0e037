"""Issue 37, a team's own API: a credential for a spec that declares no security schemes.

The pinned spec stays as the vendor wrote it; the config says how the key is sent
(``security_schemes``) and where it comes from (``credentials``). The real ADK runner drives
the config's tools with a scripted model against a local API that checks the key. The API
sees the key; the model never does (not in the declarations, the results or an error the API
echoes it in), and neither does the call log.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from google.adk.agents import LlmAgent
from google.adk.runners import InMemoryRunner
from team_service import TEAM_SPEC, RunningTeam, running_team_service

from scopegate.config import build_app, load_config
from scopegate.context import CallContext
from scopegate.demo.orders_demo import send, user_text
from scopegate.errors import ConfigError
from scopegate.testing.scripted_llm import ScriptedLlm, Turn, final_text

TEAM_KEY = "team-key-7c1e94b2d05f"
APP = "team_e2e"
STATE = {"tenant_id": "team", "user_id": "ana"}


@pytest.fixture(scope="module")
def team() -> Iterator[RunningTeam]:
    keys = {TEAM_KEY: "team", "svc-user:pa55-9d2e1f": "team-basic"}
    with running_team_service(keys) as svc:
        yield svc


def write_setup(folder: Path, team: RunningTeam, schemes: dict[str, Any], credentials: dict[str, Any]) -> Path:
    spec = folder / "team-openapi.json"
    spec.write_text(json.dumps(TEAM_SPEC), "utf-8")
    assert "securitySchemes" not in spec.read_text("utf-8")
    config = {
        "version": 1,
        "openapi": [
            {
                "name": "team",
                "spec": str(spec),
                "base_url": team.base_url,
                "allow": ["getWidget"],
                "security_schemes": schemes,
                "credentials": credentials,
            }
        ],
        "scope": {"state_keys": {"tenant": "tenant_id", "user": "user_id"}, "source": "state"},
        "guards": {"log": {"path": str(folder / "calls.jsonl")}},
    }
    path = folder / "team.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), "utf-8")
    return path


async def test_adk_agent_reaches_the_api_with_the_declared_key(
    team: RunningTeam, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TEAM_KEY", TEAM_KEY)
    config = write_setup(
        tmp_path, team, {"teamKey": {"type": "api_key", "header": "X-Team-Key"}}, {"teamKey": {"env": "TEAM_KEY"}}
    )
    app = await build_app(load_config(config))

    def after(responses: list[tuple[str, dict[str, Any]]]) -> Turn:
        return final_text(json.dumps(responses[0][1].get("untrusted", {}).get("data", {}).get("account")))

    model = ScriptedLlm([Turn(calls=(("getWidget", {"id": "w-1"}),)), after])
    agent = LlmAgent(name="team_assistant", model=model, instruction="Help.", tools=app.adk_tools())
    runner = InMemoryRunner(agent=agent, app_name=APP)
    lines: list[str] = []
    team.state.clear()
    try:
        session = await runner.session_service.create_session(app_name=APP, user_id="ana", state=STATE)
        await send(runner, session, user_text("What is widget w-1?"), lines.append)
    finally:
        await runner.close()
        await app.aclose()
    (seen,) = team.state.requests()
    assert seen.headers["x-team-key"] == TEAM_KEY  # the API sees the key, in the declared header
    assert lines[-1].endswith('"team"')  # ...and answers for the team's account

    declared = model.seen_declarations[0][0]["parameters_json_schema"]
    assert set(declared["properties"]) == {"id"}  # the key's header parameter is the credential, not an argument
    everything = json.dumps(model.seen_declarations) + json.dumps(model.seen_responses) + "\n".join(lines)
    assert TEAM_KEY not in everything
    log = (tmp_path / "calls.jsonl").read_text("utf-8")
    assert "getWidget" in log and TEAM_KEY not in log


async def test_a_key_the_api_echoes_never_reaches_the_model(
    team: RunningTeam, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = write_setup(
        tmp_path, team, {"teamKey": {"type": "api_key", "query": "api_key"}}, {"teamKey": {"env": "TEAM_KEY"}}
    )
    monkeypatch.setenv("TEAM_KEY", TEAM_KEY)
    app = await build_app(load_config(config))
    try:
        echoed = (await app.tool("getWidget").run({"id": "echo"}, CallContext(state=STATE))).result
    finally:
        await app.aclose()
    assert echoed["status"] == "ok", echoed
    assert echoed["untrusted"]["data"]["debug"] == "served for credential [redacted]"

    wrong = "team-key-wrong-0a9b8c7d"
    monkeypatch.setenv("TEAM_KEY", wrong)
    app = await build_app(load_config(config))
    try:
        refused = (await app.tool("getWidget").run({"id": "w-2"}, CallContext(state=STATE))).result
    finally:
        await app.aclose()
    assert refused["status"] == "error" and refused["error_code"] == "NOT_AUTHORIZED", refused
    assert wrong not in json.dumps(refused)
    log = (tmp_path / "calls.jsonl").read_text("utf-8")
    assert TEAM_KEY not in log and wrong not in log


@pytest.mark.parametrize(
    ("scheme", "credential", "where"),
    [
        ({"type": "api_key", "header": "X-Team-Key"}, {"env": "TEAM_KEY"}, "header"),
        ({"type": "api_key", "query": "api_key"}, {"env": "TEAM_KEY"}, "query"),
        ({"type": "api_key", "cookie": "team_session"}, {"env": "TEAM_KEY"}, "cookie"),
        ({"type": "bearer"}, {"env": "TEAM_KEY"}, "bearer"),
        ({"type": "basic"}, {"username_env": "TEAM_USER", "password_env": "TEAM_PASSWORD"}, "basic"),
    ],
)
async def test_every_declared_placement_arrives(
    team: RunningTeam,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    scheme: dict[str, Any],
    credential: dict[str, Any],
    where: str,
) -> None:
    monkeypatch.setenv("TEAM_KEY", TEAM_KEY)
    monkeypatch.setenv("TEAM_USER", "svc-user")
    monkeypatch.setenv("TEAM_PASSWORD", "pa55-9d2e1f")
    config = write_setup(tmp_path, team, {"k": scheme}, {"k": credential})
    app = await build_app(load_config(config))
    team.state.clear()
    try:
        result = (await app.tool("getWidget").run({"id": "w-3"}, CallContext(state=STATE))).result
    finally:
        await app.aclose()
    assert result["status"] == "ok", result
    (seen,) = team.state.requests()
    if where == "header":
        assert seen.headers["x-team-key"] == TEAM_KEY
    elif where == "query":
        assert seen.query["api_key"] == [TEAM_KEY]
    elif where == "cookie":
        assert seen.cookies["team_session"] == TEAM_KEY
    elif where == "bearer":
        assert seen.headers["authorization"] == f"Bearer {TEAM_KEY}"
    else:
        assert seen.credential() == "svc-user:pa55-9d2e1f"
    assert TEAM_KEY not in json.dumps(result) and "pa55-9d2e1f" not in json.dumps(result)


async def test_without_the_declaration_the_key_cannot_be_attached(
    team: RunningTeam, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: a credential for a scheme the spec does not define is refused at start-up."""
    monkeypatch.setenv("TEAM_KEY", TEAM_KEY)
    config = write_setup(tmp_path, team, {}, {"teamKey": {"env": "TEAM_KEY"}})
    with pytest.raises(ConfigError, match="security schemes the spec does not define"):
        await build_app(load_config(config))
