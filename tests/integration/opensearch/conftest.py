"""A real OpenSearch node for this folder's tests.

``SCOPEGATE_OPENSEARCH_URL`` set (``make test`` starts a node and exports it):
use that node. Otherwise build and start one with the project's manager in
``.cache/opensearch-node-pytest`` and stop it after the session.

If no node can be had, every test here fails when ``CI`` is set and is
skipped with the reason otherwise: never a silent skip.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from opensearch_helpers import no_node, unique_spec

from scopegate.backends.opensearch import OpenSearchBackend
from scopegate.demo.corpus import generate_tickets
from scopegate.engines.opensearch_node import URL_ENV, NodeConfig, OpenSearchNode
from scopegate.errors import EngineNodeError
from scopegate.search.spec import SearchSpec

REPO = Path(__file__).resolve().parents[3]
PER_TENANT = 400


@pytest.fixture(scope="session")
def opensearch_url() -> Iterator[str]:
    given = os.environ.get(URL_ENV)
    if given:
        try:
            OpenSearchNode().wait_green(given.rstrip("/"), timeout_s=60)
        except EngineNodeError as exc:
            no_node(f"{URL_ENV}={given} is not green: {exc}")
        yield given.rstrip("/")
        return
    node = OpenSearchNode(NodeConfig(state_dir=REPO / ".cache" / "opensearch-node-pytest"))
    try:
        url = node.start(clean=True, timeout_s=180)
    except EngineNodeError as exc:
        no_node(str(exc))
    try:
        yield url
    finally:
        node.stop()


@pytest.fixture(scope="session")
def corpus() -> list[dict[str, Any]]:
    return list(generate_tickets(per_tenant=PER_TENANT))


@pytest.fixture(scope="session")
def os_spec() -> SearchSpec:
    return unique_spec()


@pytest.fixture(scope="session")
async def os_backend(
    opensearch_url: str, os_spec: SearchSpec, corpus: list[dict[str, Any]]
) -> AsyncIterator[OpenSearchBackend]:
    """The generated multi-tenant ticket corpus, ingested once per session."""
    backend = OpenSearchBackend(os_spec, opensearch_url)
    report = await backend.ingest(corpus, batch_size=500)
    assert report.failed == 0, report.errors[:5]
    assert report.indexed == len(corpus)
    try:
        yield backend
    finally:
        await backend.drop()
        await backend.close()
