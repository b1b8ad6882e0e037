"""OpenSearchBackend against the real local node: ingest, totals, filters, paging, fetch, index lifecycle."""

from __future__ import annotations

from collections import Counter
from typing import Any

import httpx
import pytest
from opensearch_helpers import expected_total, query, unique_spec

from scopegate.backends import dsl
from scopegate.backends.opensearch import OpenSearchBackend
from scopegate.demo.corpus import PRODUCTS, TENANTS
from scopegate.errors import MissingIndexError
from scopegate.scope import Scope

QUERIES = [
    "Apple Pay refund failed",
    "E4012 card_declined",
    "payout delayed bank account",
    "invoice proration",
    "PSP-502 processor_unavailable",
    "selfie verification stuck",
    "charged twice",
]

pytestmark = pytest.mark.opensearch


async def test_ingest_counts_every_tenant(os_backend: OpenSearchBackend, corpus: list[dict[str, Any]]) -> None:
    per_tenant = Counter(d["tenant_id"] for d in corpus)
    for tenant in TENANTS:
        assert await os_backend.count(Scope(tenant)) == per_tenant[tenant]
    assert await os_backend.count(Scope("nobody")) == 0


@pytest.mark.parametrize("text", QUERIES)
async def test_totals_are_exact_and_per_tenant(
    os_backend: OpenSearchBackend, corpus: list[dict[str, Any]], text: str
) -> None:
    for tenant in TENANTS[:3]:
        result = await os_backend.search(query(os_backend.spec, text, tenant))
        assert result.total_relation == "eq"
        assert result.total == expected_total(corpus, text, tenant, {})
        assert not result.partial
        assert all(h.doc_id.startswith(tenant[:3].upper()) for h in result.hits)


@pytest.mark.parametrize("product", PRODUCTS)
async def test_filters_run_inside_the_engine(
    os_backend: OpenSearchBackend, corpus: list[dict[str, Any]], product: str
) -> None:
    text = "refund failed payout invoice verification"
    q = query(os_backend.spec, text, "globex", (("product", product), ("status", "open")), limit=50)
    result = await os_backend.search(q)
    assert result.total == expected_total(corpus, text, "globex", {"product": product, "status": "open"})
    assert result.hits, "the corpus has matching tickets for every product"
    assert all(h.fields["product"] == product and h.fields["status"] == "open" for h in result.hits)


async def test_source_holds_only_shaper_fields(os_backend: OpenSearchBackend) -> None:
    result = await os_backend.search(query(os_backend.spec, "refund", "acme"))
    assert result.hits
    for hit in result.hits:
        assert set(hit.fields) <= set(os_backend.spec.hit_source_fields())
        assert hit.fields["ticket_id"] == hit.doc_id
    assert result.terms == ("refund",)


async def test_small_track_total_hits_gives_at_least(
    os_backend: OpenSearchBackend, corpus: list[dict[str, Any]]
) -> None:
    exact = expected_total(corpus, "refund", "acme", {})
    assert exact > 25
    result = await os_backend.search(query(os_backend.spec, "refund", "acme", track_total_up_to=25))
    assert (result.total, result.total_relation) == (25, "gte")
    assert len(result.hits) == os_backend.spec.page_size


async def test_pages_are_disjoint_and_stable(os_backend: OpenSearchBackend) -> None:
    pages = []
    for page in (1, 2, 3):
        result = await os_backend.search(query(os_backend.spec, "refund failed", "hooli", page=page))
        pages.append([h.doc_id for h in result.hits])
    flat = [doc for page in pages for doc in page]
    assert len(flat) == len(set(flat)) == 15
    again = await os_backend.search(query(os_backend.spec, "refund failed", "hooli", page=2))
    assert [h.doc_id for h in again.hits] == pages[1]


async def test_fetch_by_id_enforces_scope(os_backend: OpenSearchBackend, corpus: list[dict[str, Any]]) -> None:
    doc = next(d for d in corpus if d["tenant_id"] == "acme")
    got = await os_backend.get(doc["ticket_id"], Scope("acme"))
    assert got is not None
    assert got["body"] == doc["body"] and got["tenant_id"] == "acme"
    assert await os_backend.get(doc["ticket_id"], Scope("globex")) is None
    assert await os_backend.get(doc["ticket_id"] + "*", Scope("acme")) is None
    assert await os_backend.get("NOPE-1", Scope("acme")) is None


async def test_analyzer_matches_the_embedded_one(
    os_backend: OpenSearchBackend, opensearch_url: str, corpus: list[dict[str, Any]]
) -> None:
    """The engine-side scopegate_en analyser and the local tantivy one agree on the corpus."""
    index = (await os_backend.generation()).split("#")[0]
    samples = [d["subject"] + " " + d["body"] for d in corpus[::97]] + [
        'tenant_id:* OR "quoted" Ünïcödé café naïve E4012 card_declined PSP-502 customers\' x' + "y" * 70,
        # Stems that keep their double (dsl.KEPT_DOUBLE_STEMS), and words either side of that rule.
        " ".join(stem + suffix for stem in dsl.KEPT_DOUBLE_STEMS for suffix in ("", *dsl.KEPT_DOUBLE_SUFFIXES)),
        "Adding ADDED adds readding padding hopping stopped inning inned odder egg eggs offing offs",
    ]
    async with httpx.AsyncClient(timeout=10) as client:
        for text in samples:
            resp = await client.post(
                f"{opensearch_url}/{index}/_analyze", json={"analyzer": dsl.ANALYZER, "text": text}
            )
            engine_terms = [t["token"] for t in resp.json()["tokens"]]
            assert engine_terms == os_backend.analyze(text), text


async def test_missing_index_is_a_named_error(opensearch_url: str) -> None:
    spec = unique_spec()
    backend = OpenSearchBackend(spec, opensearch_url)
    try:
        with pytest.raises(MissingIndexError) as err:
            await backend.search(query(spec, "refund", "acme"))
        assert err.value.name == f"{spec.index}-read"
        assert err.value.retryable is False
        with pytest.raises(MissingIndexError):
            await backend.get("ACM-00001", Scope("acme"))
        with pytest.raises(MissingIndexError):
            await backend.generation()
    finally:
        await backend.close()


async def test_ingest_reports_per_document_errors(opensearch_url: str, corpus: list[dict[str, Any]]) -> None:
    spec = unique_spec()
    backend = OpenSearchBackend(spec, opensearch_url)
    seen: list[int] = []
    docs: list[dict[str, Any]] = [dict(d) for d in corpus[:30]]
    docs[3]["ticket_id"] = ""  # refused before sending
    docs[7] = {k: v for k, v in docs[7].items() if k != "tenant_id"}  # refused before sending
    docs[11]["product"] = "p" * 40_000  # a keyword term over Lucene's 32766-byte limit: the engine refuses it
    try:
        report = await backend.ingest(docs, batch_size=10, progress=seen.append)
        assert report.indexed == 27
        assert report.failed == 3
        ids = [doc_id for doc_id, _ in report.errors]
        assert ids == ["#4", docs[7]["ticket_id"], docs[11]["ticket_id"]]
        assert "missing tenant_id" in report.errors[1][1]
        assert report.errors[2][1].startswith("illegal_argument_exception")
        assert sum(seen) == 27 and len(seen) == 3
        assert await backend.count(Scope("acme")) == 27
    finally:
        await backend.drop()
        await backend.close()


async def test_upsert_delete_and_generation(opensearch_url: str, corpus: list[dict[str, Any]]) -> None:
    spec = unique_spec()
    backend = OpenSearchBackend(spec, opensearch_url)
    docs = [d for d in corpus if d["tenant_id"] == "stark"][:20]
    try:
        await backend.ingest(docs)
        g1 = await backend.generation()
        changed = {**docs[0], "subject": "zebra crossing unique", "body": "zebra"}
        await backend.ingest([changed])
        g2 = await backend.generation()
        assert g1 != g2
        assert await backend.count(Scope("stark")) == 20
        hits = (await backend.search(query(spec, "zebra", "stark"))).hits
        assert [h.doc_id for h in hits] == [docs[0]["ticket_id"]]
        assert await backend.delete([docs[0]["ticket_id"], docs[1]["ticket_id"]], tenant=docs[0]["tenant_id"]) == 2
        assert await backend.get(docs[0]["ticket_id"], Scope("stark")) is None
        assert await backend.count(Scope("stark")) == 18
        assert await backend.generation() != g2
    finally:
        await backend.drop()
        await backend.close()


async def test_reindex_swaps_alias_atomically(opensearch_url: str, corpus: list[dict[str, Any]]) -> None:
    spec = unique_spec()
    backend = OpenSearchBackend(spec, opensearch_url)
    docs = [d for d in corpus if d["tenant_id"] == "umbrella"][:50]
    try:
        await backend.ingest(docs)
        before = await backend.search(query(spec, "refund", "umbrella"))
        assert (await backend.generation()).startswith(f"{spec.index}-v1#")
        new_index = await backend.reindex()
        assert new_index == f"{spec.index}-v2"
        assert (await backend.generation()).startswith(f"{spec.index}-v2#")
        after = await backend.search(query(spec, "refund", "umbrella"))
        assert after.total == before.total
        assert [h.doc_id for h in after.hits] == [h.doc_id for h in before.hits]
        # Reindex from supplied documents (e.g. after a mapping change); old index deleted.
        assert await backend.reindex(docs[:10]) == f"{spec.index}-v3"
        assert await backend.count(Scope("umbrella")) == 10
        # Writes after the swap go to the new index through the alias.
        await backend.ingest(docs[10:12])
        assert await backend.count(Scope("umbrella")) == 12
    finally:
        await backend.drop()
        await backend.close()
