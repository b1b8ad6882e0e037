"""Issue 38 on a real elasticsearch node: filter-only listing (newest first, scope in the engine), id-shaped queries."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from listing_checks import check_empty_query_without_filter, check_id_query, check_listing

pytestmark = pytest.mark.elasticsearch


async def test_an_empty_query_with_a_filter_lists_newest_first(
    es_backend: Any, es_corpus: list[dict[str, Any]]
) -> None:
    await check_listing(es_backend, es_corpus, "acme")


async def test_an_empty_query_without_a_filter_is_an_error_with_a_hint(es_backend: Any) -> None:
    await check_empty_query_without_filter(es_backend, "acme")


async def test_an_id_shaped_query_finds_the_document_or_points_to_the_fetch_tool(
    es_backend: Any, es_corpus: list[dict[str, Any]]
) -> None:
    await check_id_query(es_backend, es_corpus, "acme")
