"""The same config in ADK: the OpenAPI tools get the same per-user token as over MCP.

A real ``InMemoryRunner`` with the config's tools (``app.adk_tools()``), a
scripted offline model, the signed-in user's Keycloak token presented for the
run (``temp:`` state, never persisted). With a scope binding
(``ScopeBindingPlugin`` + ``TokenSource`` on the server's own verifier) the
session's identity *is* the token's, and the binding keeps the token for the
tools; with trusted session state the exchanger checks the token belongs to the
session's account. Either way the orders API gets an exchanged token, never the
user's own.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from google.adk.agents import LlmAgent
from google.adk.apps import App
from google.adk.runners import InMemoryRunner
from google.genai import types
from idp_harness import IdpWorld

from scopegate.adapters.adk_scope import TOKEN_KEY, ScopeBindingPlugin
from scopegate.config import build_app, load_config
from scopegate.identity import TokenSource
from scopegate.testing.scripted_llm import ScriptedLlm, call, final_text, function_responses

pytestmark = pytest.mark.keycloak

APP = "idp_adk"
READ = ["tickets:read", "orders:read"]
ALICE = {"tenant_id": "acme", "user_id": "cust_alice"}


def with_scope_source(idp_world: IdpWorld, tmp_path: Path, source: str) -> Path:
    data = yaml.safe_load(idp_world.config.read_text("utf-8"))
    data["scope"]["source"] = source
    path = tmp_path / f"adk-{source}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), "utf-8")
    return path


async def run_once(
    config: Path, state: dict[str, Any], token: str | None, order: str, *, bind: bool
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    app = await build_app(load_config(config))
    try:
        assert app.identity is not None and app.identity.verifier is not None
        plugins = [ScopeBindingPlugin(TokenSource(app.identity.verifier.identity))] if bind else []
        model = ScriptedLlm([call("getOrder", orderId=order), final_text("done")])
        agent = LlmAgent(name="orders", model=model, instruction="Help with orders.", tools=app.adk_tools())
        runner = InMemoryRunner(app=App(name=APP, root_agent=agent, plugins=plugins))
        session = await runner.session_service.create_session(app_name=APP, user_id="u", state=state)
        delta = {TOKEN_KEY: token} if token is not None else None
        message = types.Content(role="user", parts=[types.Part(text=f"Where is {order}?")])
        events = [
            e
            async for e in runner.run_async(user_id="u", session_id=session.id, new_message=message, state_delta=delta)
        ]
        ((name, result),) = function_responses(events)
        assert name == "getOrder"
        stored = await runner.session_service.get_session(app_name=APP, user_id="u", session_id=session.id)
        assert stored is not None and TOKEN_KEY not in stored.state  # temp: is never persisted
        return result, [d for turn in model.seen_declarations for d in turn]
    finally:
        await app.aclose()


async def test_a_bound_identity_gets_the_same_exchanged_token(idp_world: IdpWorld, tmp_path: Path) -> None:
    config = with_scope_source(idp_world, tmp_path, "binding")
    token = idp_world.realm.password_token("alice", scopes=READ)
    result, declarations = await run_once(config, {}, token, "ord_1001", bind=True)
    assert result["status"] == "ok" and result["untrusted"]["data"]["customer_id"] == "cust_alice"
    (sent,) = idp_world.orders.state.recorded()
    downstream = sent.headers["authorization"].removeprefix("Bearer ")
    assert downstream != token and idp_world.realm.claims(downstream)["aud"] == "orders-api"
    assert all(TOKEN_KEY not in str(d) for d in declarations)


async def test_a_bound_identity_cannot_read_a_foreign_order(idp_world: IdpWorld, tmp_path: Path) -> None:
    config = with_scope_source(idp_world, tmp_path, "binding")
    token = idp_world.realm.password_token("alice", scopes=READ)
    # Session state claiming to be bob changes nothing: the binding's identity is the token's.
    result, _ = await run_once(config, {"tenant_id": "globex", "user_id": "cust_bob"}, token, "ord_2001", bind=True)
    assert result["error_code"] == "NOT_FOUND"


async def test_without_a_token_the_binding_refuses_and_nothing_is_sent(idp_world: IdpWorld, tmp_path: Path) -> None:
    config = with_scope_source(idp_world, tmp_path, "binding")
    result, _ = await run_once(config, ALICE, None, "ord_1001", bind=True)
    assert result["error_code"] == "NO_SCOPE"
    assert idp_world.orders.state.total_hits == 0


async def test_trusted_state_with_another_users_token_is_refused(idp_world: IdpWorld, tmp_path: Path) -> None:
    """Session state says alice (trusted: only the server writes it); the run carries bob's valid token."""
    config = with_scope_source(idp_world, tmp_path, "state")
    bobs = idp_world.realm.password_token("bob", scopes=READ)
    result, _ = await run_once(config, ALICE, bobs, "ord_1001", bind=False)
    assert result["error_code"] == "NOT_AUTHORIZED" and "does not belong" in result["message"]
    assert idp_world.orders.state.total_hits == 0
    mine, _ = await run_once(config, ALICE, idp_world.realm.password_token("alice", scopes=READ), "ord_1001",
                             bind=False)  # fmt: skip
    assert mine["status"] == "ok"


@pytest.mark.parametrize("token", [None, "forged.not.jwt"])
async def test_trusted_state_without_a_valid_token_sends_nothing(
    idp_world: IdpWorld, tmp_path: Path, token: str | None
) -> None:
    config = with_scope_source(idp_world, tmp_path, "state")
    result, _ = await run_once(config, ALICE, token, "ord_1001", bind=False)
    assert result["error_code"] == "NOT_AUTHORIZED"
    assert idp_world.orders.state.total_hits == 0
