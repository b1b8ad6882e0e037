"""The ``scopegate`` CLI on real indexes and in real processes: scope keys, exit codes, closed pipes,
a missing extra, Ctrl-C."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from scopegate.backends.embedded import EmbeddedBackend
from scopegate.cli import main
from scopegate.scope import ScopeKeys
from scopegate.search.spec import KeywordFilter, SearchSpec, TextField

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "scopegate.yaml"

ORG_SPEC = SearchSpec(
    name="search_notes",
    description="Search this organisation's notes.",
    text_fields=(TextField("subject", 3.0), TextField("body")),
    filters=(KeywordFilter("kind", ("memo", "minutes")),),
    index="notes",
    id_field="note_id",
    tenant_field="org_id",
    group_field="team_ids",
    result_fields=("subject", "kind"),
    fetch_name="get_note",
    fetch_description="Fetch one note by id.",
    scope_keys=ScopeKeys(tenant="org", groups="teams"),
)
NOTES = [
    {"note_id": "A-1", "org_id": "acme", "team_ids": ["red"], "kind": "memo", "subject": "refund policy", "body": "x"},
    {"note_id": "A-2", "org_id": "acme", "team_ids": ["blue"], "kind": "memo", "subject": "refund audit", "body": "y"},
    {
        "note_id": "A-3",
        "org_id": "acme",
        "team_ids": ["red", "blue"],
        "kind": "minutes",
        "subject": "refund",
        "body": "",
    },
    {"note_id": "G-1", "org_id": "globex", "team_ids": ["red"], "kind": "memo", "subject": "refund", "body": "z"},
]


def scopegate(*args: str, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "scopegate.cli", *args], capture_output=True, text=True, timeout=120, **kwargs
    )


@pytest.fixture(scope="module")
def org_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("org") / "notes"
    backend = EmbeddedBackend(ORG_SPEC, path)
    assert backend.ingest_sync(NOTES).indexed == len(NOTES)
    return path


@pytest.fixture(scope="module")
def ticket_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from scopegate.demo.corpus import generate_tickets, ticket_spec

    path = tmp_path_factory.mktemp("tickets") / "index"
    EmbeddedBackend(ticket_spec(), path).ingest_sync(list(generate_tickets(per_tenant=40)))
    return path


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, Any, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, json.loads(out) if out.strip() else None, err


# -- scope keys come from the index's stored spec --------------------------------------------
def test_search_and_get_use_the_specs_scope_keys(org_index: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Fails on the old CLI, which put the scope under tenant_id/group_ids whatever the spec said."""
    code, out, err = run(["search", str(org_index), "refund", "--tenant", "acme", "--group", "red"], capsys)
    assert code == 0, (out, err)
    assert sorted(r["note_id"] for r in out["results"]) == ["A-1", "A-3"] and out["total"] == 2
    code, out, _ = run(
        ["search", str(org_index), "refund", "--tenant", "acme", "--group", "red", "--group", "blue"], capsys
    )
    assert code == 0 and out["total"] == 3
    code, out, _ = run(["search", str(org_index), "refund", "--tenant", "acme", "--groups", "blue"], capsys)
    assert code == 0 and sorted(r["note_id"] for r in out["results"]) == ["A-2", "A-3"] and out["total"] == 2
    code, out, _ = run(
        ["search", str(org_index), "refund", "--tenant", "acme", "--group", "red", "--filter", "kind=minutes"], capsys
    )
    assert code == 0 and [r["note_id"] for r in out["results"]] == ["A-3"]

    code, out, _ = run(["get", str(org_index), "A-2", "--tenant", "acme", "--group", "blue"], capsys)
    assert code == 0 and out["document"]["note_id"] == "A-2"
    code, out, _ = run(["get", str(org_index), "A-2", "--tenant", "acme", "--group", "red"], capsys)
    assert code == 2 and out["error_code"] == "NOT_FOUND"  # another team's note
    code, out, _ = run(["get", str(org_index), "G-1", "--tenant", "acme", "--group", "red"], capsys)
    assert code == 2 and out["error_code"] == "NOT_FOUND"  # another organisation's note


def test_groups_are_required_when_the_spec_scopes_by_group(org_index: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["search", str(org_index), "refund", "--tenant", "acme"], capsys)
    assert code == 2 and out["error_code"] == "NO_SCOPE"


def test_scope_the_spec_cannot_carry_is_refused(ticket_index: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The demo spec has no groups or user key: --group/--user would silently do nothing, so they are refused."""
    for extra in (["--group", "red"], ["--groups", "red,blue"], ["--user", "u1"]):
        code, out, err = run(["search", str(ticket_index), "refund", "--tenant", "acme", *extra], capsys)
        assert code == 2 and out is None, extra
        assert "scopegate search: error: Invalid value for '--group/--user'" in err and "scope key" in err


# -- the exit-code table ---------------------------------------------------------------------
def test_exit_0_ok_and_2_refused_request(ticket_index: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["search", str(ticket_index), "refund", "--tenant", "acme"], capsys)
    assert code == 0 and out["status"] == "ok" and out["total"] > 0
    code, out, _ = run(["search", str(ticket_index), "refund", "--tenant", "acme", "--page", "99"], capsys)
    assert code == 2 and out["error_code"] == "BAD_PAGE"
    code, out, err = run(["search", str(ticket_index), "refund", "--tenant", "acme", "--filter", "product"], capsys)
    assert code == 2 and out is None and "'product' must look like NAME=VALUE" in err


def test_exit_3_no_index(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    empty = tmp_path / "not-an-index"
    empty.mkdir()
    log = tmp_path / "calls.jsonl"
    log.write_text("")
    for argv in (
        ["search", str(empty), "refund", "--tenant", "acme"],
        ["get", str(empty), "ACM-00001", "--tenant", "acme"],
        ["replay", str(log), "--index", str(empty)],
    ):
        code, out, err = run(argv, capsys)
        assert code == 3 and out is None, argv
        assert (
            err.startswith(f"scopegate {argv[0]}: error: ") and "does not exist" in err and len(err.splitlines()) == 1
        )


def test_exit_1_ingest_rejected_records(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "t.jsonl"
    rows = [
        {"ticket_id": "T-1", "tenant_id": "acme", "subject": "refund", "body": "ok", "product": "payments"},
        {"tenant_id": "acme", "subject": "no id", "body": "rejected"},
    ]
    source.write_text("".join(json.dumps(r) + "\n" for r in rows))
    code, out, _ = run(["ingest", str(tmp_path / "idx"), str(source), "--quiet"], capsys)
    assert code == 1 and out["indexed"] == 1 and out["failed"] == 1
    code, out, _ = run(["ingest", str(tmp_path / "idx"), str(source), "--quiet", "--allow-errors"], capsys)
    assert code == 0 and out["failed"] == 1


# -- real processes ----------------------------------------------------------------------------
def test_closed_stdout_exits_141_quietly(ticket_index: Path, tmp_path: Path) -> None:
    """The reader is gone before the first write: no traceback, no 'Exception ignored', exit 141."""
    spec = _many_operations_spec(tmp_path)
    for argv in (["search", str(ticket_index), "refund", "--tenant", "acme"], ["openapi", "inventory", str(spec)]):
        proc = subprocess.Popen(
            [sys.executable, "-m", "scopegate.cli", *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        assert proc.stdout is not None
        proc.stdout.close()
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 141, err
        assert err == b"", err


def test_pipe_into_head(ticket_index: Path, tmp_path: Path) -> None:
    """`scopegate ... | head -1`: the first line arrives, nothing on stderr, exit 0 or 141 (whether the rest
    was still being written when head left is up to the scheduler)."""
    spec = _many_operations_spec(tmp_path)
    for argv, first in (
        (["search", str(ticket_index), "refund", "--tenant", "acme"], "{"),
        (["openapi", "inventory", str(spec)], "METHOD"),
        (["openapi", "inventory", str(spec), "--format", "json"], "{"),
    ):
        command = " ".join([sys.executable, "-m", "scopegate.cli", *argv])
        done = subprocess.run(
            ["bash", "-c", f'{command} 2>"$0" | head -1; exit "${{PIPESTATUS[0]}}"', str(tmp_path / "err.txt")],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.stdout.split()[0] == first, done.stdout
        assert (tmp_path / "err.txt").read_text() == ""
        assert done.returncode in (0, 141)


def _many_operations_spec(tmp_path: Path) -> Path:
    """A spec whose inventory is far larger than a pipe's buffer."""
    paths = {f"/things{i}/{{id}}": {"get": {"operationId": f"getThing{i}", "parameters": [
        {"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}], "responses": {}}}
        for i in range(1500)}  # fmt: skip
    path = tmp_path / "many.json"
    path.write_text(json.dumps({"openapi": "3.0.0", "info": {"title": "t", "version": "1"}, "paths": paths}))
    return path


BLOCK_MCP = textwrap.dedent(
    """
    import sys

    class _NoMcp:
        def find_spec(self, name, path=None, target=None):
            if name.partition(".")[0] in ("mcp", "mcp_types"):
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None

    sys.meta_path.insert(0, _NoMcp())
    """
)


def test_missing_mcp_extra_is_one_line_exit_4(tmp_path: Path) -> None:
    shim = tmp_path / "shim"
    shim.mkdir()
    (shim / "sitecustomize.py").write_text(BLOCK_MCP)
    pythonpath = os.pathsep.join(p for p in (str(shim), os.environ.get("PYTHONPATH")) if p)
    env = {**os.environ, "PYTHONPATH": pythonpath, "SCOPEGATE_DATA": str(tmp_path / "data"), "SCOPEGATE_TENANT": "acme"}
    blocked = subprocess.run([sys.executable, "-c", "import mcp"], capture_output=True, text=True, env=env)
    assert blocked.returncode == 1 and "No module named 'mcp'" in blocked.stderr  # the shim works
    data = yaml.safe_load(EXAMPLE.read_text("utf-8"))
    data["auth"]["token_table"] = str((EXAMPLE.parent / data["auth"]["token_table"]).resolve())
    config = tmp_path / "scopegate.yaml"
    config.write_text(yaml.safe_dump(data), "utf-8")
    done = scopegate("serve", str(config), env=env, stdin=subprocess.DEVNULL)
    assert done.returncode == 4, done.stderr
    assert done.stderr.splitlines()[-1] == (
        "scopegate serve: error: this needs the 'mcp' extra (module 'mcp' is not installed): "
        "pip install 'scopegate[mcp]'"
    )
    assert "Traceback" not in done.stderr
    # Checking a config needs no server: its auth (token table, keys) is verified by the identity room.
    checked = scopegate("check", str(config), env=env, stdin=subprocess.DEVNULL)
    assert checked.returncode == 0, checked.stderr
    assert "http auth: token table with" in checked.stdout


def test_ctrl_c_exits_130(tmp_path: Path) -> None:
    """SIGINT while the command blocks reading its input (a FIFO nobody writes to)."""
    fifo = tmp_path / "spec.json"
    os.mkfifo(fifo)
    proc = subprocess.Popen(
        [sys.executable, "-m", "scopegate.cli", "openapi", "inventory", str(fifo)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        writer = os.open(fifo, os.O_WRONLY)  # returns once the command has opened the FIFO to read it
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        os.close(writer)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    assert err.decode().strip() == "scopegate: interrupted" and out == b""


def test_node_module_entry_points(tmp_path: Path) -> None:
    """`python -m scopegate.engines.<engine>_node start|stop|url` (scripts/run-tests.sh) keep working."""
    for module in ("opensearch_node", "elasticsearch_node"):
        base = [sys.executable, "-m", f"scopegate.engines.{module}"]
        helped = subprocess.run([*base, "--help"], capture_output=True, text=True, timeout=60)
        assert helped.returncode == 0 and f"usage: python -m scopegate.engines.{module}" in helped.stdout
        assert all(c in helped.stdout for c in ("start", "stop", "status", "url", "build"))
        state = ["--state-dir", str(tmp_path / module)]
        url = subprocess.run([*base, "url", *state], capture_output=True, text=True, timeout=60)
        assert url.returncode == 4 and url.stderr.endswith("url: error: no running node\n")
        stop = subprocess.run([*base, "stop", *state], capture_output=True, text=True, timeout=60)
        assert stop.returncode == 0 and stop.stdout == "not running\n"
