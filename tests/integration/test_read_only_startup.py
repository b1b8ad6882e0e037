"""Issue 36 (M2, L3): servers start on, and read, an index on a genuinely read-only mount, by any path.

M2: ``scopegate serve`` and ``scopegate check --deep`` counted documents by opening tantivy on the
folder itself, which takes a lock file there: "Failed to acquire Lockfile ... Read-only file system".
L3: the read-only view's links were relative to the caller's folder, so a relative index path gave
``FileDoesNotExist("meta.json")``. The folder is a read-only bind mount (root) or chmod'ed (non-root).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from mounts import read_only

from scopegate.backends.embedded import EmbeddedBackend
from scopegate.demo.corpus import ticket_spec
from scopegate.scope import Scope
from scopegate.search.spec import spec_to_dict


def scopegate(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "scopegate.cli", *args],
        capture_output=True, text=True, timeout=120, cwd=cwd, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def write_config(where: Path, index_parent: str) -> Path:
    tool = {**spec_to_dict(ticket_spec()), "backend": "local"}
    tool.pop("scope_keys")
    config = {
        "version": 1,
        "backends": {"local": {"type": "embedded", "path": index_parent}},
        "search_tools": [{k: v for k, v in tool.items() if v is not None}],
        "stdio": {"tenant": "acme"},
    }
    path = where / "scopegate.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), "utf-8")
    return path


def test_serve_and_check_deep_start_on_a_read_only_mount(index: Path, tmp_path: Path) -> None:
    parent = tmp_path / "indexes"
    parent.mkdir()
    shutil.copytree(index, parent / ticket_spec().index)
    before = sorted(p.name for p in (parent / ticket_spec().index).iterdir())
    with read_only(parent, tmp_path) as ro:
        config = write_config(tmp_path, str(ro))
        deep = scopegate("check", "--deep", str(config), cwd=tmp_path)
        assert deep.returncode == 0, deep.stderr
        assert "Lockfile" not in deep.stderr
        (state,) = json.loads(deep.stdout)["indexes"]
        assert state["present"] and state["documents"] == 80 and state["drift"] == []
        served = scopegate("serve", str(config), cwd=tmp_path)  # stdio; stdin closed: serves, then ends
        assert served.returncode == 0, served.stderr
        assert "Lockfile" not in served.stderr and "Traceback" not in served.stderr
    assert sorted(p.name for p in (parent / ticket_spec().index).iterdir()) == before  # nothing written


def test_a_read_only_index_opens_by_a_relative_path(
    index: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with read_only(index, tmp_path) as ro:
        relative = ro.relative_to(tmp_path)
        monkeypatch.chdir(tmp_path)
        backend = EmbeddedBackend.open(relative)
        try:
            assert backend.read_only
            assert backend.count_sync() == 80
            assert backend.count_sync(Scope("acme")) == 40
        finally:
            backend.close_sync()
        # The command line, with the relative path the README's examples use.
        done = scopegate("search", str(relative), "refund", "--tenant", "acme", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["total"] > 0
