"""Helpers for the Elasticsearch integration tests (imported by module name)."""

from __future__ import annotations

import dataclasses
import functools
import uuid
from typing import Any

import httpx

from scopegate.backends import dsl
from scopegate.backends.elasticsearch import ElasticsearchBackend
from scopegate.demo.corpus import ticket_spec
from scopegate.search.spec import SearchSpec


def unique_spec(base: SearchSpec | None = None, **changes: Any) -> SearchSpec:
    spec = base or ticket_spec()
    return dataclasses.replace(spec, index=f"es-{uuid.uuid4().hex[:10]}", **changes)


async def engine_terms(url: str, index: str, texts: list[str]) -> list[set[str]]:
    """Terms of each text as the index's own analyser makes them (ground truth for totals)."""
    out = []
    async with httpx.AsyncClient(timeout=30) as client:
        for text in texts:
            resp = await client.post(f"{url}/{index}/_analyze", json={"analyzer": dsl.ANALYZER, "text": text})
            resp.raise_for_status()
            out.append({t["token"] for t in resp.json()["tokens"]})
    return out


@functools.cache
def server_major(url: str) -> int:
    """The node's major version (8 by default, 9 under ``SCOPEGATE_ELASTICSEARCH_VERSION=9``): the tests ask
    for its own REST compatibility, so a 9.x node is tested natively, not in compatibility mode 8."""
    resp = httpx.get(f"{url}/_nodes/_local", params={"filter_path": "nodes.*.version"}, timeout=30)
    resp.raise_for_status()
    (node,) = resp.json()["nodes"].values()
    return int(str(node["version"]).split(".", 1)[0])


def make_backend(spec: SearchSpec, url: str, **kw: Any) -> ElasticsearchBackend:
    """The integ-test distribution has no analysis-common module: core ``standard`` analysis, no replicas."""
    return ElasticsearchBackend(spec, url, server_major=server_major(url), analysis="standard", replicas=0, **kw)
