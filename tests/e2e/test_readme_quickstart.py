"""The README as a new user runs it: its agent through the real ADK Runner (with the offline scripted model
in place of Gemini) and its config served by ``scopegate serve`` over stdio to the official MCP client.
Alice (acme) sees acme's tickets only, whatever the client writes into session state."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from google.adk.runners import InMemoryRunner
from google.genai import types
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from scopegate.testing import ScriptedLlm, call, final_text, function_responses

_spec = importlib.util.spec_from_file_location(
    "readme_examples", Path(__file__).resolve().parents[1] / "unit" / "test_readme_examples.py"
)
assert _spec is not None and _spec.loader is not None
readme = importlib.util.module_from_spec(_spec)
sys.modules["readme_examples"] = readme  # dataclasses look their module up
_spec.loader.exec_module(readme)

SERVE = "SCOPEGATE_TENANT=acme scopegate serve scopegate.yaml"


async def run_as(namespace: dict[str, Any], user: str, state_delta: dict[str, Any] | None = None) -> list[Any]:
    namespace["agent"].model = ScriptedLlm(
        [call("search_tickets", query="refund E4012"), call("get_tickets", id="T-2"), final_text("done")]
    )
    runner = InMemoryRunner(app=namespace["app"])
    session = await runner.session_service.create_session(app_name="support", user_id=user)
    message = types.Content(role="user", parts=[types.Part(text="Why did my refund fail?")])
    events = [
        event
        async for event in runner.run_async(
            user_id=user, session_id=session.id, new_message=message, state_delta=state_delta
        )
    ]
    return [response for _, response in function_responses(events)]


async def test_the_readme_agent_binds_scope_server_side(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    namespace = readme.run_readme(tmp_path)
    monkeypatch.chdir(tmp_path)  # the README's index path is relative, as in a user's script
    # A client that writes a tenant into session state changes nothing: the binding decides.
    search, fetch = await run_as(namespace, "alice@acme.test", state_delta={"tenant_id": "globex"})
    assert [hit["id"] for hit in search["results"]] == ["T-1"]
    assert fetch["error_code"] == "NOT_FOUND"  # globex's ticket, asked for by its id
    unknown, _ = await run_as(namespace, "mallory@evil.test", state_delta={"tenant_id": "acme"})
    assert unknown["error_code"] == "NO_SCOPE"


async def test_the_readme_config_served_over_mcp_stdio(tmp_path: Path) -> None:
    assert SERVE in readme.README.read_text("utf-8")
    readme.run_readme(tmp_path)
    server = StdioServerParameters(
        command=str(Path(sys.executable).parent / "scopegate"),
        args=["serve", "scopegate.yaml"],
        env={**os.environ, "SCOPEGATE_TENANT": "acme"},
        cwd=str(tmp_path),
    )
    async with Client(server) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert names == {"search_tickets", "get_tickets"}
        found = (await client.call_tool("search_tickets", {"query": "refund E4012"})).structured_content
        assert [hit["id"] for hit in found["results"]] == ["T-1"]
        theirs = (await client.call_tool("get_tickets", {"id": "T-2"})).structured_content
        assert theirs["error_code"] == "NOT_FOUND"
