"""The local cluster manager without JVMs: planning, member settings, state file; and the load audit."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scopegate.errors import EngineNodeError
from scopegate_lab.cluster import ClusterConfig, LocalCluster, free_ports
from scopegate_lab.load import CallRecord, audit, between


def test_free_ports_are_distinct() -> None:
    ports = free_ports(8)
    assert len(set(ports)) == 8 and all(1024 < p < 65536 for p in ports)


def test_plan_members_ports_and_settings(tmp_path: Path) -> None:
    cluster = LocalCluster(ClusterConfig(state_dir=tmp_path, data_nodes=3, coordinating_nodes=1, heap="384m"))
    assert not cluster.exists()
    with pytest.raises(EngineNodeError, match="start it first"):
        _ = cluster.members
    members = cluster._plan()
    assert [(m.name, m.role) for m in members] == [
        ("data-1", "data"),
        ("data-2", "data"),
        ("data-3", "data"),
        ("coord-1", "coordinating"),
    ]
    ports = [p for m in members for p in (m.http_port, m.transport_port)]
    assert len(set(ports)) == 8
    state = json.loads((tmp_path / "cluster.json").read_text())
    assert state["engine"] == "opensearch" and len(state["members"]) == 4
    # A fresh manager on the same folder sees the same plan (a killed node restarts on its old ports).
    again = LocalCluster(ClusterConfig(state_dir=tmp_path))
    assert again.members == members and again.data_urls == [m.url for m in members[:3]]
    assert again.coordinating_urls == [members[3].url]

    data = again.node("data-2")
    settings = list(data.config.extra_settings)  # type: ignore[attr-defined]
    seeds = ",".join(f"127.0.0.1:{m.transport_port}" for m in members[:3])
    assert "discovery.type=zen" in settings
    assert f"discovery.seed_hosts=[{seeds}]" in settings
    assert "cluster.initial_cluster_manager_nodes=[data-1,data-2,data-3]" in settings
    assert "node.roles=[cluster_manager,data,ingest]" in settings
    assert f"transport.port={members[1].transport_port}" in settings and "node.name=data-2" in settings
    assert f"cluster.name={again.config.cluster_name}" in settings
    coord = list(again.node("coord-1").config.extra_settings)  # type: ignore[attr-defined]
    assert "node.roles=[]" in coord
    assert data.config.state_dir == tmp_path / "data-2" and data.config.heap == "384m"
    with pytest.raises(EngineNodeError, match="no cluster member"):
        again.node("data-9")
    assert again.stop() is False  # nothing runs


def test_cluster_names_differ_per_folder(tmp_path: Path) -> None:
    a = ClusterConfig(state_dir=tmp_path / "a")
    b = ClusterConfig(state_dir=tmp_path / "b")
    assert a.cluster_name != b.cluster_name
    with pytest.raises(EngineNodeError):
        ClusterConfig(state_dir=tmp_path, data_nodes=0)
    with pytest.raises(EngineNodeError, match="unknown engine"):
        ClusterConfig(state_dir=tmp_path, engine="solr")  # type: ignore[arg-type]


def test_elasticsearch_member_settings(tmp_path: Path) -> None:
    cluster = LocalCluster(ClusterConfig(engine="elasticsearch", state_dir=tmp_path, data_nodes=2))
    cluster._plan()
    coord = cluster.node("coord-1")
    settings = list(coord.config.settings)  # type: ignore[attr-defined]
    assert "cluster.initial_master_nodes=[data-1,data-2]" in settings and "node.roles=[]" in settings
    assert coord.config.dist == tmp_path / "shared" / "dist" / f"elasticsearch-{coord.config.version}"
    with pytest.raises(EngineNodeError, match="holds a elasticsearch cluster"):
        _ = LocalCluster(ClusterConfig(engine="opensearch", state_dir=tmp_path)).members


def record(label: str, tenant: str, *, started: float, status: str = "ok", **kw: object) -> CallRecord:
    defaults: dict[str, object] = {
        "args": {},
        "latency_s": 0.1,
        "error_code": None,
        "partial": False,
        "total": None,
        "ids": (),
        "expected_total": None,
        "expect_found": False,
    }
    defaults.update(kw)
    return CallRecord(label=label, tenant=tenant, started=started, status=status, **defaults)  # type: ignore[arg-type]


def test_audit_flags_every_broken_invariant() -> None:
    owner = {"A-1": "a", "B-1": "b"}.get
    records = [
        record("s", "a", started=0, total=5, expected_total=5, ids=("A-1",)),
        record("s", "a", started=1, total=4, expected_total=5, partial=True),  # partial, fewer: honest
        record("s", "a", started=2, total=4, expected_total=5),  # complete but short: dishonest
        record("s", "a", started=3, total=6, expected_total=5, partial=True),  # more than exists: dishonest
        record("s", "a", started=4, ids=("B-1",)),  # another tenant's id
        record("f", "a", started=5, status="error", error_code="NOT_FOUND", expect_found=True),
        record("f", "a", started=6, status="error", error_code="SEARCH_UNAVAILABLE", latency_s=9.0),
    ]
    result = audit(records, owner, budget_s=4.0)
    assert result.as_dict() == {
        "calls": 7,
        "ok": 5,
        "errors": {"NOT_FOUND": 1, "SEARCH_UNAVAILABLE": 1},
        "partial": 2,
        "cross_tenant": 1,
        "dishonest_totals": 2,
        "false_not_found": 1,
        "over_budget": 1,
        "max_latency_s": 9.0,
    }
    assert [r.started for r in between(records, 1, 4)] == [1, 2, 3]
    assert [r.started for r in between(records, 5, 7, whole=True)] == [5]  # the 9 s call ends after 7
    assert [r.started for r in between(records, 0, 7, label="f")] == [5, 6]
