"""The report a team acts on (issue 38): per kind and per tool, failure transcripts with responses, and
the declaration diff. Pure functions over scores."""

from __future__ import annotations

from scopegate.evals.report import diff_runs, markdown
from scopegate.evals.run import EvalRun
from scopegate.evals.scoring import CaseScore, TurnScore

OK_TURN = TurnScore(True, True, True, False, True, True, (), ())
BAD_TURN = TurnScore(True, False, False, False, False, True, (), ("expected get_bug first, got search_bugs",))


def _score(eval_id: str, passed: bool, tool: str = "get_bug", kind: str = "tool") -> CaseScore:
    call = {"tool": "search_bugs", "args": {"query": "ALPHA-7"}, "status": "error", "error_code": "BAD_QUERY",
            "response": {"status": "error", "error_code": "BAD_QUERY", "message": "query is empty"}}  # fmt: skip
    transcript = ({"user": "Show me bug ALPHA-7.", "calls": [call], "reply": "No such bug.", "confirmations": 0},)
    return CaseScore(eval_id, kind, (OK_TURN if passed else BAD_TURN,), transcript=transcript, tools=(tool,))


def _run(*scores: CaseScore) -> EvalRun:
    return EvalRun("team", "scopegate.yaml", "m", "adk", [list(scores)], 1.0, "t", (0, 0, 0), (0, 0, 0), 1.0)


def test_the_report_breaks_down_by_kind_and_tool_and_shows_failure_transcripts() -> None:
    text = markdown([_run(_score("a", True, "search_bugs"), _score("b", False))])
    assert "## By case kind" in text and "| tool | 2 | 0.50 |" in text
    assert "## By expected tool" in text and "| get_bug | 1 | 0.00 |" in text
    assert "### `b` (tool)" in text and "- user: Show me bug ALPHA-7." in text
    assert "-> error BAD_QUERY" in text and "query is empty" in text  # the response, not just its status
    assert "### `a`" not in text


def test_the_declaration_diff_lists_the_cases_that_changed() -> None:
    before = [_run(_score("a", True), _score("b", False))]
    after = [_run(_score("a", True), _score("b", True))]
    text = diff_runs(before, after, ("old.yaml", "new.yaml"))
    assert "Passed: 1/2 -> 2/2" in text
    assert "| `team/b` | FAIL | pass |" in text and "`team/a`" not in text
    assert "1 of 2 cases changed" in text
