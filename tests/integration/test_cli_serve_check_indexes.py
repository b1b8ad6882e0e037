"""Issue 19: `serve` refuses a missing or empty index; `check --deep` opens indexes and names mapping drift."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

CONFIG = """\
version: 1
backends:
  local: {type: embedded, path: ./data}
stdio: {tenant: acme}
search_tools:
  - backend: local
    name: search_notes
    description: Search notes.
    index: notes
    id_field: note_id
    text_fields: [title^2, body]
    filters:
      - {name: kind, allowed: [bug, idea]}
    result_fields: [title, kind]
    snippet_field: title
"""


def scopegate(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "scopegate.cli", *args],
        capture_output=True, text=True, timeout=120, cwd=cwd, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def _notes(tmp_path: Path, rows: list[dict[str, str]]) -> Path:
    source = tmp_path / "notes.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    return source


def test_serve_refuses_a_missing_index_instead_of_serving_an_empty_one(tmp_path: Path) -> None:
    (tmp_path / "scopegate.yaml").write_text(CONFIG)
    done = scopegate("serve", "scopegate.yaml", cwd=tmp_path)
    assert done.returncode == 1
    assert f"search_notes: the embedded index {tmp_path / 'data' / 'notes'} does not exist" in done.stderr
    assert "scopegate ingest FILE --config scopegate.yaml --tool search_notes" in done.stderr
    assert not (tmp_path / "data").exists()  # old code created the folder and served an empty index

    deep = scopegate("check", "--deep", "scopegate.yaml", cwd=tmp_path)
    assert deep.returncode == 1 and "does not exist" in deep.stderr


def test_serve_refuses_an_empty_index(tmp_path: Path) -> None:
    (tmp_path / "scopegate.yaml").write_text(CONFIG)
    empty = _notes(tmp_path, [])
    ingest = scopegate("ingest", str(empty), "--config", "scopegate.yaml", "--quiet", cwd=tmp_path)
    assert ingest.returncode == 1 and "none (the file is empty)" in ingest.stderr  # nothing to map
    from scopegate.backends.embedded import EmbeddedBackend
    from scopegate.config.loader import load_config

    spec = load_config(tmp_path / "scopegate.yaml").search_tools[0].spec
    EmbeddedBackend(spec, tmp_path / "data" / "notes")  # an index folder with no documents
    done = scopegate("serve", "scopegate.yaml", cwd=tmp_path)
    assert done.returncode == 1 and "notes is empty" in done.stderr


def test_check_deep_counts_documents_and_names_drift(tmp_path: Path) -> None:
    config = tmp_path / "scopegate.yaml"
    config.write_text(CONFIG)
    rows = [{"note_id": "n1", "tenant_id": "acme", "title": "Crash on start", "body": "x", "kind": "bug"}]
    ingest = scopegate("ingest", str(_notes(tmp_path, rows)), "--config", "scopegate.yaml", "--quiet", cwd=tmp_path)
    assert ingest.returncode == 0, ingest.stderr
    ok = scopegate("check", "--deep", "scopegate.yaml", cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["indexes"] == [
        {"tool": "search_notes", "path": str(tmp_path / "data" / "notes"), "present": True, "documents": 1,
         "drift": []}
    ]  # fmt: skip
    plain = scopegate("check", "scopegate.yaml", cwd=tmp_path)
    assert plain.returncode == 0 and "indexes" not in json.loads(plain.stdout)

    config.write_text(CONFIG.replace("[title^2, body]", "[title^2]").replace("[bug, idea]", "[bug, idea, task]"))
    drifted = scopegate("check", "--deep", "scopegate.yaml", cwd=tmp_path)
    assert drifted.returncode == 1
    assert "text_fields: index has title, body, spec has title" in drifted.stderr
    assert "filter kind allowed values: index has bug, idea, spec has bug, idea, task" in drifted.stderr
    served = scopegate("serve", "scopegate.yaml", cwd=tmp_path)
    assert served.returncode == 1 and "text_fields: index has title, body, spec has title" in served.stderr


def test_check_validates_a_config_without_the_mcp_extra(tmp_path: Path) -> None:
    # Issue 19: after `make demo` (no extras), `scopegate check` ended in "needs the mcp extra" even for a config
    # that needs nothing of it; now it validates, and says what serving will need.
    import os

    from test_cli_exit_codes import BLOCK_MCP

    shim = tmp_path / "shim"
    shim.mkdir()
    (shim / "sitecustomize.py").write_text(BLOCK_MCP)
    (tmp_path / "scopegate.yaml").write_text(CONFIG)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(shim), os.environ.get("PYTHONPATH")) if p)}
    done = subprocess.run(
        [sys.executable, "-m", "scopegate.cli", "check", "scopegate.yaml"],
        capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    notes = json.loads(done.stdout)["notes"]
    assert "serve: needs the 'mcp' extra, not installed here: pip install 'scopegate[mcp]'" in notes
    assert any("scopegate ingest FILE --config CONFIG --tool search_notes" in note for note in notes)
