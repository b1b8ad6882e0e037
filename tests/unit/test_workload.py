"""The generated benchmark workload: deterministic, shaped like the real corpora, queries from held-out text."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest

from scopegate.search.analysis import unique_terms
from scopegate_lab.workload import (
    CorpusSettings,
    SourceProfile,
    TicketFactory,
    generate_corpus,
    make_queries,
    read_corpus,
    read_queries,
    tenants,
    workload_spec,
)
from scopegate_lab.workload.sources import ConfigError, find_ticket_data
from scopegate_lab.workload.tickets import MAX_BODY_CHARS, MIN_BODY_CHARS


@pytest.fixture(scope="module")
def profile() -> SourceProfile:
    try:
        find_ticket_data()
    except ConfigError as exc:
        pytest.skip(f"shared data not available: {exc}")
    return SourceProfile.load()


def test_tickets_depend_only_on_seed_and_position(profile: SourceProfile) -> None:
    factory = TicketFactory(profile, seed=7)
    second_chunk = list(factory.tickets(10_000, 10_004))  # each chunk of 10,000 has its own generator
    assert list(TicketFactory(profile, seed=7).tickets(10_000, 10_004)) == second_chunk
    assert list(factory.tickets(0, 12))[5:8] == list(factory.tickets(5, 8))
    assert list(TicketFactory(profile, seed=8).tickets(10_000, 10_004)) != second_chunk


def test_tickets_look_like_the_real_corpora(profile: SourceProfile) -> None:
    docs = list(TicketFactory(profile).tickets(0, 3_000))
    lengths = sorted(len(d["body"]) for d in docs)
    assert lengths[0] >= MIN_BODY_CHARS and lengths[-1] <= MAX_BODY_CHARS
    assert 800 < statistics.median(lengths) < 4_000 and lengths[int(0.99 * len(lengths))] > 15_000
    threads = sum(1 for d in docs if "wrote:\n>" in d["body"])
    assert 0.2 < threads / len(docs) < 0.45
    assert sum(1 for d in docs if "Exception" in d["body"] or "Error" in d["body"]) > len(docs) * 0.15
    spec = workload_spec()
    for doc in docs[:200]:
        assert set(doc) == set(spec.stored_fields())
        for f in spec.filters:
            assert doc[f.name] in f.allowed
        assert doc["ticket_id"].startswith(doc["tenant_id"] + "-")
    assert len({d["ticket_id"] for d in docs}) == len(docs)


def test_tenant_sizes_are_zipf_skewed() -> None:
    shares = [t.share for t in tenants(40)]
    assert len(shares) == 40 and abs(sum(shares) - 1) < 1e-9
    assert shares == sorted(shares, reverse=True)
    assert 0.2 < shares[0] < 0.25 and shares[0] / shares[-1] == pytest.approx(40)


def test_queries_are_distinct_held_out_text_with_filters_and_pages(profile: SourceProfile) -> None:
    queries = make_queries(profile, 2_400)
    assert len(queries) == 2_400 and len({q.query for q in queries}) >= 2_000
    assert {q.kind for q in queries} == {"subject", "code", "phrase"}
    assert {q.page for q in queries} == {1, 2, 3, 4}
    assert 0.35 < sum(1 for q in queries if q.filters) / len(queries) < 0.65
    assert all(unique_terms(q.query) and len(q.query) <= 200 for q in queries)
    spec = workload_spec()
    for q in queries:
        assert all(v in spec.filter_named(k).allowed for k, v in q.filters.items())  # type: ignore[union-attr]
    # Subjects come from held-out tickets, never from the titles documents are built from.
    trained = {" ".join(t.split())[:200] for p in profile.products.values() for t in p.titles}
    assert not [q.query for q in queries if q.kind == "subject" and q.query in trained][:5]
    assert make_queries(profile, 50) == queries[:50]  # deterministic


def test_a_corpus_folder_round_trips_and_is_reused(profile: SourceProfile, tmp_path: Path) -> None:
    settings = CorpusSettings(docs=2_500, shard_docs=1_000, queries=100)
    manifest = generate_corpus(tmp_path, settings, workers=0, profile=profile)
    assert [s["docs"] for s in manifest["shards"]] == [1_000, 1_000, 500]
    docs = list(read_corpus(tmp_path))
    assert docs == list(TicketFactory(profile).tickets(0, 2_500))
    assert list(read_corpus(tmp_path, 1_200)) == docs[:1_200]
    assert len(read_queries(tmp_path)) == 100
    assert json.loads((tmp_path / "spec.json").read_text())["id_field"] == "ticket_id"
    before = (tmp_path / "docs-00000.jsonl").stat().st_mtime_ns
    again = generate_corpus(tmp_path, settings, workers=0, profile=profile)
    assert (tmp_path / "docs-00000.jsonl").stat().st_mtime_ns == before and again["shards"] == manifest["shards"]
