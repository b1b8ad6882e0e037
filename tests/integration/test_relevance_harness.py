"""The relevance harness on a small collection it writes itself (BEIR and TREC layouts), embedded engine."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scopegate.backends.embedded import EmbeddedBackend
from scopegate.errors import ConfigError
from scopegate.relevance.collection import load_collection
from scopegate.relevance.harness import evaluate, relevance_spec, score_run

DOCS = [
    {"_id": "d1", "title": "Apple Pay refund failed", "text": "The refund to the wallet bounced with E4051."},
    {"_id": "d2", "title": "Login loop", "text": "Signing in loops back to the login page."},
    {"_id": "d3", "title": "Invoice wrong", "text": "The invoice total is wrong after the upgrade."},
    {"_id": "d4", "title": "Refund delayed", "text": "A refund takes longer than ten days."},
]
QUERIES = {"q1": "apple pay refund", "q2": "login page loops", "q3": "zebra xylophone"}
QRELS = {"q1": {"d1": 1}, "q2": {"d2": 1}, "q3": {"d3": 1}}


def write_beir(root: Path, parts: int = 1) -> Path:
    root.mkdir(parents=True)
    if parts == 1:
        (root / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in DOCS))
    else:
        for i in range(parts):
            chunk = DOCS[i::parts]
            (root / f"corpus.part{i + 1}of{parts}.jsonl").write_text("".join(json.dumps(d) + "\n" for d in chunk))
    (root / "queries.jsonl").write_text("".join(json.dumps({"_id": k, "text": v}) + "\n" for k, v in QUERIES.items()))
    (root / "qrels").mkdir()
    lines = ["query-id\tcorpus-id\tscore"] + [f"{q}\t{d}\t{r}" for q, ds in QRELS.items() for d, r in ds.items()]
    (root / "qrels" / "test.tsv").write_text("\n".join(lines) + "\n")
    return root


def write_trec(root: Path) -> Path:
    root.mkdir(parents=True)
    (root / "corpus.jsonl").write_text(
        "".join(json.dumps({"docno": d["_id"], "contents": d["text"]}) + "\n" for d in DOCS)
    )
    (root / "topics.test.tsv").write_text("".join(f"{k}\t{v}\n" for k, v in QUERIES.items()))
    (root / "qrels.test.txt").write_text("".join(f"{q} 0 {d} {r}\n" for q, ds in QRELS.items() for d, r in ds.items()))
    return root


async def test_beir_collection_through_the_tool(tmp_path: Path) -> None:
    collection = load_collection(write_beir(tmp_path / "beir"))
    backend = EmbeddedBackend(relevance_spec(), tmp_path / "idx")
    report = await evaluate(backend, collection, progress=False)
    assert report.documents == 4 and report.queries == 3
    assert report.top10_mismatches == 0 and not report.refused_queries
    # q1 and q2 find their document first; q3 matches nothing and counts as zero (not skipped).
    assert report.per_query_ndcg10 == {"q1": 1.0, "q2": 1.0, "q3": 0.0}
    assert report.metrics["nDCG@10"] == pytest.approx(2 / 3, abs=1e-4)
    assert report.metrics["R@100"] == pytest.approx(2 / 3, abs=1e-4)


async def test_split_corpus_and_trec_files_give_the_same_collection(tmp_path: Path) -> None:
    split = load_collection(write_beir(tmp_path / "split", parts=3))
    assert [d["id"] for d in split.documents()] == ["d1", "d4", "d2", "d3"]  # part 1, then 2, then 3
    trec = load_collection(write_trec(tmp_path / "trec"))
    assert trec.qrels == QRELS and trec.judged_queries() == sorted(QUERIES.items())
    assert [d["id"] for d in trec.documents()] == ["d1", "d2", "d3", "d4"]


def test_bad_collections_fail_loudly(tmp_path: Path) -> None:
    root = write_beir(tmp_path / "broken", parts=3)
    (root / "corpus.part2of3.jsonl").unlink()
    with pytest.raises(ConfigError, match="incomplete"):
        load_collection(root)
    with pytest.raises(ConfigError, match="does not exist"):
        load_collection(tmp_path / "nowhere")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ConfigError, match="qrels"):
        load_collection(empty)


def test_metrics_come_from_ir_measures() -> None:
    run = {"q1": {"d1": 2.0, "d4": 1.0}, "q2": {"__no_hit__": 0.0}}
    metrics, per_query = score_run({"q1": {"d1": 1}, "q2": {"d2": 1}}, run)
    assert metrics["nDCG@10"] == 0.5 and per_query == {"q1": 1.0, "q2": 0.0}
    assert metrics["AP@100"] == 0.5


def _tickets(*bodies: tuple[str, str, str]) -> list[dict[str, str]]:
    return [
        {"ticket_id": i, "tenant_id": "acme", "product": "payments", "status": "open", "subject": s, "body": b}
        for i, s, b in bodies
    ]


async def test_a_boosted_subject_no_longer_beats_a_body_matching_every_term(tmp_path: Path) -> None:
    """The defect of issue 14: dis_max without tie-breaker let a short boosted subject win on one term."""
    import dataclasses

    from scopegate.demo.corpus import ticket_spec
    from scopegate.scope import Scope
    from scopegate.search.model import SearchQuery

    docs = _tickets(
        ("title-only", "Refund failed", "A customer wrote in about an order placed last week and its delivery date."),
        ("body-rich", "Customer question", "The refund failed and the refund was declined, refund not issued."),
        *((f"other-{i}", f"Other {i}", "Printer jams and paper trays, refund policy, failed jobs.") for i in range(30)),
    )
    query = SearchQuery("refund failed declined issued", Scope("acme"), (), 0, 5, 10_000, 1.0, 2.5)
    order = {}
    for combination in ("combined_fields", "best_fields"):
        spec = dataclasses.replace(ticket_spec(), field_combination=combination)
        backend = EmbeddedBackend(spec, tmp_path / combination)
        backend.ingest_sync(docs)
        order[combination] = [h.doc_id for h in (await backend.search(query)).hits]
    assert order["combined_fields"][0] == "body-rich"
    assert order["best_fields"][0] == "title-only"  # the old behaviour, still available on request


async def test_repeated_query_words_keep_their_weight(tmp_path: Path) -> None:
    from scopegate.demo.corpus import ticket_spec
    from scopegate.scope import Scope
    from scopegate.search.model import SearchQuery

    backend = EmbeddedBackend(ticket_spec(), tmp_path / "idx")
    backend.ingest_sync(_tickets(("A", "x", "refund"), ("B", "x", "printer"), ("C", "x", "other words")))
    query = SearchQuery("refund refund printer", Scope("acme"), (), 0, 5, 10_000, 1.0, 2.5)
    hits = {h.doc_id: h.score for h in (await backend.search(query)).hits}
    # Equal idf and length: the word said twice weighs twice (the old unique_terms query tied them).
    assert hits["A"] == pytest.approx(2 * hits["B"], rel=1e-3)


def test_changing_a_weight_under_combined_fields_needs_a_reingest(tmp_path: Path) -> None:
    import dataclasses

    from scopegate.demo.corpus import ticket_spec
    from scopegate.search.spec import TextField

    EmbeddedBackend(ticket_spec(), tmp_path / "idx").ingest_sync(_tickets(("A", "x", "refund")))
    reweighted = dataclasses.replace(ticket_spec(), text_fields=(TextField("subject", 2.0), TextField("body")))
    with pytest.raises(ConfigError, match="different mapping"):
        EmbeddedBackend(reweighted, tmp_path / "idx")
