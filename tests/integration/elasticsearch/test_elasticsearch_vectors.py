"""Vector and hybrid retrieval on the real Elasticsearch 8.19 node: dense_vector + knn with filter.

The integ-test distribution has no x-pack, but dense_vector and the knn search
option are in the server itself; the scope filter is part of the knn clause.
"""

from __future__ import annotations

import dataclasses

import pytest
from elasticsearch_helpers import make_backend, unique_spec

from scopegate.context import CallContext
from scopegate.errors import ConfigError
from scopegate.search.tools import SearchTool
from scopegate_lab.encoders import bag_of_words_encoder
from scopegate_lab.encoders import ticket as doc

pytestmark = pytest.mark.elasticsearch


async def test_scope_is_inside_the_knn_search(es_url: str) -> None:
    spec = unique_spec(retrieval="vector")
    backend = make_backend(spec, es_url, encoder=bag_of_words_encoder())
    corpus = [
        *(doc(i, "big", f"refund apple pay wallet {i}") for i in range(1000)),
        *(doc(i, "small", f"kernel panic boot {i % 7}", product="identity") for i in range(50)),
    ]
    try:
        assert (await backend.ingest(corpus, batch_size=500)).indexed == len(corpus)
        tool = SearchTool(spec, backend)
        small = (await tool.run({"query": "refund apple pay wallet"}, CallContext(state={"tenant_id": "small"}))).result
        assert small["status"] == "ok" and (small["total"], small["total_relation"]) == (50, "eq")
        assert all(r["ticket_id"].startswith("small-") for r in small["results"]) and len(small["results"]) == 5
        big = (await tool.run({"query": "refund apple pay wallet"}, CallContext(state={"tenant_id": "big"}))).result
        # HNSW over these near-duplicate bag-of-words vectors may return fewer than k neighbours;
        # the total must then still say "at least", never "exactly" a count below the tenant's 1,000.
        assert big["total_relation"] == "gte" and 0 < big["total"] <= spec.retrieval_depth
        hybrid_spec = dataclasses.replace(spec, retrieval="hybrid")
        hybrid = make_backend(hybrid_spec, es_url, encoder=bag_of_words_encoder())
        out = (
            await SearchTool(hybrid_spec, hybrid).run({"query": "panic"}, CallContext(state={"tenant_id": "small"}))
        ).result
        assert out["total"] == 50 and all(r["ticket_id"].startswith("small-") for r in out["results"])
        await hybrid.close()
        other = make_backend(spec, es_url, encoder=bag_of_words_encoder("bow-v2"))
        with pytest.raises(ConfigError, match="bow-32"):
            await other.ensure_index()
        await other.close()
    finally:
        await backend.drop()
        await backend.close()
