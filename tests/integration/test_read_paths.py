"""Read paths never write (issue 12): read-only file systems, the stored spec, mapping mismatches, a full disk.

The read-only folder is a real read-only bind mount when the tests run as root
(``mount -o remount,ro,bind``), else the folder is made unwritable with chmod,
which a non-root process cannot bypass. The full disk is a real ``tmpfs`` with a
size limit (root only). Both come from ``mounts.py``.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from mounts import ROOT, read_only, small_disk

from scopegate.backends.embedded import EmbeddedBackend
from scopegate.backends.embedded_storage import SPEC_FILE, storage_problem
from scopegate.context import CallContext
from scopegate.demo.corpus import ticket_spec
from scopegate.errors import ConfigError, IngestError
from scopegate.scope import Scope
from scopegate.search.spec import SearchSpec, spec_to_dict
from scopegate.search.tools import SearchTool


def scopegate(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "scopegate.cli", *args], capture_output=True, text=True, timeout=120)


def snapshot(folder: Path) -> dict[str, tuple[int, int, int]]:
    """Every file's (inode, size, mtime): any write, replace or new lock file shows."""
    return {p.name: (p.stat().st_ino, p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(folder.iterdir())}


async def test_search_works_on_a_read_only_folder_and_writes_nothing(index: Path, tmp_path: Path) -> None:
    """Wave 1 rewrote scopegate-spec.json on every open: a read-only mount gave a raw OSError."""
    before = snapshot(index)
    with read_only(index, tmp_path) as ro:
        backend = EmbeddedBackend.open(ro)
        try:
            assert backend.read_only
            tool = SearchTool(backend.spec, backend)
            result = (await tool.run({"query": "refund"}, CallContext(state={"tenant_id": "acme"}))).result
            assert result["status"] == "ok" and result["total"] > 0
            assert (await backend.generation()).startswith("meta:")
            with pytest.raises(IngestError, match="read-only"):
                await backend.ingest([{"ticket_id": "X-1", "tenant_id": "acme", "body": "x"}])
            # Another process writes through a writable path; the read-only reader sees the commit.
            writer = EmbeddedBackend.open(index)
            writer.ingest_sync([{"ticket_id": "RO-1", "tenant_id": "acme", "subject": "quokka", "body": "quokka"}])
            writer.close_sync()
            written = snapshot(index)
            assert backend.get_sync("RO-1", Scope("acme")) is not None
        finally:
            await backend.close()
        # The command line, as another process, on the read-only folder.
        done = scopegate("search", str(ro), "quokka", "--tenant", "acme")
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["results"][0]["ticket_id"] == "RO-1"
        assert scopegate("get", str(ro), "RO-1", "--tenant", "acme").returncode == 0
    assert before != written  # the writer's commit changed the folder...
    assert snapshot(index) == written  # ...and nothing the readers did


def test_opening_an_index_never_writes_the_stored_spec(index: Path) -> None:
    before = snapshot(index)
    EmbeddedBackend.open(index).close_sync()
    EmbeddedBackend(ticket_spec(), index).close_sync()  # opening with a spec is still only a read
    after = snapshot(index)
    assert after[SPEC_FILE] == before[SPEC_FILE]
    assert {k: v for k, v in after.items() if not k.startswith(".tantivy-")} == before


def test_creating_stores_the_spec_atomically_and_concurrent_creators_agree(tmp_path: Path) -> None:
    """Several processes creating one new index at once: one spec file, valid, no temporary files left."""
    folder = tmp_path / "new-index"
    script = "import sys; from scopegate.backends.embedded import EmbeddedBackend; from scopegate.demo.corpus import"
    script += " ticket_spec; EmbeddedBackend(ticket_spec(), sys.argv[1]).close_sync()"
    procs = [subprocess.Popen([sys.executable, "-c", script, str(folder)]) for _ in range(4)]
    assert [p.wait(120) for p in procs] == [0, 0, 0, 0]
    stored = json.loads((folder / SPEC_FILE).read_text("utf-8"))
    assert stored["name"] == "search_tickets" and stored["format"] == 2
    assert not list(folder.glob("*.tmp"))
    assert EmbeddedBackend.open(folder).count_sync() == 0


def config_for(index_parent: Path, tmp_path: Path, **spec_changes: Any) -> Path:
    tool = {**spec_to_dict(ticket_spec()), **spec_changes, "backend": "local"}
    tool.pop("scope_keys")
    config = {
        "version": 1,
        "backends": {"local": {"type": "embedded", "path": str(index_parent)}},
        "search_tools": [{k: v for k, v in tool.items() if v is not None}],
        "stdio": {"tenant": "acme"},
    }
    path = tmp_path / "scopegate.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), "utf-8")
    return path


def test_a_mapping_mismatch_is_named_by_check_serve_and_open(index: Path, tmp_path: Path) -> None:
    """Wave 1: `check` said ok and `serve` refused without saying which field differs."""
    parent = tmp_path / "indexes"
    parent.mkdir()
    shutil.copytree(index, parent / "tickets")
    changed = ["subject^3", "body", "notes"]
    config = config_for(parent, tmp_path, text_fields=changed)
    checked = scopegate("check", str(config))
    assert checked.returncode == 1
    assert "text_fields" in checked.stderr and "notes" in checked.stderr, checked.stderr
    served = scopegate("serve", str(config))
    assert served.returncode == 1 and "text_fields" in served.stderr and "Traceback" not in served.stderr
    spec = SearchSpec.from_dict({**spec_to_dict(ticket_spec()), "text_fields": changed})
    with pytest.raises(ConfigError, match="text_fields: index has subject, body, spec has subject, body, notes"):
        EmbeddedBackend(spec, parent / "tickets")
    assert scopegate("check", str(config_for(parent, tmp_path))).returncode == 0  # the same mapping is fine


@pytest.mark.skipif(not ROOT, reason="mounting a tmpfs needs root")
def test_the_storage_diagnosis_names_a_full_and_a_read_only_disk_and_nothing_on_a_healthy_one(tmp_path: Path) -> None:
    """tantivy may only say that "an index writer was killed": the error must still say why."""
    assert storage_problem(tmp_path) is None
    assert not list(tmp_path.iterdir())  # the probe file is gone
    with small_disk(tmp_path / "disk", "1m") as disk:
        with contextlib.suppress(OSError):
            (disk / "filler").write_bytes(b"x" * 2_000_000)
        full = storage_problem(disk)
        assert full is not None and "No space left on device" in full and str(disk) in full
        (disk / "filler").unlink()
        assert storage_problem(disk) is None
        subprocess.run(["mount", "-o", "remount,ro", str(disk)], check=True)
        read_only = storage_problem(disk)
        assert read_only is not None and "Read-only file system" in read_only


@pytest.mark.skipif(not ROOT, reason="mounting a size-limited tmpfs needs root")
def test_a_full_disk_during_ingest_is_an_ingest_error_saying_what_was_committed(tmp_path: Path) -> None:
    with small_disk(tmp_path / "small-disk", "3m") as disk:
        body = "refund failed with E4012 " * 80

        def documents(start: int) -> Iterator[dict[str, Any]]:
            for i in range(start, start + 50_000):
                yield {"ticket_id": f"F-{i}", "tenant_id": "acme", "subject": f"full {i}", "body": f"{body} {i}"}

        backend = EmbeddedBackend(ticket_spec(), disk / "index")
        with pytest.raises(IngestError) as caught:
            backend.ingest_sync(documents(0), batch_size=300)
        error = caught.value
        assert error.committed is not None and error.committed > 0 and error.commits
        assert f"after {error.committed} documents were committed" in str(error)
        assert "No space left" in str(error)
        backend.close_sync()
        reopened = EmbeddedBackend.open(disk / "index")
        assert reopened.count_sync() == error.committed  # everything committed is there, nothing else
        assert reopened.get_sync("F-0", Scope("acme")) is not None
        reopened.close_sync()
        # The command line: one line with the counts and exit 1, never a traceback.
        source = tmp_path / "more.jsonl"
        source.write_text("".join(json.dumps(d) + "\n" for d in documents(100_000)), "utf-8")
        cli = scopegate("ingest", str(disk / "index"), str(source), "--quiet", "--batch-size", "300")
        assert cli.returncode == 1, cli.stderr
        assert "documents were committed" in cli.stderr and "Traceback" not in cli.stderr
