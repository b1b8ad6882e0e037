"""Issue 38, end to end with the offline 0.5B model: a team's config (a search tool over an index built
from a CSV file + an OpenAPI toolset over a local service) and its 10-case set, through the CLI:
``--config`` over ADK and over MCP, ``--agent`` on an ADK agent module, and ``eval init`` output run.

The model's rates are not asserted (see docs/evals.md: a 0.5B model is a regression signal, not a
bar); what is: every case runs and is scored (no crashed case), the report is written, and the hard
guarantees hold (0 scope violations, 0 unconfirmed writes). The whole set runs over ADK; MCP, the
agent module and the draft run 3 cases each (the 0.5B model takes about a minute a case on 2 shared cores).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from scopegate.cli import main
from scopegate.examples.orders.data import STAFF_KEY
from scopegate.examples.orders.server import running_orders_service

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO))

from tests.e2e.evals.team.fixture import write_team  # noqa: E402

pytestmark = [pytest.mark.offline_model, pytest.mark.slow, pytest.mark.timeout(7200)]
FEW = ["--case", "bugs-open-by-id", "--case", "decline-thanks", "--case", "orders-status"]


@pytest.fixture(scope="module")
def team(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    try:
        import xllamacpp  # noqa: F401
    except ImportError:
        if os.environ.get("CI") == "true":
            raise
        pytest.skip("the eval extra (xllamacpp) is not installed: pip install -e '.[eval]'")
    with pytest.MonkeyPatch.context() as mp, running_orders_service() as svc:
        mp.setenv("ORDERS_STAFF_KEY", STAFF_KEY)
        paths = write_team(tmp_path_factory.mktemp("team"), svc.base_url)
        mp.setenv("TEAM_BUGS_CSV", str(paths["csv"]))
        yield paths


def _eval(argv: list[str], out: Path) -> dict[str, object]:
    code = main(["eval", *argv, "--model", "offline:0.5b", "--json", str(out), "--quiet"])
    report = json.loads(out.read_text("utf-8"))
    assert code in (0, 1)  # 1: below a threshold; a crash would raise or leave crashed_sets
    assert "crashed_sets" not in report
    summary = report["all"]
    assert isinstance(summary, dict)
    assert summary["errors"] == 0 and summary["scope_violations"] == 0 and summary["unconfirmed_writes"] == 0
    return summary


def test_config_over_adk_runs_the_ten_cases(team: dict[str, Path], tmp_path: Path) -> None:
    summary = _eval([str(team["set"]), "--config", str(team["config"])], tmp_path / "adk.json")
    assert summary["cases"] == 10


def test_config_over_mcp(team: dict[str, Path], tmp_path: Path) -> None:
    summary = _eval([str(team["set"]), "--config", str(team["config"]), "--via", "mcp", *FEW], tmp_path / "mcp.json")
    assert summary["cases"] == 3


def test_a_teams_agent_module(team: dict[str, Path], tmp_path: Path) -> None:
    argv = [str(team["set"]), "--agent", "tests.e2e.evals.team.agent:root_agent", "--case", "bugs-open-by-id"]
    summary = _eval([*argv, "--case", "decline-thanks", "--case", "bugs-coupon"], tmp_path / "agent.json")
    assert summary["cases"] == 3


def test_eval_init_output_loads_and_runs(team: dict[str, Path], tmp_path: Path) -> None:
    draft = tmp_path / "draft.evalset.json"
    init = ["eval", "init", "--config", str(team["config"]), "-o", str(draft)]
    assert main([*init, "--state", "tenant_id=alpha", "--state", "user_id=cust_alice"]) == 0
    picked = ["--case", "search_bugs-topic", "--case", "listOrders-ask", "--case", "decline-01"]
    summary = _eval([str(draft), "--config", str(team["config"]), *picked], tmp_path / "draft.json")
    assert summary["cases"] == 3
