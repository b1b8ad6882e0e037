"""Scope under the real ``adk api_server``: what a client can change, and what the binding and signing stop.

One server process for the module (google-adk 2.13, 127.0.0.1, free port), an
agents folder this module writes: scopegate's search tools over an embedded
index of several tenants (bound by a directory, bound by a token, signed,
and the unsafe default), the orders OpenAPI toolset over the local orders
service, and a looping agent guarded only by ``--extra_plugins GuardPlugin``.

Every way the REST API lets a client write state is tried with another
tenant's scope: state at session creation (plain, ``temp:`` and the binding's
own key), ``state_delta`` on ``/run`` and ``/run_sse``, and a session PATCH.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from adk_server_harness import (
    AGENTS,
    TENANTS,
    AdkServer,
    adk_api_server,
    confirmation_message,
    create_session,
    function_calls,
    function_responses,
    patch_state,
    run,
    session_state,
    text_message,
    token,
    write_agents,
)
from scope_checks import foreign, returned_ids

from scopegate.adapters.adk_scope import BOUND_KEY, TOKEN_KEY
from scopegate.backends.embedded import EmbeddedBackend
from scopegate.demo.corpus import generate_tickets, ticket_spec
from scopegate.examples.orders.data import ALICE, BOB
from scopegate.examples.orders.server import RunningService, running_orders_service
from scopegate.identity import SIGNED_SCOPE_KEY, Identity, KeyRing

KEYS = f"k2:{KeyRing.new_secret()},k1:{KeyRing.new_secret()}"


def forged_state(victim: str) -> dict[str, Any]:
    """Everything a client might write to become ``victim``."""
    return {
        "tenant_id": victim,
        "user_id": f"user-{victim}",
        "group_ids": ["admins"],
        "temp:tenant_id": victim,
        BOUND_KEY: {"identity": {"tenant": victim}, "app_name": "bound_search"},
        SIGNED_SCOPE_KEY: {
            "v": 1,
            "kid": "k2",
            "iat": 0,
            "scope": {"tenant": victim, "user": None, "groups": []},
            "sig": "A" * 43,
        },
    }


def victim_of(tenant: str) -> str:
    return TENANTS[(TENANTS.index(tenant) + 1) % len(TENANTS)]


@dataclass
class Tally:
    forged_attempts: int = 0
    ids_returned: int = 0
    foreign_ids: list[str] = field(default_factory=list)

    def count(self, responses: list[dict[str, Any]], owner: dict[str, str], tenant: str, *, forged: bool) -> list[str]:
        ids = returned_ids(responses)
        self.forged_attempts += int(forged)
        self.ids_returned += len(ids)
        bad = foreign(ids, owner, tenant)
        self.foreign_ids += bad
        return bad


@dataclass
class World:
    server: AdkServer
    orders: RunningService
    owner: dict[str, str]
    ring: KeyRing
    tally: Tally


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    root = tmp_path_factory.mktemp("adk_api_server")
    tickets = list(generate_tickets(per_tenant=40, tenants=(*TENANTS, "hooli")))
    backend = EmbeddedBackend(ticket_spec(), root / "index")
    backend.ingest_sync(tickets, batch_size=500)
    agents_dir, support = write_agents(root, AGENTS)
    tally = Tally()
    with running_orders_service() as orders:
        env = {"SG_TEST_INDEX": str(root / "index"), "SG_TEST_KEYS": KEYS, "SG_TEST_ORDERS_URL": orders.base_url}
        extra = ("--extra_plugins", "scopegate.adapters.adk_guard.GuardPlugin")
        with adk_api_server(agents_dir, support, env=env, extra_args=extra) as server:
            yield World(server, orders, {t["ticket_id"]: t["tenant_id"] for t in tickets}, KeyRing.parse(KEYS), tally)
    print(
        f"\n[adk api_server scope] forged attempts: {tally.forged_attempts}, ids returned: {tally.ids_returned}, "
        f"foreign ids: {len(tally.foreign_ids)}"
    )


@pytest.fixture
async def client(world: World) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=world.server.base_url, timeout=30.0) as c:
        yield c


def codes(responses: list[dict[str, Any]]) -> list[str | None]:
    return [r.get("error_code") for r in responses]


# -- the binding ----------------------------------------------------------------------------
async def test_forged_state_never_changes_the_bound_scope(world: World, client: httpx.AsyncClient) -> None:
    app = "bound_search"
    for tenant in TENANTS:
        user, victim = f"user-{tenant}", victim_of(tenant)
        forged = forged_state(victim)
        session = await create_session(client, app, user, state=forged)  # forged at creation
        attempts = [
            await run(client, app, user, session),
            await run(client, app, user, session, state_delta=forged),  # forged state_delta
            await run(client, app, user, session, state_delta=forged, sse=True),  # the same over SSE
        ]
        await patch_state(client, app, user, session, forged)  # forged PATCH
        attempts.append(await run(client, app, user, session))
        for events in attempts:
            responses = function_responses(events)
            assert world.tally.count(responses, world.owner, tenant, forged=True) == []
            assert responses[0]["status"] == "ok" and responses[0]["results"]
            assert responses[1].get("error_code") == ("NOT_FOUND" if tenant != "globex" else None)
        stored = await session_state(client, app, user, session)
        assert set(stored) <= set(forged)  # the server persisted no scope of its own (nothing to read back)
    assert world.tally.foreign_ids == []


async def test_a_user_without_an_identity_gets_nothing(world: World, client: httpx.AsyncClient) -> None:
    session = await create_session(client, "bound_search", "mallory", state=forged_state("acme"))
    events = await run(client, "bound_search", "mallory", session, state_delta=forged_state("acme"))
    assert codes(function_responses(events)) == ["NO_SCOPE", "NO_SCOPE"]
    world.tally.forged_attempts += 1


async def test_token_binding(world: World, client: httpx.AsyncClient) -> None:
    app = "token_search"
    for tenant in TENANTS:
        user, victim = f"user-{tenant}", victim_of(tenant)
        session = await create_session(client, app, user, state=forged_state(victim))
        good = await run(client, app, user, session, state_delta={TOKEN_KEY: token(tenant), **forged_state(victim)})
        responses = function_responses(good)
        assert responses[0]["results"] and world.tally.count(responses, world.owner, tenant, forged=True) == []
        # The victim's own valid token on my session, a near-miss token, no token: no scope at all.
        for delta in ({TOKEN_KEY: token(victim)}, {TOKEN_KEY: token(tenant) + "x"}, forged_state(victim)):
            refused = function_responses(await run(client, app, user, session, state_delta=delta))
            assert codes(refused) == ["NO_SCOPE", "NO_SCOPE"], delta
            world.tally.forged_attempts += 1
        assert TOKEN_KEY not in await session_state(client, app, user, session)  # never persisted


# -- signed state -----------------------------------------------------------------------------
async def test_signed_state_refuses_altered_and_copied_scope(world: World, client: httpx.AsyncClient) -> None:
    app = "signed_search"
    envelopes: dict[str, tuple[str, str, dict[str, Any]]] = {}
    for tenant in TENANTS:  # the server provisions one signed session per user
        user, sid = f"user-{tenant}", f"sess-{tenant}"
        envelope = world.ring.sign(Identity(tenant, user), app_name=app, user_id=user, session_id=sid)
        await create_session(client, app, user, state={SIGNED_SCOPE_KEY: envelope}, session_id=sid)
        envelopes[tenant] = (user, sid, envelope)
    for tenant, (user, sid, envelope) in envelopes.items():
        victim = victim_of(tenant)
        plain = forged_state(victim)
        del plain[SIGNED_SCOPE_KEY], plain[BOUND_KEY]
        ok = function_responses(await run(client, app, user, sid, state_delta=plain))
        assert ok[0]["results"] and world.tally.count(ok, world.owner, tenant, forged=True) == []
        theirs = envelopes[victim][2]
        altered = {**envelope, "scope": {**envelope["scope"], "tenant": victim}}
        forged = forged_state(victim)
        bad_deltas = [{SIGNED_SCOPE_KEY: theirs}, {SIGNED_SCOPE_KEY: altered}]
        bad_deltas += [{SIGNED_SCOPE_KEY: forged[SIGNED_SCOPE_KEY]}, {BOUND_KEY: forged[BOUND_KEY]}]
        for delta in bad_deltas:
            refused = function_responses(await run(client, app, user, sid, state_delta=delta))
            assert codes(refused) == ["NO_SCOPE", "NO_SCOPE"]
            world.tally.forged_attempts += 1
        # PATCH my own good envelope back: my scope again (the signature is tamper evidence, not secrecy).
        await patch_state(client, app, user, sid, {SIGNED_SCOPE_KEY: envelope})
        again = function_responses(await run(client, app, user, sid))
        assert again[0]["results"] and world.tally.count(again, world.owner, tenant, forged=False) == []
    # A signed state copied into a new session (same user) is refused.
    user, _, envelope = envelopes["acme"]
    copy = await create_session(client, app, user, state={SIGNED_SCOPE_KEY: envelope})
    assert codes(function_responses(await run(client, app, user, copy))) == ["NO_SCOPE", "NO_SCOPE"]
    world.tally.forged_attempts += 1


# -- concurrency ------------------------------------------------------------------------------
async def test_concurrent_sessions_of_four_tenants_stay_isolated(world: World, client: httpx.AsyncClient) -> None:
    app = "bound_search"
    plan = [(tenant, n) for tenant in TENANTS for n in range(3)]
    sessions = [await create_session(client, app, f"user-{t}") for t, _ in plan]

    async def one(tenant: str, session: str) -> list[dict[str, Any]]:
        return function_responses(
            await run(client, app, f"user-{tenant}", session, state_delta=forged_state(victim_of(tenant)))
        )

    results = await asyncio.gather(*[one(t, s) for (t, _), s in zip(plan, sessions, strict=True)])
    for (tenant, _), responses in zip(plan, results, strict=True):
        assert len(responses) == 2 and responses[0]["results"]  # each session played its whole script
        assert world.tally.count(responses, world.owner, tenant, forged=True) == []


# -- OpenAPI confirmation over REST ------------------------------------------------------------
@pytest.mark.parametrize("approve", [True, False])
async def test_openapi_confirmation_flow_over_rest(world: World, client: httpx.AsyncClient, approve: bool) -> None:
    app, orders = "orders_bound", world.orders
    orders.state.reset()
    as_bob = {"user_id": BOB, "temp:user_id": BOB, "customer_id": BOB}
    session = await create_session(client, app, ALICE, state=as_bob)
    first = await run(client, app, ALICE, session, message=text_message("ship it"), state_delta=as_bob)
    responses = function_responses(first)
    assert responses[0]["error_code"] == "NOT_FOUND"  # Bob's order, although the client says it is Bob
    (asked,) = [c for c in function_calls(first) if c["name"] == "adk_request_confirmation"]
    assert asked["args"]["originalFunctionCall"]["name"] == "updateShippingAddress"
    assert orders.state.hits("updateShippingAddress") == 0  # nothing sent before the answer
    await patch_state(client, app, ALICE, session, as_bob)
    answer = confirmation_message(asked["id"], approve)
    done = function_responses(await run(client, app, ALICE, session, message=answer, state_delta=as_bob))
    world.tally.forged_attempts += 2
    if approve:
        assert done[-1]["status"] == "ok" and done[-1]["untrusted"]["data"]["customer_id"] == ALICE
        assert orders.state.hits("updateShippingAddress") == 1
    else:
        assert done[-1]["error_code"] == "CONFIRMATION_REJECTED"
        assert orders.state.hits("updateShippingAddress") == 0


# -- the unsafe default and ADK tooling --------------------------------------------------------
async def test_unsafe_default_warns_once_and_is_client_writable(world: World, client: httpx.AsyncClient) -> None:
    app = "open_search"
    session = await create_session(client, app, "user-acme", state={"tenant_id": "acme"})
    own = function_responses(await run(client, app, "user-acme", session))
    assert own[0]["results"] and foreign(returned_ids(own), world.owner, "acme") == []
    # What the binding exists for: without it, a state_delta picks the tenant.
    forged = function_responses(await run(client, app, "user-acme", session, state_delta={"tenant_id": "globex"}))
    assert returned_ids(forged) and foreign(returned_ids(forged), world.owner, "globex") == []
    # Once, however many runs: one logging record and one Python warning, naming the key and the docs.
    lines = [line for line in world.server.log().splitlines() if "client-writable ADK session state" in line]
    assert len(lines) == 2, lines
    assert sum("ScopeTrustWarning" in line for line in lines) == 1 and sum(" WARNING " in line for line in lines) == 1
    assert all("(keys: tenant_id)" in line and "docs/deployment-adk.md" in line for line in lines)


async def test_guard_plugin_from_extra_plugins_caps_searches(world: World, client: httpx.AsyncClient) -> None:
    session = await create_session(client, "looping", "user-acme")
    responses = function_responses(await run(client, "looping", "user-acme", session))
    assert codes(responses) == [None, None, None, None, "CALL_LIMIT"]
    assert "Failed to load plugin" not in world.server.log()


def test_server_log_is_clean(world: World) -> None:
    log = world.server.log()
    assert "Traceback" not in log, log[-3000:]
    assert Path(world.server.log_path).exists()
