"""``scopegate eval``: run eval sets against a model through the real tools; exit 1 below thresholds."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import click

from scopegate.cli.core import Command
from scopegate.errors import ConfigError


def _err(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


MODEL_HELP = (
    "offline:0.5b | offline:1.5b[:needs_tool_first|:direct] | a Gemini model id (needs GOOGLE_API_KEY) | "
    "litellm:PROVIDER/MODEL (default offline:0.5b)."
)
VARIANT_HELP = (
    "Declaration variant: support: baseline, fetch-by-id, filters-when-asked; "
    "orders: baseline, no-example-ids, confirm-wording, catalog (find/describe/call_operation) (default baseline)."
)


@click.command(
    "eval",
    cls=Command,
    short_help="Run agent eval sets against a model (offline GGUF, Gemini, LiteLLM).",
)
@click.argument("sets", nargs=-1)
@click.option("--model", default=None, help=MODEL_HELP)
@click.option(
    "--transport",
    "--via",
    "transport",
    type=click.Choice(["adk", "mcp"]),
    default="adk",
    help="ADK Runner (default) or MCP (the real `scopegate serve` over stdio and the official client).",
)
@click.option("--config", "config_path", help="Run against the tools of this scopegate config (your backends, APIs).")
@click.option("--agent", "agent_spec", help="Run your own ADK agent or App: package.module:attr (ADK's runner).")
@click.option(
    "--compare-config",
    help="Declaration diff: run the same sets against this second config (e.g. one description changed) and "
    "list the cases whose result or first calls changed.",
)
@click.option("-k", "--repeat", type=click.IntRange(min=1), default=1, help="Runs per case, for pass^k (default 1).")
@click.option("--temperature", type=float, help="Sampling temperature of the offline model (default 0: greedy).")
@click.option("--ci", is_flag=True, help="Only the cases marked for CI.")
@click.option("--variant", default="baseline", help=VARIANT_HELP)
@click.option("--kind", multiple=True, help="Only cases of this kind (repeatable).")
@click.option("--case", "case_ids", multiple=True, help="Only this eval_id (repeatable).")
@click.option("--json", "json_out", help="Write the full report (every case, transcripts) as JSON to this file.")
@click.option("--markdown", help="Write the Markdown table to this file.")
@click.option("--quiet", is_flag=True, help="No per-case progress lines.")
@click.option("--output", "-o", help="eval init: where the draft set goes (default: draft.evalset.json).")
@click.option(
    "--state", "state_pairs", multiple=True, help="eval init: session state of the draft cases, KEY=VALUE (repeatable)."
)
@click.option("--min-right-tool", type=float, help="Minimum right-tool rate.")
@click.option("--min-exact-args", type=float, help="Minimum exact-argument rate.")
@click.option("--min-correct-decline", type=float, help="Minimum correct-decline rate.")
@click.option("--min-pass-k", type=float, help="Minimum pass^k.")
@click.option("--max-scope-violations", type=int, help="Maximum scope violations (default 0).")
@click.option("--max-unconfirmed-writes", type=int, help="Maximum unconfirmed writes (default 0).")
def eval_command(sets: tuple[str, ...], **options: Any) -> int:
    """Run eval sets through the real ADK Runner and tools (or over MCP with a real client).

    SETS are shipped set names (support, orders) or eval-set files (ADK eval-set JSON with scopegate
    expectations); default: every shipped set. `scopegate eval init --config scopegate.yaml` writes a
    draft set from the config's tool declarations instead (edit it, then run it with --config).
    Scores BFCL-style: right tool, exact arguments, correct
    decline, trajectory, pass^k, injection attempts, scope violations and unconfirmed writes. Exits 1
    when a threshold is not met (see docs/evals.md).
    """
    args = argparse.Namespace(sets=list(sets), **options)
    if sets[:1] == ("init",):
        return asyncio.run(_init(args))
    return asyncio.run(_run(args))


async def _init(args: argparse.Namespace) -> int:
    """Write a draft eval set from the declarations of ``--config``'s tools."""
    from scopegate.config import build_app
    from scopegate.evals.draft import draft_set
    from scopegate.evals.targets import load_config_file

    if len(args.sets) > 1 or not args.config_path:
        raise ConfigError("usage: scopegate eval init --config scopegate.yaml [-o draft.evalset.json] [--state K=V]")
    config = load_config_file(args.config_path)
    state: dict[str, Any] = {}
    for pair in args.state_pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ConfigError(f"--state {pair!r}: write KEY=VALUE")
        state[key] = value
    keys = config.scope_keys
    state.setdefault(keys.tenant, "EDIT-ME-tenant")
    if keys.user:
        state.setdefault(keys.user, "EDIT-ME-user")
    app = await build_app(config, offline=True, guard=None)
    try:
        data = draft_set(app.tools, state, str(args.config_path))
    finally:
        await app.aclose()
    out = Path(args.output or "draft.evalset.json")
    if out.exists():
        raise ConfigError(f"{out} exists; give another --output (the draft never overwrites a set)")
    out.write_text(json.dumps(data, indent=1) + "\n", "utf-8")
    _err(f"wrote {len(data['eval_cases'])} draft cases to {out}: edit every EDIT-ME, then run "
         f"scopegate eval {out} --config {args.config_path}")  # fmt: skip
    return 0


COMMANDS = [eval_command]


def _sets(names: list[str]) -> list[Any]:
    from scopegate.evals.evalset import load_eval_set, shipped_sets

    shipped = shipped_sets()
    chosen = names or list(shipped)
    out = []
    for name in chosen:
        path = shipped.get(name) or Path(name)
        if not path.is_file():
            raise ConfigError(f"no eval set {name!r} (shipped: {', '.join(shipped)}; or give a file)")
        out.append(load_eval_set(path))
    return out


def _thresholds(args: argparse.Namespace) -> Any:
    from scopegate.evals.report import Thresholds

    values = {
        key: getattr(args, key)
        for key in ("min_right_tool", "min_exact_args", "min_correct_decline", "min_pass_k",
                    "max_scope_violations", "max_unconfirmed_writes")
        if getattr(args, key) is not None
    }  # fmt: skip
    return Thresholds(**values)


async def _run(args: argparse.Namespace) -> int:
    from scopegate.evals.model_choice import build_model, parse_model
    from scopegate.evals.report import as_json, markdown
    from scopegate.evals.run import EvalRun, run_eval

    if args.config_path and args.agent_spec:
        raise ConfigError("give --config (your tools) or --agent (your agent), not both")
    if args.agent_spec and args.transport == "mcp":
        raise ConfigError("--agent runs your agent with ADK's runner; --via mcp is for --config or the shipped sets")
    own_model = args.agent_spec is not None and args.model is None  # the agent keeps its own model
    choice = parse_model(args.model or "offline:0.5b")
    sets = [s.select(ci_only=args.ci, kinds=args.kind, ids=args.case_ids) for s in _sets(args.sets)]
    sets = [s for s in sets if s.cases]
    if not sets:
        raise ConfigError("no case selected")
    config = Path(args.config_path) if args.config_path else None
    agent = None
    if config is not None:
        await check_config_targets(sets, config)
    elif args.agent_spec:
        agent = await check_agent_targets(sets, args.agent_spec)
    else:
        check_targets(sets, args.variant)  # one-line errors before the model loads
    say = None if args.quiet else _err
    model = None if own_model else build_model(choice, say=_err, temperature=args.temperature)
    label = "agent's own model" if own_model else choice.label

    def model_for_run(r: int) -> Any:
        if model is not None and hasattr(model, "seed") and args.temperature:
            model.seed = 1234 + r  # other seeds for other runs when sampling
        return model

    def progress(r: int, score: Any) -> None:
        if say is not None:
            mark = "ok  " if score.passed else "FAIL"
            problems = "; ".join(p for t in score.turns for p in t.problems)[:200] or (score.error or "")
            say(f"[{r + 1}] {mark} {score.eval_id:<40} {score.seconds:5.1f}s {problems}")

    runs: list[EvalRun] = []
    crashed: list[str] = []
    for eval_set in sets:
        try:
            runs.append(
                await run_eval(
                    eval_set, model_for_run, label=label, k=args.repeat, transport=args.transport,
                    progress=progress, variant=args.variant, config=config, agent=agent,
                    settings={"model": args.model, "temperature": args.temperature or 0.0, "ci": args.ci},
                )
            )  # fmt: skip
        except Exception as exc:  # keep the sets that ran, and say which one did not
            crashed.append(f"{eval_set.eval_set_id}: {type(exc).__name__}: {' '.join(str(exc).split())[:300]}")
            _err(f"set {crashed[-1]}")
    text = markdown(runs)
    if args.compare_config:
        text += "\n" + await _compare(args, sets, runs, model_for_run, label, progress)
    print(text)
    if args.markdown:
        Path(args.markdown).write_text(text, "utf-8")
    if args.json_out:
        report = as_json(runs, {"crashed_sets": crashed} if crashed else None)
        Path(args.json_out).write_text(json.dumps(report, indent=1, default=str) + "\n", "utf-8")
    thresholds = _thresholds(args)
    problems = [p for run in runs for p in thresholds.check(run.summary, f"{run.eval_set}/{run.model}")]
    for problem in problems:
        _err(f"threshold: {problem}")
    return 1 if problems or crashed else 0


async def _compare(args: argparse.Namespace, sets: list[Any], runs: list[Any], model_for_run: Any, label: str,
                   progress: Any) -> str:  # fmt: skip
    """The same sets against ``--compare-config``, and the cases that changed."""
    from scopegate.evals.report import diff_runs
    from scopegate.evals.run import run_eval

    if not args.config_path:
        raise ConfigError("--compare-config compares two configs: give --config too")
    other = Path(args.compare_config)
    await check_config_targets(sets, other)
    compared = [
        await run_eval(eval_set, model_for_run, label=label, k=1, transport=args.transport, progress=progress,
                       config=other)
        for eval_set in sets
    ]  # fmt: skip
    return diff_runs(runs, compared, (str(args.config_path), str(other)))


def check_targets(sets: list[Any], variant: str) -> None:
    """Each set's agent and the variant exist, and every tool a case names is one of the agent's."""
    from scopegate.evals.evalset import check_tools
    from scopegate.evals.worlds import check_world, world_tools

    for eval_set in sets:
        where = str(eval_set.source or eval_set.eval_set_id)
        try:
            check_world(eval_set.agent, variant)
        except ConfigError as exc:
            raise ConfigError(f"{where}: scopegate.agent: {exc}") from None
        check_tools(eval_set, world_tools(eval_set.agent, variant), f"agent {eval_set.agent!r}")


async def check_config_targets(sets: list[Any], config: Path) -> None:
    """Every tool a case names is served by the config, and every case gives the tenant its scope needs."""
    from scopegate.evals.evalset import check_tools
    from scopegate.evals.targets import check_case_states, config_tool_names, load_config_file

    keys = load_config_file(config).scope_keys
    names = await config_tool_names(config)
    for eval_set in sets:
        check_tools(eval_set, names, f"config {config}")
        check_case_states(eval_set.cases, keys, str(eval_set.source or eval_set.eval_set_id))


async def check_agent_targets(sets: list[Any], spec: str) -> Any:
    """The agent imports, and every tool a case names is one of its tools (when its toolsets can list them)."""
    from scopegate.evals.evalset import check_tools
    from scopegate.evals.targets import AgentTarget, load_agent

    target = AgentTarget(spec, load_agent(spec))
    names = await target.tool_names()
    for eval_set in sets:
        where = str(eval_set.source or eval_set.eval_set_id)
        for case in eval_set.cases:
            if case.spec.faults:
                raise ConfigError(
                    f"{where}: case {case.eval_id!r}: scopegate.faults need scopegate's tools, not --agent"
                )
        if names is not None:
            check_tools(eval_set, names, f"agent {spec}")
    return target
