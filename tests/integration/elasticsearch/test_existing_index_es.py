"""Issue 35 on Elasticsearch (8.19 or 9.x, minimal distribution: no synonym filter, so the model searches the
word itself): an index the team built (org_id, meta.component, a keyword sub-field, a read alias), used
read-only through the tools over ADK, MCP and the CLI; check --deep names each mapping mistake."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import existing_index_checks as checks
import pytest
import team_index
from elasticsearch_helpers import server_major
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scopegate.backends.elasticsearch import ElasticsearchBackend
from scopegate.search.spec import SearchSpec

pytestmark = pytest.mark.elasticsearch
ENGINE = "elasticsearch"
WORDS = st.sampled_from([*team_index.WORDS, "crash", "segfault", "acme", "globex", "BUG-1", "org_id:acme", "*"])


@pytest.fixture(scope="module")
async def team(es_url: str) -> AsyncIterator[team_index.TeamIndex]:
    made = await team_index.create(es_url, synonyms=False)
    try:
        yield made
    finally:
        await team_index.drop(made)


def make(url: str) -> checks.Make:
    def backend(spec: SearchSpec) -> ElasticsearchBackend:
        return ElasticsearchBackend(spec, url, server_major=server_major(url))

    return backend


async def test_tools_over_adk_mcp_and_cli_leave_the_index_unchanged(team: team_index.TeamIndex, tmp_path: Path) -> None:
    await checks.the_whole_path(team, make(team.url), tmp_path, ENGINE, server_major=server_major(team.url))


async def test_the_alias_is_used_as_named_and_writes_are_refused(team: team_index.TeamIndex) -> None:
    await checks.alias_as_named_and_writes_refused(team, make(team.url))


async def test_term_vectors_give_the_fast_highlighter_the_same_snippet(es_url: str, tmp_path: Path) -> None:
    await checks.term_vector_snippets(es_url, make(es_url), tmp_path, ENGINE, synonyms=False, server_major=8)


async def test_a_text_field_the_index_lacks_is_an_error_not_zero_results(team: team_index.TeamIndex) -> None:
    await checks.missing_text_field_is_an_error(team, make(team.url))


@pytest.mark.parametrize("kind", sorted(checks.EXPECTED))
async def test_check_deep_names_the_mistake(es_url: str, kind: str, tmp_path: Path) -> None:
    await checks.check_names_the_mistake(es_url, ENGINE, kind, tmp_path, server_major=server_major(es_url))


async def test_check_deep_passes_the_team_index(team: team_index.TeamIndex, tmp_path: Path) -> None:
    await checks.check_passes_a_good_index(team, tmp_path, ENGINE, server_major=server_major(team.url))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.lists(WORDS, min_size=1, max_size=8).map(" ".join), tenant=st.sampled_from(team_index.TENANTS))
async def test_isolation_property(team: team_index.TeamIndex, text: str, tenant: str) -> None:
    await checks.isolation(team, make(team.url), text, tenant)
