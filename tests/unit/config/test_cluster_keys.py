"""The cluster keys of a remote ``backends`` entry reach the backend the Python API builds."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from scopegate.backends.opensearch import OpenSearchBackend
from scopegate.config import ConfigValidationError
from scopegate.config.builder import build_search_backend
from scopegate.config.loader import parse_config


@pytest.fixture
def config(base: dict[str, Any]) -> Callable[..., Any]:
    """The minimal config of conftest.py, its tool on an OpenSearch cluster entry with ``keys``."""

    def make(**keys: Any) -> Any:
        base["backends"] = {"cluster": {"type": "opensearch", "url": ["http://127.0.0.1:9", "http://127.0.0.1:10"]}}
        base["backends"]["cluster"].update(keys)
        base["search_tools"][0]["backend"] = "cluster"
        return parse_config(base)

    return make


async def test_cluster_keys_build_the_backend(config: Callable[..., Any]) -> None:
    cfg = config(
        shards=3,
        replicas=1,
        routing="tenant",
        analysis="standard",
        agent="support",
        alias_filter={"product": ["payments", "billing"]},
        coordinating_url="http://127.0.0.1:11",
        dead_timeout_s=1.0,
    )
    backend = build_search_backend(cfg.search_tools[0], cfg)
    assert isinstance(backend, OpenSearchBackend)
    try:
        assert (backend.shards, backend.replicas, backend.routing, backend.analysis) == (3, 1, "tenant", "standard")
        assert backend.search_target == "tickets-read-support"
        assert backend.alias_filter == {"bool": {"filter": [{"terms": {"product": ["billing", "payments"]}}]}}
        assert [h["port"] for h in backend.search_client.transport.hosts] == [11]
        assert [h["port"] for h in backend.client.transport.hosts] == [9, 10]
        assert backend.client.transport.kwargs["dead_timeout"] == 1.0
    finally:
        await backend.close()


def test_defaults_keep_the_single_node_shape(config: Callable[..., Any]) -> None:
    cfg = config()
    (entry,) = cfg.backends.values()
    assert (entry.routing, entry.agent, entry.coordinating_url, entry.analysis) == ("none", None, None, "scopegate_en")


@pytest.mark.parametrize(
    ("keys", "where"),
    [
        ({"alias_filter": {"product": "billing"}}, "alias_filter needs agent"),
        ({"routing": "shard"}, "routing"),
        ({"agent": "Support Bot"}, "agent"),
        ({"coordinating_url": "ftp://x"}, "coordinating_url"),
        ({"dead_timeout_s": 0}, "dead_timeout_s"),
    ],
)
def test_bad_cluster_keys_are_named(config: Callable[..., Any], keys: dict[str, Any], where: str) -> None:
    with pytest.raises(ConfigValidationError, match=where):
        config(**keys)
