"""The trusted scope binding in a real ADK Runner: plugin and callback forms, tokens, signed state, defaults.

The client-writable paths ADK offers (state at session creation, ``state_delta``
on a run, ``temp:`` keys, a JSON value under the binding's own key) are all
tried; with a binding or signing on, tools see only the verified identity.
"""

from __future__ import annotations

import asyncio
import logging
import warnings
from collections.abc import Iterator
from typing import Any

import pytest
from google.adk.agents import LlmAgent
from google.adk.apps import App
from google.adk.runners import InMemoryRunner, Runner
from google.genai import types
from scope_checks import foreign, returned_ids

from scopegate.adapters.adk import AdkTool, adk_search_tools
from scopegate.adapters.adk_openapi import OpenApiToolset
from scopegate.adapters.adk_scope import (
    BOUND_KEY,
    TOKEN_KEY,
    ScopeBinding,
    ScopeBindingPlugin,
    ScopePolicy,
    ScopeTrustWarning,
    create_signed_session,
    reset_warnings,
)
from scopegate.backends.embedded import EmbeddedBackend
from scopegate.demo.orders_demo import confirmation_answer, confirmation_requests, orders_settings, user_text
from scopegate.errors import ConfigError
from scopegate.examples.orders.data import ALICE, BOB
from scopegate.examples.orders.server import RunningService, running_orders_service
from scopegate.identity import SIGNED_SCOPE_KEY, Identity, KeyRing, SigningKey, TokenSource
from scopegate.search.tools import SearchTool
from scopegate.testing.scripted_llm import ScriptedLlm, Turn, call, final_text

APP = "bind"
DIRECTORY = {f"user-{t}": Identity(t, f"user-{t}") for t in ("acme", "globex", "initech", "umbrella")}
FORGED = {"tenant_id": "globex", "temp:tenant_id": "globex", "group_ids": ["x"], "user_id": "user-globex"}


def search_script() -> list[Turn]:
    return [
        call("search_tickets", query="refund failed"),
        call("get_ticket", id="GLO-00001"),
        final_text("done"),
    ]


def _responses(events: list[Any]) -> list[dict[str, Any]]:
    return [
        dict(part.function_response.response or {})
        for event in events
        for part in (event.content.parts if event.content and event.content.parts else [])
        if part.function_response is not None
    ]


async def _send(
    runner: Runner, user: str, session_id: str, message: types.Content, state_delta: dict[str, Any] | None
) -> list[Any]:
    stream = runner.run_async(user_id=user, session_id=session_id, new_message=message, state_delta=state_delta)
    return [e async for e in stream]


async def _run(runner: Runner, user: str, session_id: str, *, state_delta: dict[str, Any] | None = None) -> list[Any]:
    return await _send(runner, user, session_id, user_text("help"), state_delta)


@pytest.fixture
def owner(tickets: list[dict[str, Any]]) -> dict[str, str]:
    return {t["ticket_id"]: t["tenant_id"] for t in tickets}


def _search_runner(backend: EmbeddedBackend, plugins: list[Any], **agent_kwargs: Any) -> InMemoryRunner:
    agent = LlmAgent(
        name="support",
        model=ScriptedLlm(search_script(), per_invocation=True),
        instruction="Use the tools.",
        tools=adk_search_tools(backend.spec, backend, scope_policy=agent_kwargs.pop("scope_policy", None)),
        **agent_kwargs,
    )
    return InMemoryRunner(app=App(name=APP, root_agent=agent, plugins=plugins))


async def test_plugin_binding_ignores_every_client_write(embedded: EmbeddedBackend, owner: dict[str, str]) -> None:
    runner = _search_runner(embedded, [ScopeBindingPlugin(DIRECTORY)], scope_policy=ScopePolicy.binding())
    forged_marker = {"identity": {"tenant": "globex"}, "session_id": "x"}
    session = await runner.session_service.create_session(
        app_name=APP, user_id="user-acme", state={**FORGED, BOUND_KEY: forged_marker}
    )
    assert BOUND_KEY not in session.state  # ADK drops temp: keys at creation
    attempts = [None, FORGED, {BOUND_KEY: forged_marker}, {**FORGED, BOUND_KEY: forged_marker}]
    for delta in attempts:
        responses = _responses(await _run(runner, "user-acme", session.id, state_delta=delta))
        ids = returned_ids(responses)
        assert ids and foreign(ids, owner, "acme") == []
        assert responses[1]["error_code"] == "NOT_FOUND"  # another tenant's ticket by id
    stored = await runner.session_service.get_session(app_name=APP, user_id="user-acme", session_id=session.id)
    assert stored is not None and BOUND_KEY not in stored.state  # never persisted
    await runner.close()


async def test_unknown_user_gets_no_scope_whatever_state_says(embedded: EmbeddedBackend) -> None:
    runner = _search_runner(embedded, [ScopeBindingPlugin(DIRECTORY)])
    session = await runner.session_service.create_session(app_name=APP, user_id="mallory", state=FORGED)
    responses = _responses(await _run(runner, "mallory", session.id, state_delta=FORGED))
    assert [r["error_code"] for r in responses] == ["NO_SCOPE", "NO_SCOPE"]
    await runner.close()


async def test_binding_policy_without_a_binding_refuses(
    embedded: EmbeddedBackend, caplog: pytest.LogCaptureFixture
) -> None:
    runner = _search_runner(embedded, [], scope_policy=ScopePolicy.binding())
    session = await runner.session_service.create_session(app_name=APP, user_id="user-acme", state=FORGED)
    reset_warnings()
    with caplog.at_level(logging.ERROR, logger="scopegate.adapters.adk_scope"):
        responses = _responses(await _run(runner, "user-acme", session.id))
    assert [r["error_code"] for r in responses] == ["NO_SCOPE", "NO_SCOPE"]
    assert "none ran for this invocation" in caplog.text
    await runner.close()


async def test_callback_form_binds_each_invocation(embedded: EmbeddedBackend, owner: dict[str, str]) -> None:
    binding = ScopeBinding(DIRECTORY)
    runner = _search_runner(embedded, [], before_agent_callback=binding.before_agent_callback)
    session = await runner.session_service.create_session(app_name=APP, user_id="user-initech", state=FORGED)
    for _ in range(2):
        ids = returned_ids(_responses(await _run(runner, "user-initech", session.id, state_delta=FORGED)))
        assert ids and foreign(ids, owner, "initech") == []
    await runner.close()


def _tokens() -> TokenSource:
    table = {"tok-acme-9f2c": Identity("acme", "user-acme"), "tok-globex-77aa": Identity("globex", "user-globex")}
    return TokenSource(table.get, require_user_match=True)


async def test_token_presented_for_one_run(embedded: EmbeddedBackend, owner: dict[str, str]) -> None:
    binding = ScopeBinding(_tokens(), passthrough=(TOKEN_KEY, "locale"))
    runner = _search_runner(embedded, [ScopeBindingPlugin(binding)])
    session = await runner.session_service.create_session(app_name=APP, user_id="user-acme")
    good = _responses(await _run(runner, "user-acme", session.id, state_delta={TOKEN_KEY: "tok-acme-9f2c", **FORGED}))
    ids = returned_ids(good)
    assert ids and foreign(ids, owner, "acme") == []
    # A valid token of another user, a made-up token, no token: no scope.
    for delta in ({TOKEN_KEY: "tok-globex-77aa"}, {TOKEN_KEY: "tok-acme-9f2c0"}, FORGED):
        refused = _responses(await _run(runner, "user-acme", session.id, state_delta=delta))
        assert [r["error_code"] for r in refused] == ["NO_SCOPE", "NO_SCOPE"], delta
    stored = await runner.session_service.get_session(app_name=APP, user_id="user-acme", session_id=session.id)
    assert stored is not None and TOKEN_KEY not in stored.state
    await runner.close()


async def test_signed_state(embedded: EmbeddedBackend, owner: dict[str, str]) -> None:
    ring = KeyRing([SigningKey("k1", b"s" * 32)])
    runner = _search_runner(embedded, [], scope_policy=ScopePolicy.signed(ring))
    service = runner.session_service
    mine = await create_signed_session(service, ring, Identity("umbrella"), app_name=APP, user_id="u1")
    theirs = await create_signed_session(service, ring, Identity("globex"), app_name=APP, user_id="u2")
    ids = returned_ids(_responses(await _run(runner, "u1", mine.id, state_delta=FORGED)))
    assert ids and foreign(ids, owner, "umbrella") == []
    # Copy globex's envelope into my session, alter my own, or drop it: refused.
    altered = {**mine.state[SIGNED_SCOPE_KEY], "scope": {"tenant": "globex", "user": None, "groups": []}}
    for delta in ({SIGNED_SCOPE_KEY: theirs.state[SIGNED_SCOPE_KEY]}, {SIGNED_SCOPE_KEY: altered},
                  {SIGNED_SCOPE_KEY: None}):  # fmt: skip
        refused = _responses(await _run(runner, "u1", mine.id, state_delta=delta))
        assert [r["error_code"] for r in refused] == ["NO_SCOPE", "NO_SCOPE"]
    await runner.close()


async def test_signed_state_through_the_plugin(embedded: EmbeddedBackend, owner: dict[str, str]) -> None:
    """The plugin's SignedStateSource verifies once per invocation; a bad envelope binds no identity."""
    from scopegate.identity import SignedStateSource

    ring = KeyRing([SigningKey("k1", b"p" * 32)])
    runner = _search_runner(embedded, [ScopeBindingPlugin(SignedStateSource(ring))])
    mine = await create_signed_session(runner.session_service, ring, Identity("hooli"), app_name=APP, user_id="u1")
    ids = returned_ids(_responses(await _run(runner, "u1", mine.id, state_delta=FORGED)))
    assert ids and foreign(ids, owner, "hooli") == []
    copied = await runner.session_service.create_session(
        app_name=APP, user_id="u1", state={SIGNED_SCOPE_KEY: mine.state[SIGNED_SCOPE_KEY]}
    )
    refused = _responses(await _run(runner, "u1", copied.id))
    assert [r["error_code"] for r in refused] == ["NO_SCOPE", "NO_SCOPE"]
    await runner.close()


# -- confirmation flow with a binding ----------------------------------------------------------
@pytest.fixture(scope="module")
def orders() -> Iterator[RunningService]:
    with running_orders_service() as svc:
        yield svc


ORDERS_DIRECTORY = {ALICE: Identity("shop", ALICE), BOB: Identity("shop", BOB)}
ADDRESS = {"name": "Alice", "line1": "1 Rue X", "city": "Paris", "postal_code": "75001", "country": "FR"}


@pytest.mark.parametrize("form", ["plugin", "callback"])
async def test_confirmation_flow_keeps_the_bound_user(orders: RunningService, form: str) -> None:
    orders.state.reset()
    binding = ScopeBinding(ORDERS_DIRECTORY)
    toolset = OpenApiToolset(orders_settings(orders.base_url), scope_policy=ScopePolicy.binding())
    model = ScriptedLlm(
        [
            Turn(calls=(("updateShippingAddress", {"orderId": "ord_1001", **ADDRESS}),)),
            final_text("changed"),
            call("getOrder", orderId="ord_2001"),
            final_text("refused"),
        ]
    )
    kwargs: dict[str, Any] = {"before_agent_callback": binding.before_agent_callback} if form == "callback" else {}
    agent = LlmAgent(name="orders", model=model, instruction="Help.", tools=[toolset], **kwargs)
    plugins = [ScopeBindingPlugin(ORDERS_DIRECTORY)] if form == "plugin" else []
    runner = InMemoryRunner(app=App(name="orders_bind", root_agent=agent, plugins=plugins))
    bob_state = {"user_id": BOB, "temp:user_id": BOB}
    session = await runner.session_service.create_session(app_name="orders_bind", user_id=ALICE, state=bob_state)
    asked = await _send(runner, ALICE, session.id, user_text("ship it"), bob_state)
    (request,) = confirmation_requests(asked)
    assert orders.state.hits("updateShippingAddress") == 0
    done = await _send(runner, ALICE, session.id, confirmation_answer(request, True), bob_state)
    result = _responses(done)[-1]
    assert result["status"] == "ok" and result["untrusted"]["data"]["customer_id"] == ALICE
    assert orders.state.hits("updateShippingAddress") == 1
    foreign_order = _responses(await _run(runner, ALICE, session.id, state_delta=bob_state))
    assert foreign_order[-1]["error_code"] == "NOT_FOUND"  # Bob's order, even with Bob in the state
    await runner.close()
    await toolset.close()


# -- loud defaults ------------------------------------------------------------------------------
async def test_undeclared_client_state_warns_once_naming_the_keys(
    embedded: EmbeddedBackend, caplog: pytest.LogCaptureFixture
) -> None:
    reset_warnings()
    runner = _search_runner(embedded, [], scope_policy=ScopePolicy("state", declared=False))
    session = await runner.session_service.create_session(app_name=APP, user_id="u", state={"tenant_id": "acme"})
    with warnings.catch_warnings(record=True) as caught, caplog.at_level(logging.WARNING):
        warnings.simplefilter("always")
        await _run(runner, "u", session.id)
        await _run(runner, "u", session.id)
    trust = [w for w in caught if issubclass(w.category, ScopeTrustWarning)]
    assert len(trust) == 1
    text = str(trust[0].message)
    assert "client-writable" in text and "tenant_id" in text and "docs/deployment-adk.md" in text
    assert caplog.text.count("client-writable ADK session state") == 1
    await runner.close()


async def test_bound_or_declared_runs_do_not_warn(embedded: EmbeddedBackend) -> None:
    reset_warnings()
    bound = _search_runner(embedded, [ScopeBindingPlugin(DIRECTORY)], scope_policy=ScopePolicy("state", declared=False))
    declared = _search_runner(embedded, [], scope_policy=ScopePolicy.client_state())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for runner, user in ((bound, "user-acme"), (declared, "u")):
            session = await runner.session_service.create_session(app_name=APP, user_id=user, state={"tenant_id": "a"})
            await _run(runner, user, session.id)
            await runner.close()
    assert not [w for w in caught if issubclass(w.category, ScopeTrustWarning)]


def test_strict_mode_refuses_client_state_at_construction(embedded: EmbeddedBackend) -> None:
    strict = ScopePolicy.from_env({"SCOPEGATE_SCOPE_STRICT": "1"})
    with pytest.raises(ConfigError, match=r"strict.*tenant_id"):
        AdkTool(SearchTool(embedded.spec, embedded), scope_policy=strict)
    with pytest.raises(ConfigError):
        AdkTool(SearchTool(embedded.spec, embedded), scope_policy=ScopePolicy.client_state(strict=True))
    # Declared bindings and signing are fine in strict mode.
    AdkTool(SearchTool(embedded.spec, embedded), scope_policy=ScopePolicy.from_env(
        {"SCOPEGATE_SCOPE_STRICT": "1", "SCOPEGATE_SCOPE_SOURCE": "binding"}))  # fmt: skip
    secret = KeyRing.new_secret()
    signed = ScopePolicy.from_env({"SCOPEGATE_SCOPE_STRICT": "1", "SCOPEGATE_SCOPE_SIGNING_KEYS": f"k:{secret}"})
    assert signed.source == "signed"
    AdkTool(SearchTool(embedded.spec, embedded), scope_policy=signed)


# -- concurrent sessions on one scripted model ----------------------------------------------
async def test_concurrent_sessions_of_four_tenants_stay_isolated(
    embedded: EmbeddedBackend, owner: dict[str, str]
) -> None:
    """One runner, one ScriptedLlm, 12 sessions at once (4 tenants), each forging another tenant."""
    runner = _search_runner(embedded, [ScopeBindingPlugin(DIRECTORY)])
    tenants = ["acme", "globex", "initech", "umbrella"] * 3
    sessions = [await runner.session_service.create_session(app_name=APP, user_id=f"user-{t}") for t in tenants]
    results = await asyncio.gather(*[
        _run(runner, f"user-{t}", s.id, state_delta={"tenant_id": tenants[(i + 1) % 4]})
        for i, (t, s) in enumerate(zip(tenants, sessions, strict=True))
    ])  # fmt: skip
    total = 0
    for tenant, events in zip(tenants, results, strict=True):
        responses = _responses(events)
        assert len(responses) == 2  # every session played the whole script
        ids = returned_ids(responses)
        total += len(ids)
        assert ids and foreign(ids, owner, tenant) == []
    assert total >= 12 * 5
    await runner.close()
