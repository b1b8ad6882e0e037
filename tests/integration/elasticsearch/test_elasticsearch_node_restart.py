"""Issue 36 (L4): the single-node development Elasticsearch restarts while it holds data.

An index made the README's way (no ``replicas`` in the config) gets the engine's default of one
replica, which a single node can never assign, so the node stays yellow. ``start`` waited for green
until its timeout (403 s in the report) and then killed the node it had started. This test runs a node
of its own (not the session's), fills such an index, stops the node and starts it again.
"""

from __future__ import annotations

import hashlib
import tempfile
from pathlib import Path

import httpx
import pytest
from elasticsearch_helpers import unique_spec

from scopegate.backends.elasticsearch import ElasticsearchBackend
from scopegate.demo.corpus import generate_tickets
from scopegate.engines.elasticsearch_node import ElasticsearchNode, ESNodeConfig
from scopegate.errors import EngineNodeError
from scopegate.scope import Scope
from unavailable import engine_unavailable

REPO = Path(__file__).resolve().parents[3]


def restart_node() -> ElasticsearchNode:
    state_dir = REPO / ".cache" / "elasticsearch-node-restart-pytest"
    if ElasticsearchNode().blocked_folder(state_dir) is not None:  # a clone inside a 0700 folder
        digest = hashlib.sha256(str(REPO).encode()).hexdigest()[:12]
        state_dir = Path(tempfile.gettempdir()) / f"scopegate-elasticsearch-restart-{digest}"
    return ElasticsearchNode(ESNodeConfig(state_dir=state_dir))


@pytest.mark.elasticsearch
async def test_a_single_node_holding_an_index_with_a_replica_restarts() -> None:
    node = restart_node()
    try:
        url = node.start(clean=True, timeout_s=240)
    except EngineNodeError as exc:
        engine_unavailable("Elasticsearch node", str(exc))
    try:
        # As the README makes it: no replicas setting, so the engine's default (1) applies.
        backend = ElasticsearchBackend(unique_spec(), url, server_major=8, analysis="standard")
        try:
            report = await backend.ingest(generate_tickets(per_tenant=20, tenants=("acme", "globex")))
            assert report.failed == 0
            index = (await backend.alias_targets(backend.names.read_alias))[0]
        finally:
            await backend.close()
        with httpx.Client(timeout=30) as client:
            settings = client.get(f"{url}/{index}/_settings").json()[index]["settings"]["index"]
            assert settings["number_of_replicas"] == "1"
            assert client.get(f"{url}/_cluster/health").json()["status"] == "yellow"  # for good, on one node

        assert node.stop()
        url = node.start(timeout_s=150)  # was: waited for green, timed out, killed the node
        assert node.pid() is not None and node.status().health == "yellow"
        backend = ElasticsearchBackend(backend.spec, url, server_major=8, analysis="standard")
        try:
            assert await backend.count(Scope("acme")) == 20  # the data survived the restart
        finally:
            await backend.close()
    finally:
        node.stop()
