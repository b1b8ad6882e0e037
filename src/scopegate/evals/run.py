"""Run an eval set k times against a model, over ADK or MCP, and summarise."""

from __future__ import annotations

import datetime as dt
import os
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from google.adk.models.base_llm import BaseLlm

from scopegate.evals.adk_runner import run_case_adk, run_case_agent
from scopegate.evals.evalset import EvalCase, EvalSet
from scopegate.evals.resources import peak_rss_mb
from scopegate.evals.scoring import CaseScore, Summary, summarise
from scopegate.evals.targets import AgentTarget, config_world
from scopegate.evals.worlds import open_world

Transport = Literal["adk", "mcp"]
Progress = Callable[[int, CaseScore], None]


@dataclass
class EvalRun:
    eval_set: str
    agent: str
    model: str
    transport: Transport
    runs: list[list[CaseScore]]
    seconds: float
    started: str
    loadavg_before: tuple[float, float, float]
    loadavg_after: tuple[float, float, float]
    peak_rss_mb: float
    settings: dict[str, Any] = field(default_factory=dict)

    @property
    def summary(self) -> Summary:
        return summarise(self.runs)


def _reset(model: BaseLlm | str) -> None:
    reset = getattr(model, "reset_stats", None)
    if callable(reset):
        reset()


def _model_calls(model: BaseLlm | str) -> int:
    stats = getattr(model, "stats", None)
    return int(getattr(stats, "calls", 0))


async def run_eval(
    eval_set: EvalSet,
    model_for_run: Callable[[int], BaseLlm | str | None],
    *,
    label: str,
    k: int = 1,
    transport: Transport = "adk",
    progress: Progress | None = None,
    settings: dict[str, Any] | None = None,
    variant: str = "baseline",
    config: Path | None = None,
    agent: AgentTarget | None = None,
) -> EvalRun:
    """Every case of ``eval_set``, ``k`` times (run ``r`` uses ``model_for_run(r)``), against the real world:
    a shipped world (the set's agent), the tools of a scopegate ``config``, or a team's own ``agent``."""
    started_at = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    load_before = os.getloadavg()
    started = time.perf_counter()
    runs: list[list[CaseScore]] = []
    if transport == "mcp":
        from scopegate.evals.mcp_runner import run_cases_mcp

        for r in range(k):
            runs.append(
                await run_cases_mcp(
                    eval_set, model_for_run(r), progress=progress, variant=variant, run=r, config=config
                )
            )
    elif agent is not None:
        for r in range(k):
            model = model_for_run(r)
            runs.append(await _each_case(eval_set, model, r, progress, lambda m, c: run_case_agent(agent, m, c)))
    else:
        world_cm: Any = (
            config_world(config, eval_set.instruction, eval_set)
            if config is not None
            else open_world(eval_set.agent, variant)
        )
        async with world_cm as world:

            def in_world(model: Any, case: EvalCase) -> Awaitable[CaseScore]:
                return run_case_adk(world, model, case)

            for r in range(k):
                runs.append(await _each_case(eval_set, model_for_run(r), r, progress, in_world))
    return EvalRun(
        eval_set=eval_set.eval_set_id,
        agent=str(config) if config is not None else agent.spec if agent is not None else eval_set.agent,
        model=label,
        transport=transport,
        runs=runs,
        seconds=time.perf_counter() - started,
        started=started_at,
        loadavg_before=load_before,
        loadavg_after=os.getloadavg(),
        peak_rss_mb=peak_rss_mb(),
        settings={**(settings or {}), "variant": variant},
    )


async def _each_case(
    eval_set: EvalSet,
    model: Any,
    r: int,
    progress: Progress | None,
    run_case: Callable[[Any, EvalCase], Awaitable[CaseScore]],
) -> list[CaseScore]:
    scores = []
    for case in eval_set.cases:
        if model is not None:
            _reset(model)
        score = await run_case(model, case)
        score = _with_calls(score, _model_calls(model) if model is not None else 0)
        scores.append(score)
        if progress is not None:
            progress(r, score)
    return scores


def _with_calls(score: CaseScore, calls: int) -> CaseScore:
    from dataclasses import replace

    return replace(score, model_calls=calls) if calls else score


def failures(run: EvalRun) -> list[tuple[str, list[str]]]:
    """(eval_id, problems) of every failed case in the first run."""
    out = []
    for score in run.runs[0] if run.runs else []:
        if not score.passed:
            problems = [p for t in score.turns for p in t.problems]
            out.append((score.eval_id, ([score.error] if score.error else []) + problems))
    return out


def combined(runs: Sequence[EvalRun]) -> Summary:
    """One summary over several sets (each run list aligned by repetition)."""
    k = max((len(r.runs) for r in runs), default=0)
    merged: list[list[CaseScore]] = [[] for _ in range(k)]
    for run in runs:
        for i, scores in enumerate(run.runs):
            merged[i].extend(scores)
    return summarise(merged)
