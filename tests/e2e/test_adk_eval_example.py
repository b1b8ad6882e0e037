"""``adk eval`` on a scopegate agent: two cases on one scripted model pass 2/2 (before: 0/2).

Needs ADK's eval extra (``pip install "google-adk[eval]==2.13.0"``, ~600-760 MB),
which the dev environment does not carry: ``scripts/adk-eval-venv.sh`` (run by
``make test``) layers it on .venv and the test runs the ``adk`` named by
``$SCOPEGATE_ADK_EVAL``, else this environment's when it has the extra; it skips
otherwise, and fails instead under CI (``CI=true``). The same
session-safety is checked without the extra by
``test_adk_tooling_fit.py::test_one_scripted_model_plays_the_whole_script_in_every_session``.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "adk_eval" / "support_agent"


def _adk_with_eval() -> str:
    named = os.environ.get("SCOPEGATE_ADK_EVAL")
    if named:
        return named
    if importlib.util.find_spec("pandas") is None or importlib.util.find_spec("rouge_score") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("CI must run adk eval: scripts/adk-eval-venv.sh sets SCOPEGATE_ADK_EVAL")
        pytest.skip("ADK's eval extra is missing: pip install 'google-adk[eval]==2.13.0' or set SCOPEGATE_ADK_EVAL")
    return str(Path(sys.executable).with_name("adk"))


def test_adk_eval_two_cases_pass(tmp_path: Path) -> None:
    adk = _adk_with_eval()
    agent = tmp_path / "support_agent"
    shutil.copytree(EXAMPLE, agent)
    env = {**os.environ, "SCOPEGATE_EVAL_INDEX": str(tmp_path / "index")}
    command = [adk, "eval", str(agent), str(agent / "support.evalset.json"),
               "--config_file_path", str(agent / "test_config.json")]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300, check=False)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-3000:]
    assert "Tests passed: 2" in output and "Tests failed: 0" in output, output[-3000:]
