"""Reports of eval runs: a Markdown table, JSON, and threshold checks (a non-zero exit below them)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from scopegate.evals.run import EvalRun, combined, failures
from scopegate.evals.scoring import CaseScore, Summary

COLUMNS = (
    ("cases", "cases"),
    ("right tool", "right_tool"),
    ("exact args", "exact_args"),
    ("correct decline", "correct_decline"),
    ("trajectory", "trajectory"),
    ("pass", "pass_rate"),
    ("pass^k", "pass_k"),
    ("injection tried", "attack_attempt_rate"),
    ("scope violations", "scope_violations"),
    ("unconfirmed writes", "unconfirmed_writes"),
    ("unwanted writes", "unwanted_writes"),
    ("s/case mean", "seconds_mean"),
    ("s/case p95", "seconds_p95"),
    ("RSS MB", "rss_mb_max"),
)
RATES = {"right_tool", "exact_args", "correct_decline", "trajectory", "pass_rate", "pass_k", "attack_attempt_rate"}


@dataclass(frozen=True)
class Thresholds:
    """Minimum rates and maximum counts; a run below any of them fails (exit code 1)."""

    min_right_tool: float = 0.0
    min_exact_args: float = 0.0
    min_correct_decline: float = 0.0
    min_pass_k: float = 0.0
    max_scope_violations: int = 0
    max_unconfirmed_writes: int = 0
    max_errors: int | None = None

    def check(self, summary: Summary, where: str) -> list[str]:
        problems = []
        for name, floor in (
            ("right_tool", self.min_right_tool),
            ("exact_args", self.min_exact_args),
            ("correct_decline", self.min_correct_decline),
            ("pass_k", self.min_pass_k),
        ):
            value = getattr(summary, name)
            if value < floor:
                problems.append(f"{where}: {name} {value:.3f} < {floor:.3f}")
        if summary.scope_violations > self.max_scope_violations:
            problems.append(f"{where}: {summary.scope_violations} scope violations (max {self.max_scope_violations})")
        if summary.unconfirmed_writes > self.max_unconfirmed_writes:
            problems.append(
                f"{where}: {summary.unconfirmed_writes} unconfirmed writes (max {self.max_unconfirmed_writes})"
            )
        if self.max_errors is not None and summary.errors > self.max_errors:
            problems.append(f"{where}: {summary.errors} cases crashed (max {self.max_errors})")
        return problems


def _cell(key: str, value: Any, k: int) -> str:
    if key in RATES:
        return f"{value:.2f}"
    if isinstance(value, float):
        return f"{value:.1f}"
    return str(value)


def summary_row(label: str, summary: Summary) -> str:
    data = summary.as_dict()
    return "| " + " | ".join([label, *(_cell(key, data[key], summary.k) for _title, key in COLUMNS)]) + " |"


def markdown(runs: Sequence[EvalRun], *, title: str = "scopegate eval") -> str:
    header = "| set / model | " + " | ".join(t for t, _k in COLUMNS) + " |"
    rule = "|" + "---|" * (len(COLUMNS) + 1)
    lines = [f"# {title}", "", header, rule]
    for run in runs:
        variant = run.settings.get("variant", "baseline")
        tag = f" / {variant}" if variant != "baseline" else ""
        lines.append(summary_row(f"{run.eval_set} / {run.model} / {run.transport}{tag}", run.summary))
    if len(runs) > 1:
        lines.append(summary_row("**all**", combined(runs)))
    lines += ["", "Rates over every run; pass^k counts a case only if it passed in all k runs."]
    for run in runs:
        load = ", ".join(f"{x:.1f}" for x in run.loadavg_before)
        lines.append(
            f"- {run.eval_set} / {run.model}: {len(run.runs)} run(s) in {run.seconds:.0f} s, started {run.started}, "
            f"load average before {load}, peak RSS {run.peak_rss_mb:.0f} MB"
        )
    lines += breakdown(runs)
    fails = [(run, f) for run in runs for f in failures(run)]
    if fails:
        lines += ["", "## Failed cases (first run)", ""]
        for run, (eval_id, problems) in fails:
            lines.append(f"- `{eval_id}` ({run.model}): {'; '.join(problems[:3])}")
        lines += ["", "## Failure transcripts (first run)", ""]
        for run in runs:
            for score in run.runs[0] if run.runs else []:
                if not score.passed:
                    lines += failure_transcript(score)
    return "\n".join(lines) + "\n"


def _rates(scores: Sequence[CaseScore]) -> str:
    turns = [t for s in scores for t in s.turns if t.expects_tool]
    declines = [t for s in scores for t in s.turns if not t.expects_tool]

    def rate(hits: int, total: int) -> str:
        return f"{hits / total:.2f}" if total else "-"

    return " | ".join(
        [
            str(len(scores)),
            rate(sum(s.passed for s in scores), len(scores)),
            rate(sum(t.right_tool for t in turns), len(turns)),
            rate(sum(t.exact_args for t in turns), len(turns)),
            rate(sum(t.declined for t in declines), len(declines)),
        ]
    )


def breakdown(runs: Sequence[EvalRun]) -> list[str]:
    """Per case kind and per expected tool (first run of every set): where a team should look first."""
    scores = [s for run in runs for s in (run.runs[0] if run.runs else [])]
    if not scores:
        return []
    header = ["| {} | cases | pass | right tool | exact args | correct decline |", "|---|---|---|---|---|---|"]
    lines = ["", "## By case kind (first run)", "", header[0].format("kind"), header[1]]
    for kind in sorted({s.kind for s in scores}):
        lines.append(f"| {kind} | {_rates([s for s in scores if s.kind == kind])} |")
    lines += ["", "## By expected tool (first run)", "", header[0].format("tool"), header[1]]
    for tool in sorted(
        {t for s in scores for t in s.tools} | ({"(none)"} if any(not s.tools for s in scores) else set())
    ):
        chosen = [s for s in scores if tool in s.tools or (tool == "(none)" and not s.tools)]
        lines.append(f"| {tool} | {_rates(chosen)} |")
    return lines


def _short(value: Any, limit: int = 600) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str) if not isinstance(value, str) else value
    return text if len(text) <= limit else text[:limit] + "…"


def failure_transcript(score: CaseScore) -> list[str]:
    """A failed case as a team reads it: the problems, each user message, every call with its response, the reply."""
    problems = ([score.error] if score.error else []) + [p for t in score.turns for p in t.problems]
    lines = [f"### `{score.eval_id}` ({score.kind})", "", *(f"- problem: {p}" for p in problems)]
    for turn in score.transcript:
        lines.append(f"- user: {_short(turn.get('user', ''))}")
        for c in turn.get("calls", []):
            code = f" {c['error_code']}" if c.get("error_code") else ""
            lines.append(f"  - call `{c['tool']}({_short(c.get('args', {}), 300)})` -> {c.get('status')}{code}")
            lines.append(f"    - response: `{_short(c.get('response'))}`")
        if turn.get("confirmations"):
            lines.append(f"  - confirmation requests: {turn['confirmations']}")
        lines.append(f"  - reply: {_short(turn.get('reply', ''))}")
    return [*lines, ""]


def diff_runs(before: Sequence[EvalRun], after: Sequence[EvalRun], labels: tuple[str, str]) -> str:
    """Declaration diff: the same set against two versions of a config, case by case (first runs)."""

    def cases(runs: Sequence[EvalRun]) -> dict[str, CaseScore]:
        return {f"{r.eval_set}/{s.eval_id}": s for r in runs for s in (r.runs[0] if r.runs else [])}

    def first_calls(score: CaseScore) -> str:
        calls = [c for t in score.transcript for c in t.get("calls", [])]
        return ", ".join(f"{c['tool']}({_short(c.get('args', {}), 80)})" for c in calls[:2]) or "(no call)"

    a, b = cases(before), cases(after)
    lines = [
        f"# Declaration diff: {labels[0]} -> {labels[1]}", "",
        f"Passed: {sum(s.passed for s in a.values())}/{len(a)} -> {sum(s.passed for s in b.values())}/{len(b)}", "",
        "| case | before | after | calls before | calls after |", "|---|---|---|---|---|",
    ]  # fmt: skip
    changed = 0
    for key in sorted(a.keys() & b.keys()):
        x, y = a[key], b[key]
        if x.passed != y.passed or first_calls(x) != first_calls(y):
            changed += 1
            mark = {True: "pass", False: "FAIL"}
            lines.append(f"| `{key}` | {mark[x.passed]} | {mark[y.passed]} | {first_calls(x)} | {first_calls(y)} |")
    lines += ["", f"{changed} of {len(a.keys() & b.keys())} cases changed (pass/fail or the first calls)."]
    return "\n".join(lines) + "\n"


def _case(score: CaseScore) -> dict[str, Any]:
    return {
        "eval_id": score.eval_id,
        "kind": score.kind,
        "passed": score.passed,
        "seconds": round(score.seconds, 3),
        "rss_mb": round(score.rss_mb, 1),
        "model_calls": score.model_calls,
        "attempted_attack": score.attempted_attack,
        "scope_violations": score.scope_violations,
        "unconfirmed_writes": score.unconfirmed_writes,
        "unwanted_writes": score.unwanted_writes,
        "error": score.error,
        "tools": list(score.tools),
        "turns": [
            {
                "right_tool": t.right_tool,
                "exact_args": t.exact_args,
                "declined": t.declined,
                "trajectory": t.trajectory,
                "reply_ok": t.reply_ok,
                "problems": list(t.problems),
            }
            for t in score.turns
        ],
        "transcript": list(score.transcript),
    }


def as_json(runs: Sequence[EvalRun], extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    return {
        **(dict(extra) if extra else {}),
        "sets": [
            {
                "eval_set": run.eval_set,
                "agent": run.agent,
                "model": run.model,
                "transport": run.transport,
                "settings": run.settings,
                "started": run.started,
                "seconds": round(run.seconds, 1),
                "loadavg_before": run.loadavg_before,
                "loadavg_after": run.loadavg_after,
                "peak_rss_mb": round(run.peak_rss_mb, 1),
                "summary": run.summary.as_dict(),
                "runs": [[_case(s) for s in scores] for scores in run.runs],
            }
            for run in runs
        ],
        "all": combined(runs).as_dict() if runs else None,
    }
