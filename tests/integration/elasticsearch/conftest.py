"""A real Elasticsearch node (8.19 integ-test distribution) for this folder's tests.

``SCOPEGATE_ELASTICSEARCH_URL`` set: use that node. Otherwise fetch, unpack and
start one with the project's manager in ``.cache/elasticsearch-node-pytest``
(or, when the node's run user cannot reach the clone, in a folder of the system's
temporary directory) and stop it after the session. No node: failure under ``CI``, a skip that
prints the reason otherwise.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from elasticsearch_helpers import make_backend, unique_spec

from scopegate.backends.elasticsearch import ElasticsearchBackend
from scopegate.demo.corpus import generate_tickets
from scopegate.engines.elasticsearch_node import URL_ENV, ElasticsearchNode, ESNodeConfig
from scopegate.errors import EngineNodeError
from scopegate.search.spec import SearchSpec
from unavailable import engine_unavailable

REPO = Path(__file__).resolve().parents[3]
PER_TENANT = 100


def no_node(reason: str) -> None:
    engine_unavailable("Elasticsearch node", reason)


@pytest.fixture(scope="session")
def es_node() -> Iterator[tuple[ElasticsearchNode | None, str]]:
    given = os.environ.get(URL_ENV)
    if given:
        try:
            ElasticsearchNode().wait_green(given.rstrip("/"), timeout_s=90)
        except EngineNodeError as exc:
            no_node(f"{URL_ENV}={given} is not green: {exc}")
        yield None, given.rstrip("/")
        return
    state_dir = REPO / ".cache" / "elasticsearch-node-pytest"
    if ElasticsearchNode().blocked_folder(state_dir) is not None:
        # A clone inside a 0700 folder (mktemp -d): the node's run user cannot reach the clone's .cache,
        # so this clone's node keeps its state in the system's temporary folder instead.
        digest = hashlib.sha256(str(REPO).encode()).hexdigest()[:12]
        state_dir = Path(tempfile.gettempdir()) / f"scopegate-elasticsearch-pytest-{digest}"
    node = ElasticsearchNode(ESNodeConfig(state_dir=state_dir))
    try:
        url = node.start(clean=True, timeout_s=240)
    except EngineNodeError as exc:
        no_node(str(exc))
    try:
        yield node, url
    finally:
        node.stop()


@pytest.fixture(scope="session")
def es_url(es_node: tuple[ElasticsearchNode | None, str]) -> str:
    return es_node[1]


@pytest.fixture(scope="session")
def es_corpus() -> list[dict[str, Any]]:
    return list(generate_tickets(per_tenant=PER_TENANT))


@pytest.fixture(scope="session")
def es_spec() -> SearchSpec:
    return unique_spec()


@pytest.fixture(scope="session")
async def es_backend(
    es_url: str, es_spec: SearchSpec, es_corpus: list[dict[str, Any]]
) -> AsyncIterator[ElasticsearchBackend]:
    backend = make_backend(es_spec, es_url)
    report = await backend.ingest(es_corpus, batch_size=200)
    assert report.failed == 0, report.errors[:5]
    try:
        yield backend
    finally:
        await backend.drop()
        await backend.close()
