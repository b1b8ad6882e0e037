"""`scopegate replay` and `scopegate stats` against the real embedded engine and a real call log."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from scopegate.backends.embedded import EmbeddedBackend
from scopegate.backends.embedded_storage import write_spec_file
from scopegate.cli import main as cli_main
from scopegate.context import CallContext
from scopegate.guard.calllog import CallLog
from scopegate.guard.guard import Guard
from scopegate.guard.logfile import iter_records
from scopegate.guard.replay import collect_searches, replay
from scopegate.search.model import SearchRequest
from scopegate.search.spec import KeywordFilter, SearchSpec, TextField
from scopegate.search.tools import SearchTool

REPO = Path(__file__).resolve().parents[3]
SHARED = REPO.parent / "shared" / "data"


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = cli_main(argv)
    return code, capsys.readouterr().out


def with_boosts(path: Path, dest: Path, boosts: dict[str, float]) -> Path:
    """A copy of the index whose stored spec has other field boosts (the on-disk index is unchanged)."""
    shutil.copytree(path, dest)
    backend = EmbeddedBackend.open(dest)
    spec = dataclasses.replace(
        backend.spec,
        text_fields=tuple(TextField(t.name, boosts.get(t.name, t.boost)) for t in backend.spec.text_fields),
    )
    write_spec_file(dest, spec, replace=True)  # opening never rewrites it: only ingest/create (and this) do
    return dest


def test_replay_passes_on_an_unchanged_index(
    logged_workload: dict[str, Any], guard_index: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = run_cli(["replay", str(logged_workload["log"]), "--index", str(guard_index), "--json"], capsys)
    report = json.loads(out)
    assert code == 0, report["violations"]
    s = report["summary"]
    assert s["replayed"] == s["logged_searches"] == 4 * 14  # distinct calls, duplicates folded
    assert s["mean_jaccard_at_5"] == 1.0 and s["top5_changed"] == 0 and s["rank_moves"] == 0
    assert s["to_zero"] == s["from_zero"] == s["errors"] == s["total_changed"] == 0
    assert any(c["old_total"] == 0 for c in report["calls"])  # the zero-result query was replayed too
    # the table form says the same
    code, out = run_cli(["replay", str(logged_workload["log"]), "--index", str(guard_index), "--sample", "10"], capsys)
    assert code == 0 and out.strip().endswith("PASS") and "replayed 10 of 56" in out


def test_replay_detects_a_boost_change(
    logged_workload: dict[str, Any], guard_index: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    changed = with_boosts(guard_index, tmp_path / "body-boosted", {"subject": 0.2, "body": 4.0})
    code, out = run_cli(["replay", str(logged_workload["log"]), "--index", str(changed), "--json"], capsys)
    report = json.loads(out)
    assert code == 1
    s = report["summary"]
    assert s["jaccard_drop"] > 0.05 and s["top5_changed"] > 0
    assert any("Jaccard" in v for v in report["violations"])
    # a boost change reorders, it does not change what matches
    assert s["total_changed"] == 0 and s["to_zero"] == s["from_zero"] == 0
    moved = [c for c in report["calls"] if c["rank_changes"]]
    assert moved and all(c["old_total"] == c["new_total"] for c in moved)
    # thresholds are configurable: accept any reordering, but still no lost results
    code, out = run_cli(
        ["replay", str(logged_workload["log"]), "--index", str(changed), "--max-jaccard-drop", "1"], capsys
    )
    assert code == 0 and "PASS" in out
    code, out = run_cli(
        ["replay", str(logged_workload["log"]), "--index", str(changed), "--max-jaccard-drop", "none",
         "--max-changed-share", "0.01"],
        capsys,
    )  # fmt: skip
    assert code == 1 and "changed top 5" in out


async def test_replay_reports_zero_result_flips_both_ways(
    logged_workload: dict[str, Any], guard_index: Path, tmp_path: Path
) -> None:
    path = tmp_path / "edited"
    shutil.copytree(guard_index, path)
    backend = EmbeddedBackend.open(path)
    try:
        records = list(iter_records([logged_workload["log"]]))
        calls, _ = collect_searches(records, tool="search_tickets")
        target = next(c for c in calls if c.query == "selfie check fails" and c.scope.tenant_id == "globex")
        # delete every globex ticket the logged call could reach, and add one for the "no results" query
        tool = SearchTool(backend.spec, backend)
        request = SearchRequest(query=target.query, filters=target.filters, page=1)
        everything = dataclasses.replace(tool.build_query(request, target.scope), offset=0, limit=1000)
        raw = await backend.search(everything)
        assert 0 < raw.total <= 1000
        doomed = {h.doc_id for h in raw.hits}
        await backend.delete(sorted(doomed), tenant="globex")
        await backend.ingest([
            {"ticket_id": "ACM-ZEBRA", "tenant_id": "acme", "product": "payments", "status": "open",
             "subject": "zebra unicorn", "body": "A zebra unicorn appeared in the refund flow."}
        ])  # fmt: skip
        report = await replay(tool, calls)
        s = report.summary()
        assert s["to_zero"] >= 1 and s["from_zero"] >= 1
        flips = {(d.call.scope.tenant_id, d.call.query, d.zero_flip) for d in report.diffs if d.zero_flip}
        assert ("globex", "selfie check fails", "to_zero") in flips
        assert ("acme", "zebra unicorn", "from_zero") in flips
        assert not report.passed() and any("lost all" in v for v in report.violations())
    finally:
        await backend.close()


def test_replay_since_filters_old_calls(
    logged_workload: dict[str, Any], guard_index: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = run_cli(
        ["replay", str(logged_workload["log"]), "--index", str(guard_index), "--since", "2999-01-01T00:00:00Z",
         "--json"],
        capsys,
    )  # fmt: skip
    report = json.loads(out)
    assert code == 1 and report["summary"]["replayed"] == 0  # nothing replayed is not a pass
    assert any("at least 1" in v for v in report["violations"])


def test_stats_from_the_log_match_the_live_metrics(
    logged_workload: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = run_cli(["stats", str(logged_workload["log"]), "--window", "all", "--json"], capsys)
    assert code == 0
    data = json.loads(out)
    live = logged_workload["snapshot"]
    fig = data["figures"]
    assert fig["calls"] == live["calls"] == logged_workload["calls"]
    for name in (
        "errors",
        "zero_result_rate",
        "cache_hit_rate",
        "searches_per_answered_question",
        "answered_questions",
    ):
        assert fig[name] == pytest.approx(live[name]), name
    assert fig["error_rate_by_code"] == pytest.approx(live["error_rate_by_code"])
    assert fig["cache_hit_rate"] == pytest.approx(0.5)  # the second pass was all hits
    assert 0 < fig["zero_result_rate"] < 1
    code, out = run_cli(["stats", str(logged_workload["log"]), "--window", "1h", "--buckets", "6"], capsys)
    assert code == 0
    assert "zero-result rate" in out and "searches per answered question" in out and "p95" in out


@pytest.fixture(scope="module")
def issues_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    csv_path = SHARED / "tickets" / "nlbse24-github-issues" / "issues_train.csv"
    if not csv_path.exists():
        pytest.skip(f"shared data not available: {csv_path} is missing")
    import asyncio

    from scopegate.ingest.mapping import FieldMapping
    from scopegate.ingest.run import ingest_path

    spec = SearchSpec(
        name="search_issues",
        description="Search this project's GitHub issues by keywords.",
        text_fields=(TextField("title", 3.0), TextField("body")),
        filters=(KeywordFilter("label", ("bug", "feature", "question")),),
        id_field="issue_id",
        tenant_field="repo",
        result_fields=("title", "label"),
        snippet_field="body",
        fetch_name="get_issue",
        field_combination="best_fields",  # boosts stay query-time settings (see guard_index)
    )
    path = tmp_path_factory.mktemp("issues") / "index"
    backend = EmbeddedBackend(spec, path)
    report = asyncio.run(
        ingest_path(backend, csv_path, FieldMapping(id="@row", tenant="repo"), batch_size=1000, progress=False)
    )
    assert report.indexed > 1000
    return path


def test_replay_on_real_github_issues(issues_index: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import asyncio
    import csv

    csv_path = SHARED / "tickets" / "nlbse24-github-issues" / "issues_test.csv"
    with csv_path.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    # queries: the first words of unseen issue titles, asked within each issue's own repository
    queries = [(r["repo"], " ".join(r["title"].split()[:4]), r["label"]) for r in rows[::50]][:30]
    log_path = tmp_path / "issues.jsonl"

    async def log_calls() -> None:
        backend = EmbeddedBackend.open(issues_index)
        guard = Guard(call_log=CallLog.to_file(log_path), cap=None)
        tool = SearchTool(backend.spec, backend)
        for i, (repo, query, label) in enumerate(queries):
            args: dict[str, Any] = {"query": query}
            if i % 3 == 0:
                args["label"] = label
            await guard.call(tool, args, CallContext(state={"tenant_id": repo}, invocation_id=f"q{i}"))
        await guard.aclose()
        await backend.close()

    asyncio.run(log_calls())

    code, out = run_cli(["replay", str(log_path), "--index", str(issues_index), "--json"], capsys)
    same = json.loads(out)
    assert code == 0 and same["summary"]["mean_jaccard_at_5"] == 1.0
    assert same["summary"]["replayed"] >= 20

    changed = with_boosts(issues_index, tmp_path / "title-down", {"title": 0.1, "body": 3.0})
    code, out = run_cli(["replay", str(log_path), "--index", str(changed), "--json"], capsys)
    moved = json.loads(out)
    assert code == 1 and moved["summary"]["jaccard_drop"] > 0.05
    assert moved["summary"]["total_changed"] == 0


def _config(tmp_path: Path, index_parent: Path, index_name: str, text_fields: list[str]) -> Path:
    import yaml

    from scopegate.demo.corpus import PRODUCTS, STATUSES

    data = {
        "version": 1,
        "backends": {"local": {"type": "embedded", "path": str(index_parent)}},
        "search_tools": [
            {
                "backend": "local",
                "name": "search_tickets",
                "description": "Search tickets.",
                "index": index_name,
                "id_field": "ticket_id",
                "text_fields": text_fields,
                "field_combination": "best_fields",
                "filters": [
                    {"name": "product", "allowed": list(PRODUCTS)},
                    {"name": "status", "allowed": list(STATUSES)},
                ],
                "result_fields": ["subject", "status", "product"],
            }
        ],
    }
    path = tmp_path / f"scopegate-{len(list(tmp_path.glob('*.yaml')))}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), "utf-8")
    return path


def test_replay_from_a_config_file(
    logged_workload: dict[str, Any], guard_index: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    parent = tmp_path / "indexes"
    shutil.copytree(guard_index, parent / "tickets")
    same = _config(tmp_path, parent, "tickets", ["subject^3", "body"])
    code, out = run_cli(["replay", str(logged_workload["log"]), "--config", str(same), "--json"], capsys)
    assert code == 0 and json.loads(out)["summary"]["mean_jaccard_at_5"] == 1.0
    boosted = _config(tmp_path, parent, "tickets", ["subject^0.2", "body^4"])
    code, out = run_cli(["replay", str(logged_workload["log"]), "--config", str(boosted), "--json"], capsys)
    assert code == 1 and json.loads(out)["summary"]["jaccard_drop"] > 0.05
    code, _ = run_cli(["replay", str(logged_workload["log"]), "--config", str(same), "--tool", "nope"], capsys)
    assert code == 2
