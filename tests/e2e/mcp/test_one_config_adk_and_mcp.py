"""One YAML file feeds both an ADK agent module under the real ``adk api_server`` (``scopegate.load_config``,
synchronous, inside ADK's own event loop) and ``scopegate serve``; both give each tenant the same results."""

from __future__ import annotations

import sys
from pathlib import Path

import httpx
from mcp_harness import ServerProcess, World, http_client, result_ids

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/e2e: the ADK server harness

from adk_server_harness import (  # after the path entry above
    adk_api_server,
    create_session,
    function_responses,
    run,
    write_agents,
)

AGENT = """
import os

import scopegate
from scopegate.adk import ScopegateToolset

# The same file `scopegate serve` reads; built synchronously while ADK imports this module in its loop.
tools = scopegate.load_config(os.environ["SG_TEST_CONFIG"])
root_agent = LlmAgent(name="support", model=s.search_model(), instruction="Use the tools.",
                      tools=[ScopegateToolset(tools)])
app = App(name="from_yaml", root_agent=root_agent, plugins=[ScopeBindingPlugin(s.DIRECTORY)])
"""


async def test_one_yaml_for_an_adk_agent_and_scopegate_serve(
    world: World, server: ServerProcess, tmp_path: Path
) -> None:
    agents_dir, support = write_agents(tmp_path, {"from_yaml": AGENT})
    env = {"SG_TEST_CONFIG": str(world.config), "SG_TEST_INDEX": str(world.data / "tickets")}
    with adk_api_server(agents_dir, support, env=env) as adk:
        async with httpx.AsyncClient(base_url=adk.base_url, timeout=60) as client:
            session = await create_session(client, "from_yaml", "user-acme")
            events = await run(client, "from_yaml", "user-acme", session)
        assert "asyncio.run() cannot be called" not in adk.log()
    search, fetch = function_responses(events)[:2]
    adk_ids = result_ids(search)
    assert adk_ids and all(world.owner[i] == "acme" for i in adk_ids)
    assert fetch["error_code"] == "NOT_FOUND"  # another tenant's ticket, asked for by id
    # The same config served over MCP: the same tenant gets the same page.
    async with http_client(server.url, world.tokens["acme"]) as mcp:
        out = await mcp.call_tool("search_tickets", {"query": "refund failed"})
    assert result_ids(out.structured_content) == adk_ids
