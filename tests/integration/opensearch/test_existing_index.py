"""Issue 35 on OpenSearch: an index the team built (synonyms, org_id, meta.component, a read alias), used
read-only through the tools over ADK, MCP and the CLI; check --deep names each mapping mistake."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import team_index
from existing_index_checks import (
    EXPECTED,
    check_names_the_mistake,
    check_passes_a_good_index,
    cli_reaches_the_index,
    tools_over_adk,
    tools_over_mcp,
    unchanged,
    write_config,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scopegate.backends.opensearch import OpenSearchBackend
from scopegate.errors import IngestError
from scopegate.scope import Scope
from scopegate.search.model import SearchQuery

pytestmark = pytest.mark.opensearch


def search_query(text: str, tenant: str) -> SearchQuery:
    return SearchQuery(text, Scope(tenant), (), 0, 50, 10_000, 2.0, 5.0)


@pytest.fixture(scope="module")
async def team(opensearch_url: str) -> AsyncIterator[team_index.TeamIndex]:
    made = await team_index.create(opensearch_url, synonyms=True)
    try:
        yield made
    finally:
        await team_index.drop(made)


async def test_tools_over_adk_mcp_and_cli_leave_the_index_unchanged(team: team_index.TeamIndex, tmp_path: Path) -> None:
    before = await team_index.snapshot(team)
    backend = OpenSearchBackend(team.spec(), team.url)
    try:
        await tools_over_adk(team, backend)
    finally:
        await backend.close()
    config = write_config(team, tmp_path, "opensearch")
    await tools_over_mcp(team, config)
    cli_reaches_the_index(team, config)
    await unchanged(team, before)


async def test_the_alias_is_used_as_named_and_writes_are_refused(team: team_index.TeamIndex) -> None:
    backend = OpenSearchBackend(team.spec(), team.url)
    before = await team_index.snapshot(team)
    try:
        assert backend.search_target == team.alias  # not team.alias + "-read"
        for write in (backend.ingest([{"id": "X", "tenant": "acme"}]), backend.delete(["BUG-1"], tenant="acme"),
                      backend.ensure_index(), backend.drop(), backend.reindex()):  # fmt: skip
            with pytest.raises(IngestError, match="never writes"):
                await write
        assert await backend.count(Scope("acme")) == team_index.PER_TENANT + 1
    finally:
        await backend.close()
    await unchanged(team, before)


async def test_a_text_field_the_index_lacks_is_an_error_not_zero_results(team: team_index.TeamIndex) -> None:
    """Today's default on an index scopegate did not fill queried `scopegate_all`: 0 hits, status ok."""
    backend = OpenSearchBackend(team.spec(text_fields=("title^3", "body"), snippet_field="body"), team.url)
    try:
        result = await backend.search(search_query("crash", "acme"))
        raise AssertionError(f"searched a field that does not exist: {result}")
    except Exception as exc:
        assert "text_fields" in str(exc) and "'body' does not exist" in str(exc)
    finally:
        await backend.close()


@pytest.mark.parametrize("kind", sorted(EXPECTED))
async def test_check_deep_names_the_mistake(opensearch_url: str, kind: str, tmp_path: Path) -> None:
    await check_names_the_mistake(opensearch_url, "opensearch", kind, tmp_path)


async def test_check_deep_passes_the_team_index(team: team_index.TeamIndex, tmp_path: Path) -> None:
    await check_passes_a_good_index(team, tmp_path, "opensearch")


WORDS = st.sampled_from([*team_index.WORDS, "crash", "segfault", "acme", "globex", "BUG-1", "org_id:acme", "*"])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.lists(WORDS, min_size=1, max_size=8).map(" ".join), tenant=st.sampled_from(team_index.TENANTS))
async def test_isolation_property(team: team_index.TeamIndex, text: str, tenant: str) -> None:
    """0 foreign ids, whatever the words: each hit is the tenant's (its id prefix, or BUG-1 read back)."""
    backend = OpenSearchBackend(team.spec(result_fields=("title", "tenant")), team.url)
    try:
        result = await backend.search(search_query(text, tenant))
        own = (tenant[:3].upper() + "-", "BUG-1")
        assert all(h.doc_id.startswith(own) for h in result.hits), [h.doc_id for h in result.hits]
        assert all(h.fields["tenant"] == tenant for h in result.hits)  # BUG-1 is in every tenant: read back
        assert result.total <= team_index.PER_TENANT + 1
    finally:
        await backend.close()
