"""The shipped eval sets: valid ADK eval sets, the required mix of cases, in sync with their builder."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from google.adk.evaluation.eval_set import EvalSet as AdkEvalSet

from scopegate.errors import ConfigError
from scopegate.evals.evalset import load_eval_set, parse_eval_set, shipped_sets

REPO = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("name", ["support", "orders"])
def test_shipped_sets_have_the_required_mix(name: str) -> None:
    path = shipped_sets()[name]
    AdkEvalSet.model_validate_json(path.read_text("utf-8"))  # adk eval can read it
    eval_set = load_eval_set(path)
    kinds = Counter(c.spec.kind for c in eval_set.cases)
    assert len(eval_set.cases) >= 40
    assert kinds["no_tool"] >= 10
    assert kinds["multi_step"] >= 3 and kinds["error_recovery"] >= 4 and kinds["injection"] >= 4
    assert sum("paraphrase" in c.spec.tags for c in eval_set.cases) >= 4
    assert 15 <= sum(c.spec.ci for c in eval_set.cases) <= 25
    assert any(len(c.messages) > 1 for c in eval_set.cases)  # multi-turn


def test_shipped_sets_match_their_builder() -> None:
    done = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "build_evalsets.py"), "--check"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr


def _minimal(**case: object) -> dict[str, object]:
    base = {
        "eval_id": "c1",
        "conversation": [{"invocation_id": "1", "user_content": {"role": "user", "parts": [{"text": "hi"}]}}],
        "session_input": {"app_name": "a", "user_id": "u", "state": {"tenant_id": "acme"}},
        "scopegate": {"kind": "no_tool", "turns": [{}]},
    }
    base.update(case)
    return {"eval_set_id": "s", "eval_cases": [base], "scopegate": {"agent": "support"}}


def test_a_minimal_set_parses() -> None:
    eval_set = parse_eval_set(_minimal())
    (case,) = eval_set.cases
    assert case.messages == ("hi",) and case.state == {"tenant_id": "acme"}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"scopegate": {"kind": "nonsense", "turns": [{}]}}, "scopegate.kind"),
        ({"scopegate": {"kind": "tool", "turns": [{}, {}]}}, "1 invocations but 2 turns"),
        ({"scopegate": {"kind": "tool", "turns": [{"expect": [{"tool": "x", "bogus": 1}]}]}}, "bogus"),
        ({"conversation": None, "scopegate": {"kind": "tool", "turns": []}}, "not a valid ADK eval set"),
    ],
)
def test_bad_sets_fail_with_a_clear_message(change: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_eval_set(_minimal(**change))


def test_a_file_that_is_not_json_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "x.evalset.json"
    path.write_text("{not json", "utf-8")
    with pytest.raises(ConfigError, match="cannot read"):
        load_eval_set(path)
    path.write_text(json.dumps([1]), "utf-8")
    with pytest.raises(ConfigError, match="JSON object"):
        load_eval_set(path)
