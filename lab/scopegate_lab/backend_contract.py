"""Checks every search backend must pass, the same on each: the identity rule, document identity, many processes.

Each check takes a backend with an empty index of the demo ticket spec
(:func:`scopegate.demo.corpus.ticket_spec`, any index name), or a
:class:`~scopegate_lab.consistency.Target` when it starts other processes,
and raises ``AssertionError`` naming what went wrong. The embedded, OpenSearch
and Elasticsearch test suites run them all; a new backend should too.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import subprocess
import sys
import textwrap
import threading
from collections.abc import AsyncIterator, Iterator, Mapping
from pathlib import Path
from typing import Any

from scopegate.backends.base import SearchBackend
from scopegate.context import CallContext
from scopegate.errors import IngestError
from scopegate.scope import Scope
from scopegate.search.tools import FetchTool, SearchTool
from scopegate_lab.consistency import Target, open_backend, run_consistency

# Tenants that break the identity rule: wave 1 stripped the first two on some backends and not others.
NON_CANONICAL_TENANTS = ("acme ", " acme", "ac\u200bme", "e\u0301cole", "acme\n")


def ticket(doc_id: str, tenant: str, subject: str, body: str = "refund failed") -> dict[str, Any]:
    return {
        "ticket_id": doc_id,
        "tenant_id": tenant,
        "product": "payments",
        "status": "open",
        "subject": subject,
        "body": body,
    }


def _ctx(tenant: Any) -> CallContext:
    return CallContext(state={"tenant_id": tenant})


async def check_identity_rule(backend: SearchBackend) -> None:
    """Non-canonical tenants are refused per record at ingest (same reason everywhere) and get NO_SCOPE at read."""
    good = ticket("OK-1", "acme", "quokka refund")
    bad = [ticket(f"BAD-{i}", tenant, "quokka refund") for i, tenant in enumerate(NON_CANONICAL_TENANTS)]
    report = await backend.ingest([good, *bad])
    assert report.indexed == 1 and report.failed == len(bad), report
    reasons = dict(report.errors)
    for i, tenant in enumerate(NON_CANONICAL_TENANTS):
        reason = reasons.get(f"BAD-{i}", "")
        assert "tenant_id" in reason and reason != "missing tenant_id", (tenant, reason)
    assert "leading or trailing whitespace" in reasons["BAD-0"] and "U+200B" in reasons["BAD-2"]
    assert "NFC" in reasons["BAD-3"]
    search, fetch = SearchTool(backend.spec, backend), FetchTool(backend.spec, backend)
    ok = (await search.run({"query": "quokka"}, _ctx("acme"))).result
    assert ok["total"] == 1 and ok["results"][0]["ticket_id"] == "OK-1", ok
    for tenant in NON_CANONICAL_TENANTS:
        for result in (
            (await search.run({"query": "quokka"}, _ctx(tenant))).result,
            (await fetch.run({"id": "OK-1"}, _ctx(tenant))).result,
        ):
            assert result.get("error_code") == "NO_SCOPE", (tenant, result)
    try:
        await backend.delete(["OK-1"], tenant="acme ")
    except IngestError:
        pass
    else:
        raise AssertionError("a delete with a non-canonical tenant was accepted")
    assert await backend.get("OK-1", Scope("acme")) is not None


async def _fetch(backend: SearchBackend, doc_id: str, tenant: str) -> Mapping[str, Any] | None:
    result = (await FetchTool(backend.spec, backend).run({"id": doc_id}, _ctx(tenant))).result
    return result.get("document") if result.get("status") == "ok" else None


async def check_documents_belong_to_tenants(backend: SearchBackend) -> None:
    """The same id in two tenants is two documents: upserts, deletes and fetches never cross tenants."""
    await backend.ingest([ticket("INV-1", "acme", "acme invoice wombat"), ticket("INV-2", "acme", "acme wombat two")])
    await backend.ingest([ticket("INV-1", "globex", "globex invoice wombat")])
    acme, globex = await _fetch(backend, "INV-1", "acme"), await _fetch(backend, "INV-1", "globex")
    assert acme is not None and acme["subject"] == "acme invoice wombat", acme
    assert globex is not None and globex["subject"] == "globex invoice wombat", globex
    # globex updates and deletes its INV-1; acme's is untouched
    await backend.ingest([ticket("INV-1", "globex", "globex invoice wombat v2")])
    acme_doc = await _fetch(backend, "INV-1", "acme")
    globex_doc = await _fetch(backend, "INV-1", "globex")
    assert acme_doc is not None and acme_doc["subject"] == "acme invoice wombat"
    assert globex_doc is not None and globex_doc["subject"] == "globex invoice wombat v2"
    assert await backend.delete(["INV-1", "INV-2"], tenant="globex") == 2  # INV-2 is not globex's
    assert await _fetch(backend, "INV-1", "globex") is None
    acme_doc = await _fetch(backend, "INV-1", "acme")
    assert acme_doc is not None and acme_doc["subject"] == "acme invoice wombat"
    assert await _fetch(backend, "INV-2", "acme") is not None
    search = SearchTool(backend.spec, backend)
    for tenant, expected in (("acme", ["INV-1", "INV-2"]), ("globex", [])):
        result = (await search.run({"query": "wombat"}, _ctx(tenant))).result
        assert sorted(r["ticket_id"] for r in result["results"]) == expected, (tenant, json.dumps(result)[:300])
        assert result["total"] == len(expected)
    # acme deletes its own
    assert await backend.delete(["INV-1"], tenant="acme") == 1
    assert await _fetch(backend, "INV-1", "acme") is None


# -- OpenSearch / Elasticsearch ------------------------------------------------------------------
async def write_wave1_index(backend: Any, documents: list[dict[str, Any]]) -> None:
    """An index as wave-1 scopegate wrote it: ``_id`` = the document id alone, no key scheme in the mapping."""
    from scopegate.backends import dsl

    template = backend.template_body()
    template["template"]["mappings"].pop("_meta", None)
    await backend._put_template(backend.names.template, template)
    first = backend.names.version(1)
    await backend._create_index(first, {"aliases": {backend.names.read_alias: {"is_write_index": True}}})
    lines: list[str] = []
    for doc in documents:
        source = dsl.document_source(backend.spec, doc)
        lines.append(json.dumps({"index": {"_index": first, "_id": source[backend.spec.id_field]}}))
        lines.append(json.dumps(source))
    response = await backend._bulk("\n".join(lines) + "\n", 60)
    assert not response.get("errors"), response
    await backend._refresh(first)


async def check_wave1_engine_migration(backend: Any) -> None:
    """A wave-1 engine index is searchable, refuses writes, migrates, and then keeps tenants apart."""
    docs = [ticket(f"ACM-{i}", "acme", f"acme refund {i}") for i in range(1, 6)]
    docs += [ticket(f"GLX-{i}", "globex", f"globex refund {i}") for i in range(1, 4)]
    docs.append(ticket("INV-1", "acme", "acme invoice wombat", body="invoice total wrong"))
    await write_wave1_index(backend, docs)
    search = SearchTool(backend.spec, backend)
    result = (await search.run({"query": "refund"}, _ctx("acme"))).result
    assert result["total"] == 5, result
    for attempt in (
        backend.ingest([ticket("INV-1", "globex", "globex invoice")]),
        backend.delete(["INV-1"], tenant="globex"),
    ):
        try:
            await attempt
        except IngestError as exc:
            assert "migrate" in str(exc)
        else:
            raise AssertionError("a write into a wave-1 index was accepted")
    new_index = await backend.migrate_keys()
    assert new_index == backend.names.version(2)
    assert await backend.count(Scope("acme")) == 6 and await backend.count(Scope("globex")) == 3
    await backend.ingest([ticket("INV-1", "globex", "globex invoice wombat")])
    acme = await _fetch(backend, "INV-1", "acme")
    assert acme is not None and acme["subject"] == "acme invoice wombat", acme
    assert await backend.delete(["INV-1"], tenant="globex") == 1
    assert await _fetch(backend, "INV-1", "acme") is not None
    assert (await search.run({"query": "refund"}, _ctx("acme"))).result["total"] == 5


# -- many processes ---------------------------------------------------------------------------------
class StalledSource:
    """Documents that stop coming until :attr:`open` is set (or 60 s pass: then :attr:`expired` says so).

    An ingest reading it is busy for as long as a test wants, without timing anything.
    """

    def __init__(self) -> None:
        self.open = threading.Event()
        self.entered = threading.Event()
        self.expired = False

    def documents(self, prefix: str = "SLOW") -> Iterator[dict[str, Any]]:
        yield ticket(f"{prefix}-1", "acme", "slow source")
        self.entered.set()
        self.expired = self.expired or not self.open.wait(60)
        yield ticket(f"{prefix}-2", "acme", "slow source")


OTHER_WRITER = textwrap.dedent(
    """
    import asyncio, json, sys
    from scopegate_lab.consistency import Target, open_backend

    async def main():
        backend = open_backend(Target(*json.loads(sys.argv[1])))
        moved = json.loads(sys.argv[2])
        await backend.ingest([{**moved, "tenant_id": "globex"}])  # reassigned to globex...
        await backend.delete([moved["ticket_id"]], tenant="acme")  # ...and no longer acme's
        await backend.delete(["ACM-GONE"], tenant="acme")
        await backend.close()

    asyncio.run(main())
    """
)


@contextlib.asynccontextmanager
async def fresh_backend(target: Target) -> AsyncIterator[Any]:
    """The backend of ``target`` (the ticket spec on its index); an engine index is dropped afterwards."""
    backend = open_backend(target)
    try:
        yield backend
    finally:
        if target.engine != "embedded":
            await backend.drop()
        await backend.close()


async def check_other_writers_are_never_served_from_the_cache(target: Target) -> None:
    """Another process moves a document from acme to globex and deletes one: a guarded reader (with a
    cache) never shows either to acme again, and readers in every process derive the same generation."""
    from scopegate.guard import Guard

    async with fresh_backend(target) as backend:
        moved = ticket("ACM-MOVED", "acme", "numbat outage")
        await backend.ingest([moved, ticket("ACM-GONE", "acme", "platypus outage")])
        guard = Guard(cap=None, generation_ttl_s=0.0)
        search, fetch = SearchTool(backend.spec, backend), FetchTool(backend.spec, backend)
        for _ in range(2):  # the second round is served from the cache
            assert (await guard.call(search, {"query": "numbat"}, _ctx("acme"))).result["total"] == 1
            assert (await guard.call(fetch, {"id": "ACM-GONE"}, _ctx("acme"))).result["status"] == "ok"
        assert guard.cache is not None and guard.cache.stats.hits == 2
        writer = [sys.executable, "-c", OTHER_WRITER, json.dumps(dataclasses.astuple(target)), json.dumps(moved)]
        subprocess.run(writer, check=True, timeout=120)
        for _ in range(3):
            assert (await guard.call(search, {"query": "numbat"}, _ctx("acme"))).result["total"] == 0
            assert (await guard.call(fetch, {"id": "ACM-GONE"}, _ctx("acme"))).result["error_code"] == "NOT_FOUND"
            assert (await guard.call(fetch, {"id": "ACM-MOVED"}, _ctx("acme"))).result["error_code"] == "NOT_FOUND"
            found = (await guard.call(search, {"query": "numbat"}, _ctx("globex"))).result
            assert [r["ticket_id"] for r in found["results"]] == ["ACM-MOVED"]
        generation = await backend.generation()
        assert generation == await backend.generation()  # stable while nothing is written
        other = open_backend(target)
        try:
            assert await other.generation() == generation  # another process derives the same one
        finally:
            await other.close()


async def check_searches_are_not_held_up_by_ingest(backend: SearchBackend) -> None:
    """Two ingests stalled on their source; searches and fetches answer meanwhile (not after it gave up)."""
    await backend.ingest([ticket("ACM-1", "acme", "refund failed")])
    source = StalledSource()
    writes = [asyncio.create_task(backend.ingest(source.documents(f"W{i}"))) for i in range(2)]
    try:
        assert await asyncio.to_thread(source.entered.wait, 30)
        search, fetch = SearchTool(backend.spec, backend), FetchTool(backend.spec, backend)
        for _ in range(5):
            result = (await search.run({"query": "refund"}, _ctx("acme"))).result
            assert result["status"] == "ok" and result["total"] >= 1, result
            assert (await fetch.run({"id": "ACM-1"}, _ctx("acme"))).result["status"] == "ok"
        assert not source.expired and not any(w.done() for w in writes)
    finally:
        source.open.set()
        await asyncio.gather(*writes)


def check_randomized_run(target: Target, folder: Path, *, ops: int, redis_url: str | None = None) -> dict[str, Any]:
    """One writer and three guarded reader processes (:mod:`.consistency`); every answer checked."""
    run = run_consistency(target, folder, ops=ops, redis_url=redis_url)
    summary = run.summary()
    print(f"\n{target.engine}{'+redis' if redis_url else ''}: {json.dumps(summary)}")
    assert run.report.ok, run.report.problems
    assert set(summary["by_kind"]) == {"fetch", "key", "all"} and run.report.cache_hits > 0
    return summary
