"""Documents belong to a tenant, ids follow one identity rule, and an index written by wave 1 migrates (issue 12).

The wave-1 fixture (``fixtures/wave1-index``, see its README) was written by
the code of da9c454, which used the document id alone as the key: there,
globex ingesting ``INV-1`` replaced acme's ``INV-1``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from scopegate.backends.embedded import EmbeddedBackend
from scopegate.context import CallContext
from scopegate.demo.corpus import ticket_spec
from scopegate.errors import IngestError
from scopegate.scope import Scope
from scopegate.search.tools import SearchTool
from scopegate_lab.backend_contract import check_documents_belong_to_tenants, check_identity_rule, ticket

WAVE1 = Path(__file__).resolve().parent / "fixtures" / "wave1-index"


def scopegate(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "scopegate.cli", *args], capture_output=True, text=True, timeout=120)


async def test_identity_rule_on_the_embedded_engine(tmp_path: Path) -> None:
    backend = EmbeddedBackend(ticket_spec(), tmp_path / "index")
    try:
        await check_identity_rule(backend)
    finally:
        await backend.close()


async def test_documents_belong_to_tenants_on_the_embedded_engine(tmp_path: Path) -> None:
    backend = EmbeddedBackend(ticket_spec(), tmp_path / "index")
    try:
        await check_documents_belong_to_tenants(backend)
    finally:
        await backend.close()


def test_the_command_line_applies_the_identity_rule(tmp_path: Path) -> None:
    index = tmp_path / "index"
    EmbeddedBackend(ticket_spec(), index).ingest_sync([ticket("A-1", "acme", "refund")])
    done = scopegate("search", str(index), "refund", "--tenant", "acme ")
    assert done.returncode == 2 and "leading or trailing whitespace" in done.stderr, done.stderr
    assert scopegate("get", str(index), "A-1", "--tenant", "acme", "--user", "u\u200b1").returncode == 2
    assert scopegate("search", str(index), "refund", "--tenant", "acme").returncode == 0
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps(ticket("A-2", "acme ", "refund")) + "\n", "utf-8")
    ingested = scopegate("ingest", str(index), str(source), "--quiet")
    assert ingested.returncode == 1 and "leading or trailing whitespace" in ingested.stdout


@pytest.fixture
def wave1(tmp_path: Path) -> Path:
    copy = tmp_path / "wave1"
    shutil.copytree(WAVE1, copy)
    return copy


async def test_a_wave1_index_is_searchable_but_refuses_writes(wave1: Path) -> None:
    backend = EmbeddedBackend.open(wave1)
    try:
        assert backend.legacy_keys
        tool = SearchTool(backend.spec, backend)
        result = (await tool.run({"query": "refund E4012"}, CallContext(state={"tenant_id": "acme"}))).result
        assert result["total"] == 10
        assert backend.get_sync("INV-1", Scope("acme")) is not None
        with pytest.raises(IngestError, match="scopegate migrate"):
            await backend.ingest([ticket("INV-1", "globex", "globex invoice")])
        with pytest.raises(IngestError, match="scopegate migrate"):
            await backend.delete(["INV-1"], tenant="globex")
        assert backend.get_sync("INV-1", Scope("acme")) is not None  # what wave 1 would have lost
    finally:
        await backend.close()
    checked = scopegate("check", "--schema")  # sanity: the CLI runs
    assert checked.returncode == 0


async def test_a_wave1_index_migrates_and_then_keeps_tenants_apart(wave1: Path, tmp_path: Path) -> None:
    dest = tmp_path / "migrated"
    done = scopegate("migrate", str(wave1), str(dest))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["indexed"] == 21
    backend = EmbeddedBackend.open(dest)
    try:
        assert not backend.legacy_keys
        assert backend.count_sync(Scope("acme")) == 11 and backend.count_sync(Scope("globex")) == 10
        await backend.ingest([ticket("INV-1", "globex", "globex invoice wombat")])  # wave 1 replaced acme's here
        acme = backend.get_sync("INV-1", Scope("acme"))
        assert acme is not None and acme["subject"] == "Invoice INV-1 total wrong"
        assert await backend.delete(["INV-1"], tenant="globex") == 1
        assert backend.get_sync("INV-1", Scope("acme")) is not None
    finally:
        await backend.close()
    assert EmbeddedBackend.open(wave1).legacy_keys  # the source is left as it was
    again = scopegate("migrate", str(wave1), str(dest))
    assert again.returncode == 1 and "not empty" in again.stderr


async def test_vectors_belong_to_tenants_too(tmp_path: Path) -> None:
    """Vector retrieval keeps one row per (tenant, id): globex's INV-1 never replaces or deletes acme's."""
    import dataclasses

    from scopegate_lab.encoders import bag_of_words_encoder

    spec = dataclasses.replace(ticket_spec(), retrieval="vector")
    backend = EmbeddedBackend(spec, tmp_path / "index", encoder=bag_of_words_encoder("bow-32"))
    try:
        backend.ingest_sync([ticket("INV-1", "acme", "printer jam tray", body="printer jam tray")])
        backend.ingest_sync([ticket("INV-1", "globex", "password reset email", body="password reset email")])
        store = backend.vectors.store  # type: ignore[union-attr]
        assert store.live_count == 2
        backend.delete_sync(["INV-1"], tenant="globex")
        assert store.live_count == 1
        tool = SearchTool(spec, backend)
        found = (await tool.run({"query": "printer jam"}, CallContext(state={"tenant_id": "acme"}))).result
        assert [r["ticket_id"] for r in found["results"]] == ["INV-1"]
        assert found["results"][0]["subject"] == "printer jam tray"
        none = (await tool.run({"query": "printer jam"}, CallContext(state={"tenant_id": "globex"}))).result
        assert none["results"] == []
    finally:
        await backend.close()
