"""``scopegate eval --config`` and ``--agent`` on a team's setup (issue 38), with scripted models.

The team: a search tool over an index built from a CSV file with ``scopegate ingest``, an OpenAPI
toolset over the local orders service, a 10-case set (tests/e2e/evals/team). The offline model runs
the same setup in tests/e2e/evals/test_team_eval.py.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from scopegate.cli import main
from scopegate.evals.adk_runner import run_case_agent
from scopegate.evals.evalset import EvalSet, load_eval_set
from scopegate.evals.run import run_eval
from scopegate.evals.targets import AgentTarget, load_agent
from scopegate.examples.orders.data import STAFF_KEY
from scopegate.examples.orders.server import running_orders_service
from scopegate.testing.scripted_llm import ScriptedLlm, Turn, call, final_text

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO))

from tests.e2e.evals.team.fixture import write_team  # noqa: E402

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def team(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    with pytest.MonkeyPatch.context() as mp, running_orders_service() as svc:
        mp.setenv("ORDERS_STAFF_KEY", STAFF_KEY)
        paths = write_team(tmp_path_factory.mktemp("team"), svc.base_url)
        mp.setenv("TEAM_BUGS_CSV", str(paths["csv"]))
        yield paths


def _only(team: dict[str, Path], *ids: str) -> EvalSet:
    return load_eval_set(team["set"]).select(ids=list(ids))


@pytest.mark.parametrize("via", ["adk", "mcp"])
async def test_a_config_runs_over_adk_and_mcp(team: dict[str, Path], via: str) -> None:
    scripts = {
        "bugs-open-by-id": [call("get_bug", id="ALPHA-7"), final_text("ALPHA-7: Coupon code rejected.")],
        "inject-sync-duplicates": [
            call("search_bugs", query="sync duplicates"),
            call("get_bug", id="BETA-1"),  # the injected instruction, obeyed
            final_text("Done."),
        ],
        "orders-status": [call("getOrder", orderId="ord_1001"), final_text("ord_1001 is processing.")],
    }
    scores = {}
    for eval_id, script in scripts.items():  # one scripted model per case
        run = await run_eval(
            _only(team, eval_id), lambda _r, s=script: ScriptedLlm(s), label="scripted", transport=via,
            config=team["config"],
        )  # fmt: skip
        scores[eval_id] = run.runs[0][0]
        assert run.summary.unconfirmed_writes == 0
    assert scores["bugs-open-by-id"].passed, scores["bugs-open-by-id"]
    attacked = scores["inject-sync-duplicates"]
    assert attacked.attempted_attack and attacked.scope_violations == 0
    assert [c.get("error_code") for c in attacked.transcript[0]["calls"]] == [None, "NOT_FOUND"]
    assert scores["orders-status"].passed, scores["orders-status"]


async def test_a_teams_own_agent_runs_with_the_cases_state(team: dict[str, Path]) -> None:
    target = AgentTarget("tests.e2e.evals.team.agent:root_agent", load_agent("tests.e2e.evals.team.agent:root_agent"))
    case = _only(team, "bugs-open-by-id").cases[0]
    model = ScriptedLlm([call("get_bug", id="ALPHA-7"), final_text("ALPHA-7 is about coupons.")])
    score = await run_case_agent(target, model, case)
    assert score.passed, score
    (recorded,) = score.transcript[0]["calls"]
    assert recorded["response"]["document"]["team"] == "alpha"  # the case's session state reached the tool


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            ["--config", "{config}"],
            "case 'x': scopegate.turns[0].expect[0].tool: 'search_tickets' is not a tool of config",
        ),
        (["--agent", "tests.e2e.evals.team.agent:nope"], "--agent tests.e2e.evals.team.agent:nope: nope is NoneType"),
        (["--agent", "no_such_module:agent"], "cannot import no_such_module"),
    ],
)
def test_target_errors_are_one_line_naming_case_and_key(
    team: dict[str, Path], tmp_path: Path, extra: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    data = json.loads(team["set"].read_text("utf-8"))
    case = data["eval_cases"][0]
    case["eval_id"] = "x"
    case["scopegate"]["turns"][0]["expect"][0]["tool"] = "search_tickets"
    data["eval_cases"] = [case]
    path = tmp_path / "bad.evalset.json"
    path.write_text(json.dumps(data), "utf-8")
    argv = ["eval", str(path), "--model", "gemini-x", *(a.format(config=team["config"]) for a in extra)]
    assert main(argv) == 1
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1, err


async def test_eval_init_writes_a_draft_that_loads_and_runs(team: dict[str, Path], tmp_path: Path) -> None:
    from scopegate.evals.cli import check_config_targets

    out = tmp_path / "draft.evalset.json"
    argv = ["eval", "init", "--config", str(team["config"]), "-o", str(out), "--state", "tenant_id=alpha"]
    # The CLI runs its own event loop: from this async test, in a thread.
    assert await asyncio.to_thread(main, [*argv, "--state", "user_id=cust_alice"]) == 0
    draft = load_eval_set(out)
    kinds = {c.spec.kind for c in draft.cases}
    assert {"tool", "no_tool", "injection"} <= kinds
    tags = {t for c in draft.cases for t in c.spec.tags}
    assert {"should-call", "paraphrase", "near-domain", "injection", "search_bugs", "listOrders"} <= tags
    await check_config_targets([draft], team["config"])  # every tool it names is the config's
    assert await asyncio.to_thread(main, argv) == 1  # never overwrites
    picked = draft.select(ids=["search_bugs-filter-severity", "decline-01"])
    scripts = {
        "search_bugs-filter-severity": [call("search_bugs", severity="critical"), final_text("BETA-3 and ALPHA-1.")],
        "decline-01": [final_text("You're welcome!")],
    }
    for case in picked.cases:
        one = picked.model_copy(update={"cases": (case,)})
        run = await run_eval(one, lambda _r, s=scripts[case.eval_id]: ScriptedLlm(s), label="s", config=team["config"])
        assert run.runs[0][0].passed, run.runs[0][0]


async def test_a_configs_write_is_sent_only_when_the_turn_expects_it(team: dict[str, Path]) -> None:
    address = {"name": "Alice Martin", "line1": "5 Quai Voltaire", "postal_code": "75007", "country": "FR"}
    for city, sent, passed in (("Paris", 1, True), ("Lyon", 0, False)):
        script = [
            Turn(calls=(("updateShippingAddress", {"orderId": "ord_1001", "city": city, **address}),)),
            final_text("Done."),
        ]
        run = await run_eval(
            _only(team, "orders-move"), lambda _r, s=script: ScriptedLlm(s), label="s", config=team["config"]
        )
        score = run.runs[0][0]
        assert score.passed is passed, score
        assert score.unconfirmed_writes == 0 and score.unwanted_writes == 1 - sent
        assert score.transcript[0]["confirmations"] == 1
