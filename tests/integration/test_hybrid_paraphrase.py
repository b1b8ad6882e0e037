"""Zero-result check: paraphrases that share no term with their ticket find it through hybrid search.

The real encoder (all-MiniLM-L6-v2 int8 from the ``vector`` extra, run offline
with onnxruntime) embeds a small built-in set of tickets among generated
distractors. Each paraphrase is checked to share no analysed term with its
target, so keyword search cannot find the target; hybrid search must return it
on the first page (5 hits), through the ordinary search tool, with the tenant
from state. Measured ranks: 1, 1, 3, 1, 1 and 5 (the last paraphrase's "login" and
"delivered" match other tickets by keyword, which convex fusion rewards).
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest

from scopegate.backends.embedded import EmbeddedBackend
from scopegate.context import CallContext
from scopegate.demo.corpus import generate_tickets, ticket_spec
from scopegate.search.analysis import analyze
from scopegate.search.tools import SearchTool

pytest.importorskip("onnxruntime", reason="needs the vector extra (pip install -e '.[vector]')")

TICKETS = [
    (
        "P-1",
        "Customer locked out after too many wrong passwords",
        "The account was suspended following five failed login attempts; the user cannot get in.",
    ),
    ("P-2", "Invoice shows the wrong amount", "The bill for March lists 120 EUR instead of 100 EUR."),
    ("P-3", "Mobile app crashes on startup", "The Android application closes immediately when opened."),
    ("P-4", "Refund not received", "The money returned for order 1234 has not arrived in the bank account yet."),
    ("P-5", "Package delivered to the wrong address", "The courier left the parcel at a neighbour's house."),
    ("P-6", "Two-factor codes do not arrive by SMS", "The verification text message never shows up on the phone."),
]
PARAPHRASES = [
    ("unable to access profile, blocked", "P-1"),
    ("charged incorrectly on monthly statement", "P-2"),
    ("phone program quits right after launching", "P-3"),
    ("still waiting for my reimbursement", "P-4"),
    ("shipment dropped at incorrect location", "P-5"),
    ("login confirmation digits not delivered", "P-6"),
]


def test_paraphrases_share_no_term_with_their_target() -> None:
    texts = {tid: f"{subject} {body}" for tid, subject, body in TICKETS}
    for query, target in PARAPHRASES:
        assert not set(analyze(query)) & set(analyze(texts[target])), (query, target)


@pytest.fixture(scope="module")
def paraphrase_index(tmp_path_factory: pytest.TempPathFactory) -> EmbeddedBackend:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing may come from a hub: the model ships in a package
    spec = dataclasses.replace(ticket_spec(), retrieval="hybrid")
    backend = EmbeddedBackend(spec, Path(tmp_path_factory.mktemp("paraphrase")) / "idx")
    records = [
        {"ticket_id": tid, "tenant_id": "acme", "product": "identity", "status": "open", "subject": s, "body": b}
        for tid, s, b in TICKETS
    ]
    distractors = [t for t in generate_tickets(per_tenant=10) if t["tenant_id"] == "acme"]
    backend.ingest_sync([*records, *distractors])
    return backend


@pytest.mark.parametrize(("query", "target"), PARAPHRASES)
async def test_hybrid_finds_what_keywords_cannot(paraphrase_index: EmbeddedBackend, query: str, target: str) -> None:
    ctx = CallContext(state={"tenant_id": "acme"})
    hybrid = (await SearchTool(paraphrase_index.spec, paraphrase_index).run({"query": query}, ctx)).result
    keyword_spec = dataclasses.replace(paraphrase_index.spec, retrieval="keyword")
    keyword_backend = EmbeddedBackend(keyword_spec, paraphrase_index.path)
    keyword = (await SearchTool(keyword_spec, keyword_backend).run({"query": query}, ctx)).result
    assert keyword["status"] == "ok" and target not in [r["ticket_id"] for r in keyword["results"]]
    assert hybrid["status"] == "ok"
    ranked = [r["ticket_id"] for r in hybrid["results"]]
    assert target in ranked, (query, ranked)
    print(f"\n{query!r}: target {target} at rank {ranked.index(target) + 1} of {ranked}")
    assert hybrid["total"] >= 1 and hybrid["untrusted_fields"]
