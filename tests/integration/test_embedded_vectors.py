"""Vector and hybrid retrieval on the embedded engine: scope inside the k-NN search, crash safety, model changes.

A deterministic FunctionEncoder (a hashed bag of words) stands in for the
model here so the tests are fast and exact; tests/integration/test_hybrid_paraphrase.py
runs the real MiniLM model.
"""

from __future__ import annotations

import dataclasses
import json
import textwrap
from pathlib import Path
from typing import Any

import pytest
from test_crash_safety import run_and_kill

from scopegate.backends.embedded import EmbeddedBackend
from scopegate.context import CallContext
from scopegate.demo.corpus import ticket_spec
from scopegate.errors import ConfigError
from scopegate.scope import Scope, document_key
from scopegate.search.spec import SearchSpec
from scopegate.search.tools import SearchTool
from scopegate.vector.encoder import FunctionEncoder
from scopegate_lab.encoders import bag_of_words_encoder
from scopegate_lab.encoders import ticket as doc


def encoder(model_id: str = "bow-32") -> FunctionEncoder:
    return bag_of_words_encoder(model_id)


def vector_spec(**overrides: Any) -> SearchSpec:
    return dataclasses.replace(ticket_spec(), retrieval="vector", **overrides)


async def test_small_tenant_gets_its_own_neighbours_and_an_honest_total(tmp_path: Path) -> None:
    spec = vector_spec()
    backend = EmbeddedBackend(spec, tmp_path / "idx", encoder=encoder())
    big = [doc(i, "big", f"refund apple pay wallet {i}") for i in range(3000)]
    small = [doc(i, "small", f"kernel panic boot {i}", product="identity") for i in range(50)]
    backend.ingest_sync([*big, *small], batch_size=1000)
    tool = SearchTool(spec, backend)
    out = (await tool.run({"query": "refund apple pay wallet"}, CallContext(state={"tenant_id": "small"}))).result
    # The query is far closer to every "big" doc, yet the small tenant gets its own 50, and only those.
    assert out["status"] == "ok"
    assert (out["total"], out["total_relation"]) == (50, "eq")
    assert all(r["ticket_id"].startswith("small-") for r in out["results"]) and len(out["results"]) == 5
    big_out = (await tool.run({"query": "refund apple pay wallet"}, CallContext(state={"tenant_id": "big"}))).result
    assert (big_out["total"], big_out["total_relation"]) == (spec.retrieval_depth, "gte")
    filtered = (
        await tool.run({"query": "kernel panic", "product": "payments"}, CallContext(state={"tenant_id": "small"}))
    ).result
    assert filtered["total"] == 0 and filtered["results"] == []
    none = (await tool.run({"query": "kernel panic"}, CallContext(state={"tenant_id": "nobody"}))).result
    assert none["total"] == 0


async def test_groups_are_applied_inside_the_vector_search(tmp_path: Path) -> None:
    spec = vector_spec(group_field="groups", scope_keys=dataclasses.replace(ticket_spec().scope_keys, groups="groups"))
    backend = EmbeddedBackend(spec, tmp_path / "idx", encoder=encoder())
    docs = [
        {**doc(i, "acme", f"vpn setup guide {i}"), "groups": ["eng"] if i % 2 else ["sales", "ops"]} for i in range(40)
    ]
    docs.append({**doc(99, "acme", "vpn setup guide"), "groups": []})
    backend.ingest_sync(docs)
    found, in_scope = backend.vectors.store.search(  # type: ignore[union-attr]
        encoder().encode(["vpn setup guide"])[0], Scope("acme", ("ops",)), (), 100, group_field=True
    )
    assert in_scope == 20
    assert {d for d, _ in found} == {f"acme-{i}" for i in range(0, 40, 2)}
    _, none = backend.vectors.store.search(encoder().encode(["vpn"])[0], Scope("acme"), (), 10, group_field=True)  # type: ignore[union-attr]
    assert none == 0


async def test_upsert_and_delete_replace_vectors_and_survive_reopen(tmp_path: Path) -> None:
    spec = vector_spec()
    path = tmp_path / "idx"
    backend = EmbeddedBackend(spec, path, encoder=encoder())
    backend.ingest_sync([doc(1, "acme", "printer jam"), doc(2, "acme", "printer jam tray")])
    backend.ingest_sync([doc(1, "acme", "password reset email")])  # upsert: the old vector dies
    backend.delete_sync(["acme-2"], tenant="acme")
    reopened = EmbeddedBackend(spec, path, encoder=encoder())
    store = reopened.vectors.store  # type: ignore[union-attr]
    assert store.live_count == 1 == reopened.count_sync()
    found, _ = store.search(encoder().encode(["password reset email\npassword reset email"])[0], Scope("acme"), (), 5)
    assert found[0][0] == "acme-1" and found[0][1] == pytest.approx(1.0, abs=1e-5)


async def test_model_change_is_detected_and_reembedding_fixes_it(tmp_path: Path) -> None:
    spec = vector_spec()
    path = tmp_path / "idx"
    EmbeddedBackend(spec, path, encoder=encoder("bow-v1")).ingest_sync([doc(1, "acme", "printer jam")])
    with pytest.raises(ConfigError, match="bow-v1"):
        EmbeddedBackend(spec, path, encoder=encoder("bow-v2"))
    fixed = EmbeddedBackend(spec, path, encoder=encoder("bow-v2"), reembed=True)
    assert fixed.vectors.store.stored_model_id == "bow-v2"  # type: ignore[union-attr]
    manifest = json.loads((path / "vectors" / "manifest.json").read_text())
    assert manifest["model_id"] == "bow-v2"
    EmbeddedBackend(spec, path, encoder=encoder("bow-v2"))  # opens cleanly now
    # A keyword index switched to hybrid has documents without vectors: also detected.
    keyword_path = tmp_path / "kw"
    EmbeddedBackend(ticket_spec(), keyword_path).ingest_sync([doc(1, "acme", "printer jam")])
    with pytest.raises(ConfigError, match="no vector"):
        EmbeddedBackend(vector_spec(), keyword_path, encoder=encoder())


async def test_hybrid_finds_a_document_keywords_miss(tmp_path: Path) -> None:
    spec = dataclasses.replace(ticket_spec(), retrieval="hybrid")
    backend = EmbeddedBackend(spec, tmp_path / "idx", encoder=encoder())
    backend.ingest_sync([doc(1, "acme", "printer jam tray"), doc(2, "acme", "password reset email")])
    # "passwords" stems to "password" for keywords, but the bag-of-words vector of "Email" matches doc 2 too.
    out = (await SearchTool(spec, backend).run({"query": "jam Email"}, CallContext(state={"tenant_id": "acme"}))).result
    assert [r["ticket_id"] for r in out["results"]][:1] == ["acme-1"]
    assert out["total"] == 2 and out["total_relation"] == "eq"


WRITER = textwrap.dedent(
    """
    import sys, dataclasses
    from scopegate.backends.embedded import EmbeddedBackend
    from scopegate.demo.corpus import ticket_spec
    from scopegate_lab.encoders import bag_of_words_encoder

    path, start = sys.argv[1], int(sys.argv[2])
    spec = dataclasses.replace(ticket_spec(), retrieval="hybrid")
    backend = EmbeddedBackend(spec, path, encoder=bag_of_words_encoder())

    def docs():
        i = start
        while True:
            yield {"ticket_id": f"C-{i:07d}", "tenant_id": "t" + str(i % 3), "product": "payments",
                   "status": "open", "subject": f"crash test {i}", "body": "refund failed E4012 " * 5}
            i += 1

    backend.ingest_sync(docs(), batch_size=300, on_commit=lambda n: print(f"COMMITTED {start + n}", flush=True))
    """
)


def test_kill_9_mid_ingest_keeps_vectors_in_lockstep(tmp_path: Path) -> None:
    path = tmp_path / "index"
    committed = 0
    for round_number in range(3):
        run_and_kill(path, committed, commits_before_kill=2 + round_number, writer=WRITER)
        backend = EmbeddedBackend(dataclasses.replace(ticket_spec(), retrieval="hybrid"), path, encoder=encoder())
        total = backend.count_sync()
        store = backend.vectors.store  # type: ignore[union-attr]
        # Exactly the committed documents have vectors: none missing, none from the killed batch.
        assert store.live_count == total and total % 300 == 0 and total > committed
        ids = {store._ids[r] for r in range(store._size) if store._alive[r]}
        assert ids == {f"C-{i:07d}" for i in range(total)}
        committed = total
    # Still writable: the next writer settles any leftover pending state and adds more.
    backend = EmbeddedBackend(dataclasses.replace(ticket_spec(), retrieval="hybrid"), path, encoder=encoder())
    backend.ingest_sync([doc(1, "t0", "after the crash")])
    assert backend.vectors.store.live_count == committed + 1  # type: ignore[union-attr]
    assert not (path / "vectors" / "pending.json").exists()


def test_cli_reembeds_with_the_spec_encoder(tmp_path: Path) -> None:
    pytest.importorskip("onnxruntime", reason="needs the vector extra")
    from scopegate.cli import main

    path = tmp_path / "idx"
    EmbeddedBackend(vector_spec(), path, encoder=encoder("bow-old")).ingest_sync([doc(1, "acme", "printer jam")])
    with pytest.raises(ConfigError, match="scopegate reembed"):
        EmbeddedBackend.open(path)  # the spec names MiniLM; the vectors are bow-old
    assert main(["reembed", str(path), "--quiet"]) == 0
    reopened = EmbeddedBackend.open(path)
    assert reopened.vectors is not None and reopened.vectors.store.live_count == 1
    assert reopened.vectors.store.stored_model_id == reopened.vectors.encoder.model_id


def test_large_tenants_get_their_own_graph_with_filters_inside(tmp_path: Path) -> None:
    import numpy as np

    from scopegate.vector.store import VectorRow, VectorStore

    rng = np.random.default_rng(3)
    vectors = rng.standard_normal((3000, 16)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    rows = [
        VectorRow(f"d{i}", "big" if i % 3 else "small", (), {"product": "a" if i % 2 else "b"}) for i in range(3000)
    ]

    def store() -> VectorStore:
        return VectorStore(tmp_path / "v", dim=16, model_id="m", filter_fields=("product",), exact_limit=100)

    first = store()
    first.stage(rows[:2000], vectors[:2000], (), base_opstamp=0)
    first.promote(1)
    first.ensure_graph()
    big_rows = [i for i in range(2000) if i % 3]
    whole, count = first.search(vectors[5], Scope("big"), (), 10)  # whole tenant in scope: no bitmap
    assert count == len(big_rows) and whole[0][0] == "d5"
    # tail rows not in the graph yet, one delete (by document key: a document is (tenant, id))
    first.stage(rows[2000:], vectors[2000:], [document_key("big", "d1")], base_opstamp=1)
    first.promote(2)
    assert set(first._graphs) == {"big", "small"}  # both tenants are above exact_limit=100
    reopened = store()
    reopened.sync(2)
    assert reopened._graphs["big"].covered < len(reopened._tenants.rows_of[reopened._tenants.code_of["big"]])
    for q in vectors[:20]:
        got, count = reopened.search(q, Scope("big"), (("product", "a"),), 10)
        allowed = [i for i in range(3000) if i % 3 and i % 2 and i != 1]
        assert count == len(allowed)
        truth = sorted(allowed, key=lambda i: -float(vectors[i] @ q))[:10]
        assert {d for d, _ in got} <= {f"d{i}" for i in allowed}
        assert len({f"d{i}" for i in truth} & {d for d, _ in got}) >= 9
