"""The CLI on real issue-tracker data (../shared/data/tickets): CSV with multi-line fields, repo as tenant."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from scopegate.search.spec import spec_from_dict
from scopegate_lab.oracle import expected_total

SPEC = {
    "name": "search_issues",
    "description": "Search this project's GitHub issues.",
    "text_fields": ["title^3", "body"],
    "filters": [{"name": "label", "allowed": ["bug", "feature", "question"]}],
    "id_field": "issue_id",
    "tenant_field": "repo",
    "result_fields": ["title", "label"],
    "snippet_field": "body",
    "fetch_name": "get_issue",
}


def scopegate(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "scopegate.cli", *args], capture_output=True, text=True, timeout=120)


def test_ingest_search_get_on_nlbse_issues(tmp_path: Path, shared: Callable[..., Path]) -> None:
    csv.field_size_limit(2**31 - 1)
    source = shared("tickets", "nlbse24-github-issues", "issues_train.csv")
    spec_file = tmp_path / "spec.json"
    spec_file.write_text(json.dumps(SPEC))
    index = tmp_path / "index"
    done = scopegate("ingest", str(index), str(source), "--spec", str(spec_file), "--map", "id=@row", "--quiet")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    with source.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert report["indexed"] == len(rows) == 1500 and report["failed"] == 0

    repos = sorted({r["repo"] for r in rows})
    tenant, other = repos[0], repos[1]
    found = scopegate("search", str(index), "crash when opening", "--tenant", tenant, "--filter", "label=bug")
    assert found.returncode == 0, found.stderr
    result = json.loads(found.stdout)
    expected = expected_total(spec_from_dict(SPEC), rows, "crash when opening", tenant, {"label": "bug"})
    assert result["total"] == expected > 0
    own_ids = {str(i) for i, r in enumerate(rows, start=1) if r["repo"] == tenant}
    assert all(hit["issue_id"] in own_ids for hit in result["results"])
    assert len(json.dumps(result["results"], ensure_ascii=False)) <= 2500

    other_id = next(str(i) for i, r in enumerate(rows, start=1) if r["repo"] == other)
    denied = scopegate("get", str(index), other_id, "--tenant", tenant)
    assert denied.returncode == 2 and json.loads(denied.stdout)["error_code"] == "NOT_FOUND"
    allowed = scopegate("get", str(index), other_id, "--tenant", other)
    assert allowed.returncode == 0 and json.loads(allowed.stdout)["document"]["issue_id"] == other_id

    bad = scopegate("search", str(index), "x", "--tenant", tenant, "--filter", "label=wontfix")
    assert bad.returncode == 2 and json.loads(bad.stdout)["allowed"] == ["bug", "feature", "question"]


def test_every_command_has_help() -> None:
    from scopegate.cli import cli

    names = list(cli.commands)
    assert {"demo", "ingest", "search", "get", "spec"} <= set(names)
    helps = {name: command.get_short_help_str() for name, command in cli.commands.items()}
    for name in names:
        assert helps.get(name), f"command {name} has no help text"
        done = scopegate(name, "--help")
        assert done.returncode == 0 and "usage:" in done.stdout, name
