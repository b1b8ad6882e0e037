"""Issue 36 (L6): a failed ``reindex()`` deletes the version it created, and nothing else.

``reindex_verified`` deleted a failed new index; plain ``reindex()`` (and ``migrate_keys()``) left it
behind: four failures, four empty ``<index>-v<N>`` orphans. Failures here are real: the documents
given fail while they are read, and the engine refuses the server-side copy of a closed index.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from opensearch_helpers import unique_spec

from scopegate.backends.opensearch import OpenSearchBackend
from scopegate.errors import BackendError
from scopegate.scope import Scope

pytestmark = pytest.mark.opensearch


class SourceBroke(RuntimeError):
    pass


def broken_source(docs: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    yield from docs
    raise SourceBroke("the export ended early")


async def test_failed_reindexes_leave_no_new_index_and_keep_the_live_one(
    opensearch_url: str, corpus: list[dict[str, Any]]
) -> None:
    spec = unique_spec()
    backend = OpenSearchBackend(spec, opensearch_url)
    docs = [d for d in corpus if d["tenant_id"] == "umbrella"][:30]
    try:
        await backend.ingest(docs)
        live = await backend.alias_state()
        for _ in range(3):
            with pytest.raises(SourceBroke):
                await backend.reindex(broken_source(docs[:5]))
        with pytest.raises(SourceBroke):
            await backend.reindex(broken_source([]))
        # The engine refuses to copy a closed index: a server-side failure.
        async with httpx.AsyncClient(timeout=30) as client:
            (await client.post(f"{opensearch_url}/{spec.index}-v1/_close")).raise_for_status()
            try:
                with pytest.raises(BackendError):
                    await backend.reindex()
            finally:
                (await client.post(f"{opensearch_url}/{spec.index}-v1/_open")).raise_for_status()
                wait = {"wait_for_status": "yellow", "timeout": "30s"}
                health = await client.get(f"{opensearch_url}/_cluster/health/{spec.index}-v1", params=wait)
                health.raise_for_status()
        assert await backend.versions() == [(1, f"{spec.index}-v1")]  # no orphan left
        assert await backend.alias_state() == live  # the aliases never moved
        assert await backend.count(Scope("umbrella")) == 30  # the live index is whole
        assert await backend.reindex(docs) == f"{spec.index}-v2"  # and a good reindex still works
        assert await backend.count(Scope("umbrella")) == 30
    finally:
        await backend.drop()
        await backend.close()
