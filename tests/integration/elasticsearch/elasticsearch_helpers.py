"""Helpers for the Elasticsearch integration tests (imported by module name)."""

from __future__ import annotations

import dataclasses
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


def make_backend(spec: SearchSpec, url: str, **kw: Any) -> ElasticsearchBackend:
    """The integ-test distribution has no analysis-common module: core ``standard`` analysis, no replicas."""
    return ElasticsearchBackend(spec, url, server_major=8, analysis="standard", replicas=0, **kw)
