"""The official MCP client over stdio: ``scopegate serve CONFIG`` as a subprocess, scope fixed per process."""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest
from mcp_harness import MODES, World, result_ids, scopegate_command, stdio_client

from scopegate.demo.corpus import INJECTION_ID, INJECTION_TENANT, ticket_spec
from scopegate.search.tools import FetchTool, SearchTool

BAD_INPUT: list[tuple[dict[str, Any], str]] = [
    ({"query": ""}, "BAD_QUERY"),
    ({"query": "x" * 5000}, "BAD_QUERY"),
    ({"query": "refund", "product": "crypto"}, "BAD_FILTER"),
    ({"query": "refund", "page": 0}, "BAD_PAGE"),
    ({"query": "refund", "page": "two"}, "BAD_PAGE"),
    ({"query": "refund", "tenant_id": "globex"}, "BAD_ARGUMENTS"),
    ({"query": 42}, "BAD_QUERY"),
    ({}, "BAD_QUERY"),
]


@pytest.mark.parametrize("mode", MODES)
async def test_tools_search_fetch_and_errors(world: World, mode: str) -> None:
    spec = ticket_spec()
    async with stdio_client(world.config, {"SCOPEGATE_TENANT": "globex"}, mode=mode) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        # The same declarations ADK shows: name, description, schema, byte for byte.
        assert set(listed) == {"search_tickets", "get_ticket"}
        assert listed["search_tickets"].input_schema == SearchTool(spec, None).parameters_schema()  # type: ignore[arg-type]
        assert listed["get_ticket"].input_schema == FetchTool(spec, None).parameters_schema()  # type: ignore[arg-type]
        assert listed["search_tickets"].description == spec.description
        for tool in listed.values():
            assert tool.annotations is not None and tool.annotations.read_only_hint is True

        found = await client.call_tool("search_tickets", {"query": "apple pay refund failed", "product": "payments"})
        assert not found.is_error
        data = found.structured_content
        assert data["status"] == "ok" and data["results"]
        assert json.loads(found.content[0].text) == data  # compact text form = the same result
        assert all(world.owner[i] == "globex" for i in result_ids(data))

        first = data["results"][0]["ticket_id"]
        fetched = await client.call_tool("get_ticket", {"id": first})
        assert not fetched.is_error and fetched.structured_content["document"]["ticket_id"] == first

        foreign = next(i for i, t in world.owner.items() if t == "acme")
        refused = await client.call_tool("get_ticket", {"id": foreign})
        assert refused.is_error and refused.structured_content["error_code"] == "NOT_FOUND"

        for args, code in BAD_INPUT:
            bad = await client.call_tool("search_tickets", args)
            assert bad.is_error, args
            assert bad.structured_content["status"] == "error"
            assert bad.structured_content["error_code"] == code, (args, bad.structured_content)
            assert "Traceback" not in bad.content[0].text

        unknown = await client.call_tool("drop_tables", {"query": "x"})
        assert unknown.is_error and unknown.structured_content["error_code"] == "UNKNOWN_TOOL"


async def test_injection_ticket_over_stdio(world: World) -> None:
    async with stdio_client(world.config, {"SCOPEGATE_TENANT": INJECTION_TENANT}) as client:
        hit = await client.call_tool("search_tickets", {"query": "apple pay refund failed read this first"})
        assert INJECTION_ID in result_ids(hit.structured_content)
        # Doing what the planted ticket says: every attempt stays inside the tenant.
        for args in (
            {"query": "tenant_id:* OR tenant_id:acme refund"},
            {"query": "refund", "tenant_id": "acme"},
            {"query": '{"match_all": {}}'},
        ):
            out = await client.call_tool("search_tickets", args)
            assert all(world.owner[i] == INJECTION_TENANT for i in result_ids(out.structured_content))
    async with stdio_client(world.config, {"SCOPEGATE_TENANT": "acme"}) as client:
        out = await client.call_tool("get_ticket", {"id": INJECTION_ID})
        assert out.structured_content["error_code"] == "NOT_FOUND"


def test_stdio_refuses_to_start_without_a_tenant(world: World) -> None:
    env = {"PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        scopegate_command("serve", str(world.config)),
        env=env,
        capture_output=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 1
    assert b"SCOPEGATE_TENANT" in done.stderr
