"""A real local OpenSearch cluster for this folder: 3 data nodes + 1 coordinating-only node, started once.

The folder owns the cluster (the failure tests kill and restart its nodes), in
``.cache/opensearch-cluster-pytest`` of this checkout; it is a package, so the
``scope="package"`` cluster stops when its last test is done, not at the end of
the whole session.
Heap per node: ``SCOPEGATE_CLUSTER_HEAP`` (default 384m). No cluster: a failure
under ``CI``, a skip that says why otherwise. ``SCOPEGATE_CLUSTER_KEEP=1`` (local
iteration only) reuses a running cluster and leaves it running afterwards.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from scopegate.demo.corpus import generate_tickets
from scopegate.errors import EngineNodeError
from scopegate_lab.cluster import ClusterConfig, LocalCluster
from unavailable import engine_unavailable

REPO = Path(__file__).resolve().parents[3]
PER_TENANT = 120


def no_cluster(reason: str) -> None:
    engine_unavailable("OpenSearch cluster", reason)


@pytest.fixture(scope="package")
def cluster() -> Iterator[LocalCluster]:
    """Started before the first test of this folder, stopped after its last one (pass or fail), and checked:
    a JVM still running from the cluster's folder after the stop fails the teardown (and is killed)."""
    config = ClusterConfig(
        state_dir=REPO / ".cache" / "opensearch-cluster-pytest",
        data_nodes=3,
        coordinating_nodes=1,
        heap=os.environ.get("SCOPEGATE_CLUSTER_HEAP", "384m"),
    )
    local = LocalCluster(config)
    keep = os.environ.get("SCOPEGATE_CLUSTER_KEEP") == "1" and not os.environ.get("CI")
    try:
        try:
            local.start(clean=not keep, timeout_s=300)
        except EngineNodeError as exc:
            no_cluster(str(exc))
        yield local
    finally:
        if not keep:
            local.stop()
            strays = local.stray_pids()
            assert not strays, f"cluster processes still running after stop: {strays}"


@pytest.fixture(scope="session")
def cluster_corpus() -> list[dict[str, Any]]:
    return list(generate_tickets(per_tenant=PER_TENANT))


@pytest.fixture(scope="session")
def owner_of(cluster_corpus: list[dict[str, Any]]) -> dict[str, str]:
    """Ground truth: the tenant of every ticket id."""
    return {doc["ticket_id"]: doc["tenant_id"] for doc in cluster_corpus}
