"""Issue 35: `scopegate search/get/count` call a configured tool with --config/--tool, and count an index folder."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from scopegate.demo.corpus import ticket_spec


def scopegate(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "scopegate.cli", *args],
        capture_output=True, text=True, timeout=120, cwd=cwd, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def config_for(index: Path) -> Path:
    tool = {k: v for k, v in ticket_spec().to_dict().items() if k != "scope_keys"}
    tool.update(backend="local", index=index.name)
    config = {
        "version": 1,
        "backends": {"local": {"type": "embedded", "path": str(index.parent)}},
        "search_tools": [tool],
    }
    path = index.parent / "scopegate.json"
    path.write_text(json.dumps(config), "utf-8")
    return path


def test_count_an_index_folder_and_a_configured_tool(index: Path) -> None:
    done = scopegate("count", str(index), "--tenant", "acme", cwd=index.parent)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"status": "ok", "tool": "search_tickets", "count": 40}
    config = config_for(index)
    done = scopegate("count", "--config", str(config), "--tenant", "globex", cwd=index.parent)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["count"] == 40


def test_search_and_get_through_the_config(index: Path) -> None:
    config = config_for(index)
    done = scopegate("search", "refund", "--config", str(config), "--tool", "search_tickets", "--tenant", "acme",
                     cwd=index.parent)  # fmt: skip
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert found["status"] == "ok" and found["results"]
    first = found["results"][0]["ticket_id"]
    done = scopegate(
        "get", first, "--config", str(config), "--tool", "get_ticket", "--tenant", "acme", cwd=index.parent
    )
    assert done.returncode == 0 and json.loads(done.stdout)["document"]["ticket_id"] == first
    done = scopegate("get", first, "--config", str(config), "--tenant", "globex", cwd=index.parent)
    assert done.returncode == 2 and json.loads(done.stdout)["error_code"] == "NOT_FOUND"


def test_usage_mistakes_exit_2(index: Path) -> None:
    config = config_for(index)
    for args in (
        ("search", str(index), "refund", "--config", str(config), "--tenant", "acme"),  # INDEX and --config
        ("search", "refund", "--tool", "search_tickets", "--tenant", "acme"),  # --tool without --config
        ("search", "refund", "--config", str(config), "--tool", "nope", "--tenant", "acme"),  # unknown tool
        ("count", "--tenant", "acme"),  # neither INDEX nor --config
    ):
        done = scopegate(*args, cwd=index.parent)
        assert done.returncode == 2, (args, done.stdout, done.stderr)
        assert "Traceback" not in done.stderr
