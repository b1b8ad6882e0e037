"""ADK tooling fit: plugins ADK builds without arguments, the scripted model across sessions, a bearer
token reaching the binding through ADK's own FastAPI app."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from adk_server_harness import AGENTS, TENANTS, function_responses, token, write_agents
from google.adk.agents import LlmAgent
from google.adk.apps import App
from google.adk.runners import InMemoryRunner
from google.genai import types
from scope_checks import foreign, returned_ids

from scopegate.adapters.adk import adk_search_tools
from scopegate.adapters.adk_guard import GuardPlugin, default_guard
from scopegate.adapters.adk_scope import ScopeBindingPlugin, ScopePolicy
from scopegate.backends.embedded import EmbeddedBackend
from scopegate.demo.corpus import generate_tickets, ticket_spec
from scopegate.errors import ConfigError
from scopegate.identity import BearerTokenMiddleware
from scopegate.testing import ScriptedLlm, call, final_text


def _text(events: list[Any]) -> list[str]:
    return [
        part.text
        for event in events
        for part in (event.content.parts if event.content and event.content.parts else [])
        if part.text and event.is_final_response()
    ]


async def _ask(runner: InMemoryRunner, user: str, session_id: str) -> list[Any]:
    message = types.Content(role="user", parts=[types.Part(text="help")])
    return [e async for e in runner.run_async(user_id=user, session_id=session_id, new_message=message)]


# -- ScriptedLlm across sessions ------------------------------------------------------------
def _scripted_runner(embedded: EmbeddedBackend, model: ScriptedLlm) -> InMemoryRunner:
    tools = adk_search_tools(embedded.spec, embedded, scope_policy=ScopePolicy.client_state())
    agent = LlmAgent(name="support", model=model, instruction="Use the tools.", tools=tools)
    return InMemoryRunner(agent=agent, app_name="scripted")


async def test_one_scripted_model_plays_the_whole_script_in_every_session(embedded: EmbeddedBackend) -> None:
    """Sessions one after another (``adk eval`` runs cases like this) and at once; before, the second got
    "(script finished)"."""
    model = ScriptedLlm([call("search_tickets", query="refund failed"), final_text("answered")])
    runner = _scripted_runner(embedded, model)
    service = runner.session_service
    first = await service.create_session(app_name="scripted", user_id="u", state={"tenant_id": "acme"})
    second = await service.create_session(app_name="scripted", user_id="u", state={"tenant_id": "globex"})
    assert _text(await _ask(runner, "u", first.id)) == ["answered"]
    assert _text(await _ask(runner, "u", second.id)) == ["answered"]
    many = [await service.create_session(app_name="scripted", user_id="u", state={"tenant_id": "acme"})
            for _ in range(6)]  # fmt: skip
    results = await asyncio.gather(*[_ask(runner, "u", s.id) for s in many])
    assert [_text(events) for events in results] == [["answered"]] * 6
    # A second question in a session continues the script; reset() starts it again.
    assert _text(await _ask(runner, "u", first.id)) == ["(script finished)"]
    model.reset()
    assert _text(await _ask(runner, "u", first.id)) == ["answered"]
    await runner.close()


async def test_per_invocation_scripts_restart_at_each_user_message(embedded: EmbeddedBackend) -> None:
    model = ScriptedLlm([call("search_tickets", query="refund"), final_text("ok")], per_invocation=True)
    runner = _scripted_runner(embedded, model)
    session = await runner.session_service.create_session(app_name="scripted", user_id="u", state={"tenant_id": "a"})
    for _ in range(3):
        assert _text(await _ask(runner, "u", session.id)) == ["ok"]
    assert len(model.seen_declarations) == 6 and [len(r) for r in model.seen_responses] == [0, 1] * 3
    await runner.close()


# -- plugins built by --extra_plugins (no arguments) ------------------------------------------
CONFIG = """version: 1
backends: {local: {type: embedded, path: ./data}}
search_tools:
  - {backend: local, name: search_tickets, description: Search tickets., index: tickets, id_field: ticket_id,
     tenant_field: tenant_id, text_fields: [subject, body], result_fields: [subject], snippet_field: body}
"""


def test_guard_plugin_without_arguments_builds_its_default_guard(tmp_path: Path) -> None:
    plugin = GuardPlugin(name="scopegate.adapters.adk_guard.GuardPlugin")  # what adk --extra_plugins does
    assert plugin.guard.cap is not None and plugin.guard.cap.policy.family_limit("search") == 4
    config = tmp_path / "sg.yaml"
    config.write_text(CONFIG + "guards:\n  cap:\n    families: {search: 2}\n", encoding="utf-8")
    guard = default_guard({"SCOPEGATE_CONFIG": str(config)})
    assert guard.cap is not None and guard.cap.policy.family_limit("search") == 2
    config.write_text(CONFIG + "guards:\n  enabled: false\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="disabled"):
        default_guard({"SCOPEGATE_CONFIG": str(config)})
    with pytest.raises(Exception):  # noqa: B017 - a config that does not load fails loudly
        default_guard({"SCOPEGATE_CONFIG": str(tmp_path / "missing.yaml")})


async def test_binding_plugin_without_a_source_refuses_every_run(
    embedded: EmbeddedBackend, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.delenv("SCOPEGATE_IDENTITY_SOURCE", raising=False)
    monkeypatch.delenv("SCOPEGATE_SCOPE_SIGNING_KEYS", raising=False)
    with caplog.at_level(logging.ERROR):
        plugin = ScopeBindingPlugin(name="scopegate.adapters.adk_scope.ScopeBindingPlugin")
    assert "no identity source" in caplog.text
    model = ScriptedLlm([call("search_tickets", query="refund"), final_text("done")])
    agent = LlmAgent(name="support", model=model, instruction=".", tools=adk_search_tools(embedded.spec, embedded))
    runner = InMemoryRunner(app=App(name="nosource", root_agent=agent, plugins=[plugin]))
    session = await runner.session_service.create_session(app_name="nosource", user_id="u", state={"tenant_id": "a"})
    responses = [
        dict(p.function_response.response or {})
        for e in await _ask(runner, "u", session.id)
        for p in (e.content.parts if e.content and e.content.parts else [])
        if p.function_response
    ]
    assert [r["error_code"] for r in responses] == ["NO_SCOPE"]
    await runner.close()


# -- a bearer token through ADK's FastAPI app ---------------------------------------------------
@pytest.fixture
async def fast_api_client(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[httpx.AsyncClient]:
    from google.adk.cli.fast_api import get_fast_api_app

    tickets = list(generate_tickets(per_tenant=15, tenants=TENANTS))
    EmbeddedBackend(ticket_spec(), tmp_path / "index").ingest_sync(tickets, batch_size=500)
    agents_dir, support = write_agents(tmp_path, {"token_search": AGENTS["token_search"]})
    monkeypatch.syspath_prepend(str(support))
    monkeypatch.syspath_prepend(str(agents_dir))
    monkeypatch.setenv("SG_TEST_INDEX", str(tmp_path / "index"))
    app = get_fast_api_app(
        agents_dir=str(agents_dir), web=False, session_service_uri="memory://", artifact_service_uri="memory://",
        use_local_storage=False,
    )  # fmt: skip
    app.add_middleware(BearerTokenMiddleware)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver", timeout=30.0) as client:
        client.owner = {t["ticket_id"]: t["tenant_id"] for t in tickets}  # type: ignore[attr-defined]
        yield client


async def test_bearer_token_header_reaches_the_binding(fast_api_client: httpx.AsyncClient) -> None:
    client, owner = fast_api_client, fast_api_client.owner  # type: ignore[attr-defined]
    user = "user-initech"
    created = await client.post(f"/apps/token_search/users/{user}/sessions", json={"state": {"tenant_id": "acme"}})
    session = created.json()["id"]
    message = {"role": "user", "parts": [{"text": "help"}]}
    body = {"app_name": "token_search", "user_id": user, "session_id": session, "new_message": message,
            "state_delta": {"tenant_id": "acme"}}  # fmt: skip
    good = await client.post("/run", json=body, headers={"Authorization": f"Bearer {token('initech')}"})
    responses = function_responses(good.json())
    ids = returned_ids(responses)
    assert ids and foreign(ids, owner, "initech") == []
    for headers in ({}, {"Authorization": f"Bearer {token('acme')}"}, {"Authorization": "Bearer nope"}):
        refused = function_responses((await client.post("/run", json=body, headers=headers)).json())
        assert [r["error_code"] for r in refused] == ["NO_SCOPE", "NO_SCOPE"], headers
