"""The embedded engine for real: scope inside the query, totals, pages, upsert, delete, persistence."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import threading
from pathlib import Path
from typing import Any

import pytest
import tantivy

from scopegate.backends.embedded import EmbeddedBackend, IndexLayout, build_schema
from scopegate.backends.embedded_storage import write_spec_file
from scopegate.context import CallContext
from scopegate.errors import ConfigError, MissingIndexError
from scopegate.scope import Scope, ScopeKeys
from scopegate.search.model import SearchQuery
from scopegate.search.spec import COMBINED_FIELD, KeywordFilter, SearchSpec, TextField
from scopegate.search.tools import FetchTool, SearchTool
from scopegate_lab.oracle import expected_total


def ctx(tenant: str | None, **extra: Any) -> CallContext:
    state = {"tenant_id": tenant} if tenant is not None else {}
    state.update(extra)
    return CallContext(state=state)


async def test_totals_are_per_tenant_and_exact(embedded: EmbeddedBackend, tickets: list[dict[str, Any]]) -> None:
    tool = SearchTool(embedded.spec, embedded)
    for tenant in ("acme", "globex"):
        out = (await tool.run({"query": "apple pay refund failed", "product": "payments"}, ctx(tenant))).result
        assert out["status"] == "ok"
        assert out["total"] == expected_total(
            embedded.spec, tickets, "apple pay refund failed", tenant, {"product": "payments"}
        )
        assert out["total_relation"] == "eq"
        assert all(r["ticket_id"].startswith(tenant[:3].upper()) for r in out["results"])
        assert all(r["product"] == "payments" for r in out["results"])


async def test_error_codes_are_one_token(embedded: EmbeddedBackend, tickets: list[dict[str, Any]]) -> None:
    tool = SearchTool(embedded.spec, embedded)
    for code in ("E4012", "card_declined", "PSP-502"):
        out = (await tool.run({"query": code}, ctx("acme"))).result
        assert out["total"] == expected_total(embedded.spec, tickets, code, "acme") > 0, code
    # card_declined must not match tickets that merely say "card" and "declined" apart.
    declined_apart = [
        t
        for t in tickets
        if t["tenant_id"] == "acme"
        and "card_declined" not in t["body"]
        and "card" in t["body"]
        and "declined" in t["body"]
    ]
    out = (await tool.run({"query": "card_declined", "page": 1}, ctx("acme"))).result
    assert not {r["ticket_id"] for r in out["results"]} & {t["ticket_id"] for t in declined_apart}


async def test_pages_do_not_overlap_and_stop(embedded: EmbeddedBackend) -> None:
    tool = SearchTool(embedded.spec, embedded)
    seen: list[str] = []
    page: int | None = 1
    while page:
        out = (await tool.run({"query": "refund", "page": page}, ctx("acme"))).result
        seen += [r["ticket_id"] for r in out["results"]]
        page = out["next_page"]
    assert len(seen) == len(set(seen)) == 20


async def test_no_scope(embedded: EmbeddedBackend) -> None:
    for state in ({}, {"tenant_id": ""}, {"tenant_id": "   "}, {"tenant_id": None}):
        out = (await SearchTool(embedded.spec, embedded).run({"query": "refund"}, CallContext(state=state))).result
        assert out["error_code"] == "NO_SCOPE"
        out = (await FetchTool(embedded.spec, embedded).run({"id": "ACM-00001"}, CallContext(state=state))).result
        assert out["error_code"] == "NO_SCOPE"


async def test_query_without_words_is_bad_query(embedded: EmbeddedBackend) -> None:
    out = (await SearchTool(embedded.spec, embedded).run({"query": "* OR :"}, ctx("acme"))).result
    assert out["error_code"] == "BAD_QUERY"


async def test_fetch_in_and_out_of_scope_look_the_same(embedded: EmbeddedBackend) -> None:
    tool = FetchTool(embedded.spec, embedded)
    mine = (await tool.run({"id": "ACM-00001"}, ctx("acme"))).result
    assert mine["status"] == "ok" and mine["document"]["ticket_id"] == "ACM-00001"
    assert "tenant_id" not in mine["document"] and mine["document"]["status"] in {"open", "pending", "solved", "closed"}
    other = (await tool.run({"id": "GLO-00001"}, ctx("acme"))).result
    absent = (await tool.run({"id": "GLO-99999"}, ctx("acme"))).result
    assert other["error_code"] == absent["error_code"] == "NOT_FOUND"
    assert other["message"].replace("GLO-00001", "X") == absent["message"].replace("GLO-99999", "X")


async def test_engine_calls_run_off_the_event_loop(embedded: EmbeddedBackend) -> None:
    threads: list[int] = []
    original = embedded.search_sync

    def spy(query: Any) -> Any:
        threads.append(threading.get_ident())
        return original(query)

    embedded.search_sync = spy  # type: ignore[method-assign]
    try:
        await SearchTool(embedded.spec, embedded).run({"query": "refund"}, ctx("acme"))
    finally:
        del embedded.search_sync
    assert threads and threads[0] != threading.get_ident()


def _mini_spec(**kw: Any) -> SearchSpec:
    return SearchSpec(
        name="search_docs",
        description="d",
        text_fields=(TextField("subject", 3), TextField("body")),
        filters=(KeywordFilter("product", ("a", "b")),),
        id_field="doc_id",
        result_fields=("subject",),
        fetch_name="get_doc",
        **kw,
    )


def test_upsert_is_idempotent_and_updates(tmp_path: Path) -> None:
    backend = EmbeddedBackend(_mini_spec(), tmp_path / "idx")
    docs = [{"doc_id": f"d{i}", "tenant_id": "t", "product": "a", "subject": "alpha", "body": "one"} for i in range(50)]
    backend.ingest_sync(docs, batch_size=7)
    backend.ingest_sync(docs, batch_size=7)
    assert backend.count_sync() == 50
    backend.ingest_sync([{**docs[0], "subject": "beta"}])
    assert backend.count_sync() == 50
    assert backend.get_sync("d0", Scope("t"))["subject"] == "beta"  # type: ignore[index]
    assert backend.delete_sync(["d1", "d2", "nope"], tenant="t") == 3
    assert backend.count_sync() == 48
    assert backend.get_sync("d1", Scope("t")) is None


def test_bad_records_are_reported_not_fatal(tmp_path: Path) -> None:
    backend = EmbeddedBackend(_mini_spec(), tmp_path / "idx")
    report = backend.ingest_sync(
        [
            {"doc_id": "ok", "tenant_id": "t", "body": "x"},
            {"doc_id": "", "tenant_id": "t"},
            {"doc_id": "x", "body": "y"},
        ]
    )
    assert report.indexed == 1 and report.failed == 2
    assert {reason for _, reason in report.errors} == {"missing doc_id", "missing tenant_id"}


async def test_persistence_and_open(tmp_path: Path) -> None:
    path = tmp_path / "idx"
    backend = EmbeddedBackend(_mini_spec(), path)
    backend.ingest_sync([{"doc_id": "d1", "tenant_id": "t", "subject": "refund failed", "body": "E4012"}])
    gen1 = await backend.generation()
    await backend.close()
    reopened = EmbeddedBackend.open(path)
    assert reopened.spec == _mini_spec()
    out = (await SearchTool(reopened.spec, reopened).run({"query": "E4012"}, ctx("t"))).result
    assert out["total"] == 1
    reopened.ingest_sync([{"doc_id": "d2", "tenant_id": "t", "body": "more"}])
    assert await reopened.generation() != gen1
    with pytest.raises(MissingIndexError):
        EmbeddedBackend.open(tmp_path / "missing")


async def test_groups_scope(tmp_path: Path) -> None:
    spec = _mini_spec(group_field="group_ids", scope_keys=ScopeKeys(groups="groups"))
    backend = EmbeddedBackend(spec, tmp_path / "idx")
    backend.ingest_sync(
        [
            {"doc_id": "g1", "tenant_id": "t", "group_ids": ["sales"], "body": "refund"},
            {"doc_id": "g2", "tenant_id": "t", "group_ids": ["support", "sales"], "body": "refund"},
            {"doc_id": "g3", "tenant_id": "t", "group_ids": ["legal"], "body": "refund"},
        ]
    )
    tool = SearchTool(spec, backend)
    out = (await tool.run({"query": "refund"}, ctx("t", groups=["support"]))).result
    assert [r["doc_id"] for r in out["results"]] == ["g2"] and out["total"] == 1
    out = (await tool.run({"query": "refund"}, ctx("t", groups=["sales", "legal"]))).result
    assert out["total"] == 3
    out = (await tool.run({"query": "refund"}, ctx("t"))).result
    assert out["error_code"] == "NO_SCOPE"
    fetched = (await FetchTool(spec, backend).run({"id": "g3"}, ctx("t", groups=["sales"]))).result
    assert fetched["error_code"] == "NOT_FOUND"


async def test_backend_failures_are_structured(spec: SearchSpec) -> None:
    class Broken(EmbeddedBackend):
        async def search(self, query: Any) -> Any:
            raise RuntimeError("disk on fire at /secret/path")

    class Slow(EmbeddedBackend):
        async def search(self, query: Any) -> Any:
            await asyncio.sleep(10)

    for cls, code, retry in ((Broken, "INTERNAL", True), (Slow, "SEARCH_UNAVAILABLE", True)):
        fast_spec = SearchSpec(**{**spec.__dict__, "engine_timeout_s": 0.1, "client_timeout_s": 0.2})
        out = (await SearchTool(fast_spec, cls(fast_spec)).run({"query": "refund"}, ctx("acme"))).result
        assert out["error_code"] == code and out["retryable"] is retry
        assert "secret" not in out["message"]


async def test_combined_fields_indexes_store_text_fields_without_postings_and_rank_like_older_indexes(
    spec: SearchSpec, tickets: list[dict[str, Any]], tmp_path: Path
) -> None:
    """Under combined_fields only the catch-all field is searched: a new index does not analyse the text
    fields a second time, and cuts the catch-all text into words in C for the whitespace tokenizer. An
    index written before (per-field postings, the regex tokenizer) answers exactly the same."""
    assert spec.field_combination == "combined_fields"
    new = EmbeddedBackend(spec, tmp_path / "new")
    assert not new.layout.text_indexed and new.layout.words_tokenized
    meta = json.loads((tmp_path / "new" / "meta.json").read_text())
    catch_all = next(f for f in meta["schema"] if f["name"] == COMBINED_FIELD)
    assert catch_all["options"]["indexing"]["tokenizer"] == "scopegate_en_words"
    new.ingest_sync(tickets, batch_size=500)
    # The layout an older scopegate wrote: every text field with its own postings.
    old_path = tmp_path / "old"
    old_path.mkdir()
    write_spec_file(old_path, spec, replace=False)
    old_layout = dataclasses.replace(IndexLayout.new(spec), text_indexed=True, words_tokenized=False)
    tantivy.Index(build_schema(spec, old_layout), path=str(old_path), reuse=True, sort_by_field=spec.tenant_field)
    old = EmbeddedBackend(spec, old_path)
    assert old.layout.text_indexed and not old.layout.words_tokenized
    old.ingest_sync(tickets, batch_size=500)
    body_only = {"tenant_id": "acme", "subject": "zzz", "body": "the words quixotic vermilion"}
    for backend in (new, old):
        backend.ingest_sync([{**tickets[0], **body_only, "ticket_id": "ACM-BODY"}])
    new_tool, old_tool = SearchTool(spec, new), SearchTool(spec, old)
    compared = 0
    for query in ("apple pay refund failed", "E4012", "card_declined", "checkout timeout", "quixotic", "login"):
        for tenant in ("acme", "globex"):
            # Every matching document with the same score (ties may come in another order: the two
            # indexes' segments differ, and tantivy breaks ties by document address).
            every = SearchQuery(query, Scope(tenant), (), 0, 5_000, 10_000, 5.0, 10.0)
            scores_new = {h.doc_id: round(h.score, 4) for h in new.search_sync(every).hits}
            scores_old = {h.doc_id: round(h.score, 4) for h in old.search_sync(every).hits}
            assert scores_new == scores_old, query
            compared += len(scores_new)
            a = (await new_tool.run({"query": query}, ctx(tenant))).result
            b = (await old_tool.run({"query": query}, ctx(tenant))).result
            assert a["total"] == b["total"] == len(scores_new), query
            snippets_old = {r["ticket_id"]: r["snippet"] for r in b["results"]}
            for r in a["results"]:
                assert r["snippet"] == snippets_old.get(r["ticket_id"], r["snippet"]), query
    assert compared > 100  # the queries matched many documents
    hit = (await new_tool.run({"query": "quixotic vermilion"}, ctx("acme"))).result
    assert [r["ticket_id"] for r in hit["results"]] == ["ACM-BODY"]  # body words are searchable
    fetched = (await FetchTool(spec, new).run({"id": "ACM-BODY"}, ctx("acme"))).result
    assert fetched["document"]["body"] == body_only["body"]  # and stored whole
    new.close_sync()
    old.close_sync()
    # A stored-only index cannot be searched field by field: another combination is refused, with the reason.
    with pytest.raises(ConfigError, match="combined_fields"):
        EmbeddedBackend(dataclasses.replace(spec, field_combination="best_fields"), tmp_path / "new")
