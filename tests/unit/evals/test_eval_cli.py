"""``scopegate eval`` argument errors: one-line reports and exit codes, before any model is loaded."""

from __future__ import annotations

from typing import Any

import pytest

from scopegate.cli import main


@pytest.mark.parametrize(
    ("argv", "code", "message"),
    [
        (["eval", "no-such-set"], 1, "no eval set 'no-such-set'"),
        (["eval", "support", "--model", "offline:7b"], 1, "unknown offline model"),
        (["eval", "support", "--model", "offline:0.5b:sideways"], 1, "decision must be one of"),
        (["eval", "support", "--case", "nope"], 1, "no case selected"),
        (["eval", "-k", "0"], 2, "-k"),
        (["eval", "--transport", "carrier-pigeon"], 2, "transport"),
    ],
)
def test_bad_arguments(argv: list[str], code: int, message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == code
    assert message in capsys.readouterr().err


def test_gemini_without_a_key_is_refused(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    monkeypatch.delenv("GOOGLE_GENAI_USE_VERTEXAI", raising=False)
    assert main(["eval", "support", "--model", "gemini-2.5-flash"]) == 1
    assert "GOOGLE_API_KEY" in capsys.readouterr().err


# -- issue 38: unknown agents, variants and tool names are one line, before any model loads ----------
def _write_set(tmp_path: Any, agent: str, tool: str = "search_tickets") -> str:
    import json

    from scopegate.evals.evalset import CaseSpec, to_adk_case

    spec = CaseSpec.model_validate({"kind": "tool", "turns": [{"expect": [{"tool": tool, "any_args": True}]}]})
    case = to_adk_case("c1", ["hi"], {"tenant_id": "acme"}, spec, app_name="a", user_id="u")
    data = {"eval_set_id": "team", "eval_cases": [case], "scopegate": {"agent": agent}}
    path = tmp_path / "team.evalset.json"
    path.write_text(json.dumps(data), "utf-8")
    return str(path)


@pytest.mark.parametrize(
    ("agent", "tool", "extra", "message"),
    [
        ("scopegate.yaml", "search_tickets", [], "scopegate.agent: unknown agent 'scopegate.yaml'"),
        ("support", "search_tickets", ["--variant", "nope"], "unknown --variant 'nope' for agent 'support'"),
        ("support", "count_tickets", [], "case 'c1': scopegate.turns[0].expect[0].tool: 'count_tickets' is not a tool"),
    ],
)
def test_a_bad_target_is_one_line_before_the_model_loads(
    tmp_path: Any,
    agent: str,
    tool: str,
    extra: list[str],
    message: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    monkeypatch.delenv("GOOGLE_GENAI_USE_VERTEXAI", raising=False)
    # A Gemini id without a key would fail when the model is built: the target error must come first.
    assert main(["eval", _write_set(tmp_path, agent, tool), "--model", "gemini-x", *extra]) == 1
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1 and "Traceback" not in err


def test_a_crashed_set_keeps_the_earlier_results_and_writes_the_report(
    tmp_path: Any, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import json

    from scopegate.evals import run as run_module
    from scopegate.evals.run import EvalRun

    monkeypatch.setenv("GOOGLE_API_KEY", "unused")  # the model is a string; nothing is called

    async def fake_run_eval(eval_set: Any, *_a: Any, **_k: Any) -> EvalRun:
        if eval_set.agent == "orders":
            raise KeyError("the orders service did not start")
        return EvalRun(eval_set.eval_set_id, eval_set.agent, "m", "adk", [[]], 0.0, "t", (0, 0, 0), (0, 0, 0), 0.0)

    monkeypatch.setattr(run_module, "run_eval", fake_run_eval)
    out = tmp_path / "report.json"
    assert main(["eval", "support", "orders", "--model", "gemini-x", "--json", str(out), "--quiet"]) == 1
    report = json.loads(out.read_text("utf-8"))
    assert [s["eval_set"] for s in report["sets"]] == ["support"]
    assert "orders" in report["crashed_sets"][0] and "did not start" in report["crashed_sets"][0]
    assert "set orders" in capsys.readouterr().err
