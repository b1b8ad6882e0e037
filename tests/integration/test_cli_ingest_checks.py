"""Issue 19: bringing your own CSV. Real data: ../shared/data/tickets/gitbugs/hadoop_bugs.csv (2,503 Hadoop bug
reports: ``Summary, Issue id, Status, ...``, no tenant column, statuses outside a typical allowed list)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

SPEC = """\
name: search_bugs
description: Search Hadoop bug reports.
text_fields: [Summary^3, Description]
filters:
  - {name: Status, allowed: [Open, Resolved, Reopened]}
id_field: issue_id
tenant_field: project
result_fields: [Summary, Status]
snippet_field: Description
"""
CONFIG = """\
version: 1
backends:
  local: {type: embedded, path: ./data}
stdio: {tenant: hadoop}
search_tools:
  - backend: local
    index: bugs
""" + "".join(f"    {line}\n" for line in SPEC.splitlines())


def scopegate(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "scopegate.cli", *args], capture_output=True, text=True, timeout=120, cwd=cwd
    )


@pytest.fixture
def bugs(shared: Callable[..., Path]) -> Path:
    return shared("tickets", "gitbugs", "hadoop_bugs.csv")


def test_missing_columns_are_one_up_front_error_naming_the_real_columns(tmp_path: Path, bugs: Path) -> None:
    # Old code: every row failed alone ("missing ticket_id", 2,503 of 2,503) and an index folder was created.
    done = scopegate("ingest", "idx", str(bugs), "--map", "id=Key", "--map", "tenant=Project", "--quiet", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stdout == ""
    error = done.stderr.strip().splitlines()[-1]
    assert "lacks the column(s) 'Key' (for ticket_id), 'Project' (for tenant_id)" in error
    assert "its columns are: 'Summary', 'Issue id', 'Status'" in error
    assert not (tmp_path / "idx").exists()


def test_constant_tenant_and_unlisted_values_warned_then_refused(tmp_path: Path, bugs: Path) -> None:
    (tmp_path / "spec.yaml").write_text(SPEC)
    base = ("ingest", "idx", str(bugs), "--spec", "spec.yaml", "--map", "id=Issue id", "--tenant", "hadoop", "--quiet")
    refused = scopegate(*base, "--unlisted", "refuse", cwd=tmp_path)
    assert refused.returncode == 1, refused.stderr
    assert "71 record(s) have a Status outside its allowed list (Open, Resolved, Reopened)" in refused.stderr
    assert "'Patch Available' ×41, 'In Progress' ×30" in refused.stderr and "nothing was written" in refused.stderr
    assert not (tmp_path / "idx").exists()

    done = scopegate(*base, cwd=tmp_path)  # --unlisted warn (default): ingested, and said so
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["indexed"] == 2503 and report["failed"] == 0
    assert report["unlisted"] == {"Status": {"Patch Available": 41, "In Progress": 30}}
    assert "warning: 71 record(s) have a Status outside" in done.stderr

    found = scopegate("get", "idx", "13404344", "--tenant", "hadoop", cwd=tmp_path)
    assert found.returncode == 0 and json.loads(found.stdout)["document"]["issue_id"] == "13404344"
    other = scopegate("get", "idx", "13404344", "--tenant", "acme", cwd=tmp_path)
    assert other.returncode == 2 and json.loads(other.stdout)["error_code"] == "NOT_FOUND"


def test_one_spec_source_config_tool_and_reingest_keeps_the_stored_spec(tmp_path: Path, bugs: Path) -> None:
    (tmp_path / "scopegate.yaml").write_text(CONFIG)
    (tmp_path / "spec.yaml").write_text(SPEC)
    # A config given as --spec: refused with the pointer to --config (old code: an unexplained schema error).
    wrong = scopegate("ingest", "x", str(bugs), "--spec", "scopegate.yaml", cwd=tmp_path)
    assert wrong.returncode == 2 and "use --config scopegate.yaml --tool NAME" in wrong.stderr

    args = ("--map", "id=Issue id", "--tenant", "hadoop", "--quiet")
    done = scopegate("ingest", str(bugs), "--config", "scopegate.yaml", "--tool", "search_bugs", *args, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["spec"] == "config" and Path(report["index"]) == tmp_path / "data" / "bugs"
    unknown = scopegate("ingest", str(bugs), "--config", "scopegate.yaml", "--tool", "nope", cwd=tmp_path)
    assert unknown.returncode == 2 and "its search tools are: search_bugs" in unknown.stderr

    # Re-ingest without --spec: the index's stored spec (old code: the demo spec, refused as another mapping).
    again = scopegate("ingest", "data/bugs", str(bugs), *args, cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["spec"] == "stored" and "demo ticket spec" not in again.stderr
    query = ("search", "data/bugs", "timestamp jar", "--tenant", "hadoop", "--filter", "Status=Open")
    hit = scopegate(*query, cwd=tmp_path)
    assert hit.returncode == 0, hit.stdout + hit.stderr
    assert all(r["Status"] == "Open" for r in json.loads(hit.stdout)["results"])


async def test_fetch_by_a_numeric_id_opens_the_document(tmp_path: Path, bugs: Path) -> None:
    # Issue 19: Hadoop issue ids are numbers; a model that sends 13404344 (not "13404344") got "id is required".
    from scopegate.backends.embedded import EmbeddedBackend
    from scopegate.context import CallContext
    from scopegate.search.tools import FetchTool

    (tmp_path / "spec.yaml").write_text(SPEC)
    args = ("--spec", "spec.yaml", "--map", "id=Issue id", "--tenant", "hadoop", "--quiet")
    assert scopegate("ingest", "idx", str(bugs), *args, cwd=tmp_path).returncode == 0
    backend = EmbeddedBackend.open(tmp_path / "idx")
    try:
        tool = FetchTool(backend.spec, backend)
        ctx = CallContext(state={"tenant_id": "hadoop"})
        found = (await tool.run({"id": 13404344}, ctx)).result
        assert found["status"] == "ok" and found["document"]["issue_id"] == "13404344"
        other = (await tool.run({"id": 13404344}, CallContext(state={"tenant_id": "acme"}))).result
        assert other["error_code"] == "NOT_FOUND"
    finally:
        await backend.close()


def test_a_piped_source_is_checked_and_ingested_in_one_pass(tmp_path: Path, bugs: Path) -> None:
    """``cat … | scopegate ingest IDX /dev/stdin``: a pipe can be read once. Old code refused it as a missing
    file; reading it twice (check, then ingest) would have ingested nothing."""
    (tmp_path / "spec.yaml").write_text(SPEC)
    base = ("ingest", "idx", "/dev/stdin", "--format", "csv", "--spec", "spec.yaml", "--map", "id=Issue id")

    def piped(*args: str) -> subprocess.CompletedProcess[str]:
        cat = subprocess.Popen(["cat", str(bugs)], stdout=subprocess.PIPE)  # a pipe, not a file
        try:
            return subprocess.run(
                [sys.executable, "-m", "scopegate.cli", *args], stdin=cat.stdout, capture_output=True, text=True,
                timeout=120, cwd=tmp_path,
            )  # fmt: skip
        finally:
            assert cat.stdout is not None
            cat.stdout.close()
            cat.wait(timeout=30)

    missing = piped(*base, "--quiet")  # no tenant column and no --tenant: refused before anything is written
    assert missing.returncode == 1 and "lacks the column(s) 'project'" in missing.stderr
    assert not (tmp_path / "idx").exists()
    refuse = piped(*base, "--tenant", "hadoop", "--unlisted", "refuse", "--quiet")
    assert refuse.returncode == 2 and "can be read only once" in refuse.stderr
    done = piped(*base, "--tenant", "hadoop", "--quiet")
    assert done.returncode == 0, done.stderr
    # A regular file given as stdin can be read twice: the full precheck, --unlisted refuse included.
    with bugs.open("rb") as source:
        from_file = subprocess.run(
            [sys.executable, "-m", "scopegate.cli", *base, "--tenant", "hadoop", "--unlisted", "refuse", "--quiet"],
            stdin=source, capture_output=True, text=True, timeout=120, cwd=tmp_path,
        )  # fmt: skip
    assert from_file.returncode == 1 and "nothing was written" in from_file.stderr
    report = json.loads(done.stdout)
    assert report["indexed"] == 2503 and report["failed"] == 0  # the same as from the file
    assert report["unlisted"] == {"Status": {"Patch Available": 41, "In Progress": 30}}
    assert "warning: 71 record(s) have a Status outside" in done.stderr and "(ingested)" in done.stderr
