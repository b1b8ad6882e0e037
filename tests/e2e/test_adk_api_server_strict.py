"""Strict mode under the real ``adk api_server``, and the binding installed from the command line.

``SCOPEGATE_SCOPE_STRICT=1``: an agent whose tools would read scope from
client-writable state does not load (its first request fails with the reason
in the server log); an agent whose tools declare the binding loads, and gets
it from ``--extra_plugins scopegate.adapters.adk_scope.ScopeBindingPlugin``
with ``SCOPEGATE_IDENTITY_SOURCE`` naming the directory.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import httpx
import pytest
from adk_server_harness import (
    AGENTS,
    TENANTS,
    AdkServer,
    adk_api_server,
    create_session,
    function_responses,
    patch_state,
    run,
    write_agents,
)
from scope_checks import foreign, returned_ids

from scopegate.backends.embedded import EmbeddedBackend
from scopegate.demo.corpus import generate_tickets, ticket_spec

CLI_BOUND = """
root_agent = LlmAgent(name="support", model=s.search_model(), instruction="Use the tools.",
                      tools=adk_search_tools(s.backend().spec, s.backend(), scope_policy=ScopePolicy.binding()))
"""


@pytest.fixture(scope="module")
def strict_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[AdkServer, dict[str, str]]]:
    root = tmp_path_factory.mktemp("adk_api_server_strict")
    tickets = list(generate_tickets(per_tenant=20, tenants=TENANTS))
    EmbeddedBackend(ticket_spec(), root / "index").ingest_sync(tickets, batch_size=500)
    agents_dir, support = write_agents(root, {"open_search": AGENTS["open_search"], "cli_bound": CLI_BOUND})
    env = {
        "SG_TEST_INDEX": str(root / "index"),
        "SCOPEGATE_SCOPE_STRICT": "1",
        "SCOPEGATE_IDENTITY_SOURCE": "sg_support:DIRECTORY",
    }
    extra = ("--extra_plugins", "scopegate.adapters.adk_scope.ScopeBindingPlugin")
    with adk_api_server(agents_dir, support, env=env, extra_args=extra) as server:
        yield server, {t["ticket_id"]: t["tenant_id"] for t in tickets}


@pytest.fixture
async def client(strict_server: tuple[AdkServer, dict[str, str]]) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=strict_server[0].base_url, timeout=30.0) as c:
        yield c


async def test_strict_mode_refuses_to_load_an_agent_reading_client_state(
    strict_server: tuple[AdkServer, dict[str, str]], client: httpx.AsyncClient
) -> None:
    server, _ = strict_server
    session = await create_session(client, "open_search", "user-acme", state={"tenant_id": "globex"})
    body = {"app_name": "open_search", "user_id": "user-acme", "session_id": session,
            "new_message": {"role": "user", "parts": [{"text": "help"}]}}  # fmt: skip
    response = await client.post("/run", json=body)
    assert response.status_code == 500  # the agent did not load, so nothing ran
    log = server.log()
    assert "ConfigError: scopegate (strict): scope is read from client-writable ADK session state" in log
    assert "(keys: tenant_id)" in log


async def test_binding_from_the_command_line(
    strict_server: tuple[AdkServer, dict[str, str]], client: httpx.AsyncClient
) -> None:
    server, owner = strict_server
    forged_total = 0
    for tenant in TENANTS:
        victim = TENANTS[(TENANTS.index(tenant) + 2) % len(TENANTS)]
        forged = {"tenant_id": victim, "temp:tenant_id": victim, "user_id": f"user-{victim}"}
        session = await create_session(client, "cli_bound", f"user-{tenant}", state=forged)
        await patch_state(client, "cli_bound", f"user-{tenant}", session, forged)
        responses = function_responses(await run(client, "cli_bound", f"user-{tenant}", session, state_delta=forged))
        ids = returned_ids(responses)
        assert ids and foreign(ids, owner, tenant) == []
        forged_total += 1
    assert forged_total == len(TENANTS)
    assert "Plugin 'scopegate.adapters.adk_scope.ScopeBindingPlugin' registered" in server.log()
