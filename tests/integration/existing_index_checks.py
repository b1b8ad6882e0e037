"""Issue 35, shared by the OpenSearch and Elasticsearch folders: scopegate on an index a team built itself.

The index comes from :mod:`team_index` (plain REST calls). The tools run through
the real ADK runner (scripted offline model) and the official MCP client (over
stdio, ``scopegate serve`` as a subprocess); afterwards the index's mapping,
settings, aliases and documents are what they were.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from google.adk.agents import LlmAgent
from google.adk.runners import InMemoryRunner
from google.genai import types
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from team_index import COMPONENTS, CRASH_BODY, PER_TENANT, TENANTS, TeamIndex, create, create_raw, drop, snapshot

from scopegate.adapters.adk import adk_search_tools
from scopegate.backends.engine_common import EngineBackend
from scopegate.context import CallContext
from scopegate.errors import BackendError, IngestError
from scopegate.scope import Scope
from scopegate.search.model import SearchQuery
from scopegate.search.spec import SearchSpec
from scopegate.search.tools import SearchTool
from scopegate.server.check import check_config
from scopegate.testing.scripted_llm import ScriptedLlm, call, final_text

PLANTED = "{}-CRASH"


def synonym_query(team: TeamIndex) -> str:
    """The word the model searches: a synonym of the body's "crash" where the index has the synonym filter."""
    return "segfault" if team.synonyms else "crash"


def check_planted_hit(result: dict[str, Any], tenant: str, hits_budget: int) -> None:
    """The planted document, found (through the synonym), with a snippet around the matched word."""
    assert result["status"] == "ok", result
    ids = [r["id"] for r in result["results"]]
    assert ids == [PLANTED.format(tenant[:3].upper())], ids
    hit = result["results"][0]
    assert hit["component"] == "storage" and hit["status"] == "open" and hit["title"].startswith("storage daemon")
    snippet = hit["snippet"]
    # the words around the match, before and after it, not the match alone
    planted = "the storage daemon hit a crash while flushing the journal"
    assert planted in snippet, snippet
    assert 100 <= len(snippet) <= 400
    assert CRASH_BODY.index(planted) > 1000  # so the window is around the match, not the body's head
    assert len(json.dumps(result["results"])) <= hits_budget
    assert result["total"] == 1 and result["total_relation"] == "eq"


async def _adk_events(tools: list[Any], tenant: str, model: ScriptedLlm) -> list[tuple[str, Any]]:
    agent = LlmAgent(name="bugs", model=model, instruction="Use the tools.", tools=tools)
    runner = InMemoryRunner(agent=agent, app_name="existing")
    session = await runner.session_service.create_session(app_name="existing", user_id="u", state={"tenant_id": tenant})
    events: list[tuple[str, Any]] = []
    message = types.Content(role="user", parts=[types.Part(text="what crashed?")])
    async for event in runner.run_async(user_id="u", session_id=session.id, new_message=message):
        for part in event.content.parts if event.content and event.content.parts else []:
            if part.function_response:
                events.append((part.function_response.name, dict(part.function_response.response or {})))
    await runner.close()
    return events


Make = Callable[[SearchSpec], EngineBackend[Any]]


def search_query(text: str, tenant: str) -> SearchQuery:
    return SearchQuery(text, Scope(tenant), (), 0, 50, 10_000, 2.0, 5.0)


async def tools_over_adk(team: TeamIndex, make: Make) -> None:
    """Search (synonym), fetch, a filtered search and a count through the real ADK runner."""
    backend = make(team.spec())
    try:
        await _adk_session(team, backend)
    finally:
        await backend.close()


async def _adk_session(team: TeamIndex, backend: EngineBackend[Any]) -> None:
    spec = backend.spec
    tools: list[Any] = adk_search_tools(spec, backend, aggregate=True)
    model = ScriptedLlm(
        [
            call("search_bugs", query=synonym_query(team)),
            call("get_bug", id="BUG-1"),
            call("get_bug", id="GLO-2"),  # another tenant's document
            call("search_bugs", query="disk full", component="storage"),
            call("count_bugs", group_by="component"),
            final_text("done"),
        ]
    )
    events = await _adk_events(tools, "acme", model)
    names = [name for name, _ in events]
    assert names == ["search_bugs", "get_bug", "get_bug", "search_bugs", "count_bugs"], names
    found, own, foreign, filtered, counted = (response for _, response in events)
    check_planted_hit(found, "acme", spec.hits_char_budget)
    assert own["status"] == "ok" and own["document"]["id"] == "BUG-1"
    assert "tenant" not in own["document"] and "org_id" not in json.dumps(own)
    assert foreign["status"] == "error" and foreign["error_code"] == "NOT_FOUND"
    assert filtered["status"] == "ok" and filtered["results"]
    assert all(r["component"] == "storage" and r["id"].startswith(("ACM-", "BUG-")) for r in filtered["results"])
    assert counted["status"] == "ok", counted
    per_value = {b["component"]: b["count"] for b in counted["buckets"]}
    # acme: PER_TENANT documents spread over 3 components, plus the planted storage document
    storage = sum(1 for n in range(1, PER_TENANT + 1) if COMPONENTS[n % 3] == "storage") + 1
    assert sum(per_value.values()) == PER_TENANT + 1 and per_value["storage"] == storage
    # What the model saw: no tenant, no engine path.
    seen = json.dumps(model.seen_declarations)
    assert "org_id" not in seen and "meta.component" not in seen and "tenant" not in seen


def write_config(team: TeamIndex, folder: Path, engine: str, **kwargs: Any) -> Path:
    config = team.config(engine, **kwargs)
    config["search_tools"][0]["aggregate"] = {}
    path = folder / "scopegate.json"
    path.write_text(json.dumps(config), "utf-8")
    return path


async def tools_over_mcp(team: TeamIndex, config: Path) -> None:
    """The same tools served by ``scopegate serve`` (stdio), through the official MCP client."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "scopegate.cli", "serve", str(config)],
        env={**os.environ, "SCOPEGATE_TENANT": "globex"},
    )
    async with Client(params) as client:
        listed = {t.name for t in (await client.list_tools()).tools}
        assert listed == {"search_bugs", "get_bug", "count_bugs"}
        found = await client.call_tool("search_bugs", {"query": synonym_query(team)})
        check_planted_hit(found.structured_content, "globex", 2500)
        own = await client.call_tool("get_bug", {"id": "BUG-1"})
        assert not own.is_error and own.structured_content["document"]["id"] == "BUG-1"
        foreign = await client.call_tool("get_bug", {"id": "ACM-2"})
        assert foreign.is_error and foreign.structured_content["error_code"] == "NOT_FOUND"
        counted = await client.call_tool("count_bugs", {"group_by": "status"})
        buckets = {b["status"]: b["count"] for b in counted.structured_content["buckets"]}
        assert sum(buckets.values()) == PER_TENANT + 1


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "scopegate.cli", *args],
        capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def cli_reaches_the_index(team: TeamIndex, config: Path) -> None:
    """``scopegate search/get/count --config FILE --tool NAME --tenant T`` on the configured engine."""
    done = cli("search", synonym_query(team), "--config", str(config), "--tool", "search_bugs", "--tenant", "initech")
    assert done.returncode == 0, done.stderr
    check_planted_hit(json.loads(done.stdout), "initech", 2500)
    done = cli("get", "BUG-1", "--config", str(config), "--tool", "get_bug", "--tenant", "initech")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["document"]["id"] == "BUG-1"
    done = cli("get", "ACM-2", "--config", str(config), "--tenant", "initech")
    assert done.returncode == 2 and json.loads(done.stdout)["error_code"] == "NOT_FOUND"
    done = cli("count", "--config", str(config), "--tenant", "initech")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["count"] == PER_TENANT + 1


async def the_whole_path(team: TeamIndex, make: Make, folder: Path, engine: str, **config: Any) -> None:
    """ADK, MCP and the CLI on the team's index; its mapping, settings, aliases and documents unchanged."""
    before = await snapshot(team)
    await tools_over_adk(team, make)
    path = write_config(team, folder, engine, **config)
    await tools_over_mcp(team, path)
    cli_reaches_the_index(team, path)
    await unchanged(team, before)


async def alias_as_named_and_writes_refused(team: TeamIndex, make: Make) -> None:
    backend = make(team.spec())
    before = await snapshot(team)
    try:
        assert backend.search_target == team.alias  # not team.alias + "-read"
        writes = (
            backend.ingest([{"id": "X", "tenant": "acme"}]),
            backend.delete(["BUG-1"], tenant="acme"),
            backend.ensure_index(),
            backend.drop(),
            backend.reindex(),
        )
        for write in writes:
            with pytest.raises(IngestError, match="never writes"):
                await write
        assert await backend.count(Scope("acme")) == PER_TENANT + 1
    finally:
        await backend.close()
    await unchanged(team, before)


async def term_vector_snippets(
    url: str, make: Make, folder: Path, engine: str, *, synonyms: bool, **config: Any
) -> None:
    """A team index whose snippet field keeps term vectors with offsets: the fast vector highlighter cuts the
    snippet, and it is still the window around the (synonym) match; check --deep has no snippet note there."""
    team = await create(url, synonyms=synonyms, prefix="teamtv", term_vectors=True)
    backend = make(team.spec())
    try:
        fm = await backend.field_map()
        assert fm is not None and fm.snippet_offsets == "term_vectors"
        tool = SearchTool(backend.spec, backend)
        ctx = CallContext(state={backend.spec.scope_keys.tenant: "acme"})
        found = (await tool.run({"query": synonym_query(team)}, ctx)).result
        check_planted_hit(found, "acme", backend.spec.hits_char_budget)
        path = folder / "term-vectors.json"
        path.write_text(json.dumps(team.config(engine, **config)), "utf-8")
        report = await check_config(path, deep=True)
        assert report["problems"] == []
        assert not [n for n in report["notes"] if "snippet_field" in n], report["notes"]
    finally:
        await backend.close()
        await drop(team)


async def missing_text_field_is_an_error(team: TeamIndex, make: Make) -> None:
    """Before: the default queried `scopegate_all`, which only scopegate's ingest fills: 0 hits, status ok.
    Now a text field the index lacks is an error naming it, never a silent 0."""
    backend = make(team.spec(text_fields=("title^3", "body"), snippet_field="body"))
    try:
        with pytest.raises(BackendError, match=r"text_fields\[1\]: the text field 'body' does not exist"):
            await backend.search(search_query("crash", "acme"))
    finally:
        await backend.close()


async def isolation(team: TeamIndex, make: Make, text: str, tenant: str) -> None:
    """0 foreign ids, whatever the words: each hit is the tenant's (its id prefix; BUG-1, in every tenant,
    by its tenant read back through the field map)."""
    backend = make(team.spec(result_fields=("title", "tenant")))
    try:
        result = await backend.search(search_query(text, tenant))
        own = (tenant[:3].upper() + "-", "BUG-1")
        assert all(h.doc_id.startswith(own) for h in result.hits), [h.doc_id for h in result.hits]
        assert all(h.fields["tenant"] == tenant for h in result.hits)
        assert result.total <= PER_TENANT + 1
    finally:
        await backend.close()


async def unchanged(team: TeamIndex, before: dict[str, Any]) -> None:
    after = await snapshot(team)
    assert after == before
    assert after["count"] == len(TENANTS) * (PER_TENANT + 1)


# -- check --deep: one test per mistake ------------------------------------------------------------
GOOD_MAPPING: dict[str, Any] = {
    "properties": {
        "key": {"type": "keyword"},
        "org_id": {"type": "keyword"},
        "title": {"type": "text"},
        "description": {"type": "text"},
        "status": {"type": "text", "fields": {"keyword": {"type": "keyword"}}},
        "meta": {"properties": {"component": {"type": "keyword"}}},
    }
}


def mistaken(kind: str) -> dict[str, Any] | None:
    """The good mapping with one mistake (None: no index at all)."""
    if kind == "missing index":
        return None
    props = json.loads(json.dumps(GOOD_MAPPING["properties"]))
    if kind == "tenant field missing":
        del props["org_id"]
    elif kind == "tenant field text":
        props["org_id"] = {"type": "text"}
    elif kind == "filter field text without keyword sub-field":
        props["meta"]["properties"]["component"] = {"type": "text"}
    elif kind == "id field missing":
        del props["key"]
    return {"properties": props}


# What check --deep must name for each mistake: (the config key path, words of the message).
EXPECTED = {
    "missing index": ("search_tools[0].index", "does not exist"),
    "tenant field missing": ("search_tools[0].field_paths.tenant", "tenant field 'org_id' does not exist"),
    "tenant field text": ("search_tools[0].field_paths.tenant", "tenant field 'org_id' is text"),
    "filter field text without keyword sub-field": (
        "search_tools[0].field_paths.component",
        "filter 'component' field 'meta.component' is text without a keyword sub-field",
    ),
    "id field missing": ("search_tools[0].field_paths.id", "id field 'key' does not exist"),
}


async def check_names_the_mistake(url: str, engine: str, kind: str, folder: Path, **config: Any) -> None:
    mapping = mistaken(kind)
    index = await create_raw(url, mapping) if mapping is not None else "teambugs-never-created"
    team = TeamIndex(url, index, index, synonyms=False)
    try:
        await _names_the_mistake(team, engine, kind, folder, **config)
    finally:
        if mapping is not None:
            await drop(team)


async def _names_the_mistake(team: TeamIndex, engine: str, kind: str, folder: Path, **config: Any) -> None:
    path = folder / f"{kind.replace(' ', '-')}.json"
    path.write_text(json.dumps(team.config(engine, **config)), "utf-8")
    report = await check_config(path, deep=True)
    key, words = EXPECTED[kind]
    lines = [p for p in report["problems"] if p.startswith(key + ":")]
    assert len(lines) == 1 and words in lines[0], report["problems"]
    assert len(report["problems"]) == 1, report["problems"]  # one line per problem, nothing else
    done = cli("check", "--deep", str(path))
    assert done.returncode == 1 and key in done.stderr
    # serve refuses to start on it, naming the same key; --allow-index-problems starts with it as a warning
    done = serve(path)
    assert done.returncode == 1 and key in done.stderr and "--allow-index-problems" in done.stderr
    done = serve(path, "--allow-index-problems")  # stdio: ends at the end of its (empty) input
    assert done.returncode == 0 and f"scopegate: warning: {key}" in done.stderr


def serve(config: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "scopegate.cli", "serve", str(config), *flags],
        capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
        env={**os.environ, "SCOPEGATE_TENANT": "acme"},
    )  # fmt: skip


async def check_passes_a_good_index(team: TeamIndex, folder: Path, engine: str, **config: Any) -> None:
    path = folder / "good.json"
    path.write_text(json.dumps(team.config(engine, **config)), "utf-8")
    report = await check_config(path, deep=True)
    assert report["problems"] == []
    # 'billing' is an allowed component no document has: a warning naming the key, never an error
    assert len(report["warnings"]) == 1 and report["warnings"][0].startswith("search_tools[0].filters[0].allowed:")
    assert "billing" in report["warnings"][0]
    # no term vectors on the snippet field: a note (never a warning) on what the snippets cost and the fix
    (note,) = [n for n in report["notes"] if n.startswith("search_tools[0].snippet_field:")]
    assert "re-analyses" in note and "with_positions_offsets" in note
