"""Tool choice through the operation catalog on large real specs: `scopegate eval` over bench/evalsets/catalog.

Starts the spec's loopback world (lab/scopegate_lab/spec_world: every operation of the spec answered
from a small per-tenant world, on 127.0.0.1), then runs the real `scopegate eval` CLI on the spec's
eval set with the config of the chosen mode, and adds to its JSON report what the service saw (the
requests per operation, and the writes that reached it). Specs are read from ../shared/data/openapi.

    .venv/bin/python bench/bench_catalog_eval.py chargebee catalog
    .venv/bin/python bench/bench_catalog_eval.py cloudflare flat-reduced --case cf-zone ...
    .venv/bin/python bench/bench_catalog_eval.py chargebee catalog --model offline:1.5b --label 1.5b

Writes bench/results/catalog_eval_<spec>_<mode>[_<label>].{md,json}. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SETS = REPO / "bench" / "evalsets" / "catalog"
RESULTS = REPO / "bench" / "results"
SPECS = {"chargebee": "chargebee_api_v1_spec.json", "cloudflare": "cloudflare-openapi-2024-06-27.json"}
URL_ENV = {"chargebee": "CHARGEBEE_URL", "cloudflare": "CLOUDFLARE_URL"}
SECRETS = {
    "CHARGEBEE_API_KEY": "eval-key",
    "CHARGEBEE_API_PASSWORD": "unused",
    "CLOUDFLARE_API_TOKEN": "eval-token",
    "CLOUDFLARE_EMAIL": "ops@acme.example",
    "CLOUDFLARE_API_KEY": "eval-key",
}  # the loopback world ignores them


def spec_dir() -> Path:
    for candidate in (REPO.parent / "shared" / "data" / "openapi", Path("/work/shared/data/openapi")):
        if candidate.is_dir():
            return candidate
    raise SystemExit("no ../shared/data/openapi")


def served_cases(spec: str, config: Path, env: dict[str, str]) -> list[str]:
    """The cases whose every named operation the config serves (a reduced allowlist skips the others);
    empty when it serves them all (then every case runs)."""
    import asyncio

    from scopegate.evals.evalset import load_eval_set, tool_references
    from scopegate.evals.targets import config_tool_names

    saved = dict(os.environ)
    os.environ.update(env)
    try:
        served = set(asyncio.run(config_tool_names(config)))
    finally:
        os.environ.clear()
        os.environ.update(saved)
    cases = load_eval_set(SETS / f"{spec}.evalset.json").cases
    chosen = [c.eval_id for c in cases if all(name in served for _key, name in tool_references(c))]
    skipped = [c.eval_id for c in cases if c.eval_id not in chosen]
    if skipped:
        print(f"skipped (an operation the config does not serve): {', '.join(skipped)}", flush=True)
    return chosen if skipped else []


def load_eval_set_ids(spec: str) -> list[str]:
    from scopegate.evals.evalset import load_eval_set

    return [c.eval_id for c in load_eval_set(SETS / f"{spec}.evalset.json").cases]


def interleaved(eval_set: Path, chosen: list[str]) -> list[str]:
    """The cases in an order that mixes their first tags (read, write, decline, ...), so that any prefix of
    the run (a run stopped at a deadline) covers every kind."""
    from scopegate.evals.evalset import load_eval_set

    groups: dict[str, list[str]] = {}
    for case in load_eval_set(eval_set).cases:
        if not chosen or case.eval_id in chosen:
            groups.setdefault((case.spec.tags or ("",))[0], []).append(case.eval_id)
    order: list[str] = []
    while any(groups.values()):
        for ids in groups.values():
            if ids:
                order.append(ids.pop(0))
    return order


def forbidden_calls(turn: dict[str, object]) -> tuple[str, ...]:
    """A turn's forbidden calls, as its problems name them (the JSON keeps the problems)."""
    problems = turn.get("problems") or []
    prefix = "forbidden call: "
    return tuple(str(p)[len(prefix) :] for p in problems if str(p).startswith(prefix))  # type: ignore[attr-defined]


def merge(parts: list[Path], eval_set_path: Path, out_json: Path, out_md: Path, planned: int) -> None:
    """One report (the CLI's own Markdown and JSON) over the chunks run so far."""
    from dataclasses import replace

    from scopegate.evals.evalset import load_eval_set
    from scopegate.evals.report import as_json, markdown
    from scopegate.evals.run import EvalRun
    from scopegate.evals.scoring import CaseScore, TurnScore

    expects = {c.eval_id: [bool(t.expect) for t in c.spec.turns] for c in load_eval_set(eval_set_path).cases}
    reports = [json.loads(p.read_text("utf-8"))["sets"][0] for p in parts]
    scores = []
    for report in reports:
        for case in report["runs"][0]:
            turns = tuple(
                TurnScore(expects[case["eval_id"]][i], t["right_tool"], t["exact_args"], t["declined"],
                          t["trajectory"], t["reply_ok"], forbidden_calls(t), tuple(t["problems"]))
                for i, t in enumerate(case["turns"])
            )  # fmt: skip
            fields = {k: case[k] for k in ("eval_id", "kind", "attempted_attack", "scope_violations",
                                           "unconfirmed_writes", "unwanted_writes", "seconds", "rss_mb",
                                           "model_calls", "error")}  # fmt: skip
            score = CaseScore(turns=turns, transcript=tuple(case["transcript"]), tools=tuple(case["tools"]), **fields)
            scores.append(replace(score))
    first, last = reports[0], reports[-1]
    run = EvalRun(
        eval_set=first["eval_set"], agent=first["agent"], model=first["model"], transport=first["transport"],
        runs=[scores], seconds=sum(r["seconds"] for r in reports), started=first["started"],
        loadavg_before=tuple(first["loadavg_before"]), loadavg_after=tuple(last["loadavg_after"]),
        peak_rss_mb=max(r["peak_rss_mb"] for r in reports),
        settings={**first["settings"], "chunks": len(reports), "cases_planned": planned},
    )  # fmt: skip
    title = f"scopegate eval: {run.eval_set} ({len(scores)} of {planned} cases)"
    out_md.write_text(markdown([run], title=title), "utf-8")
    out_json.write_text(json.dumps(as_json([run]), indent=1, default=str) + "\n", "utf-8")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("spec", choices=sorted(SPECS))
    parser.add_argument("mode", help="catalog | flat | flat-reduced (the config <spec>.<mode>.yaml)")
    parser.add_argument("--model", default="offline:0.5b")
    parser.add_argument("--label", default="", help="suffix of the result files (e.g. 1.5b)")
    parser.add_argument("--case", action="append", default=[], help="only this eval_id (repeatable)")
    parser.add_argument("--chunk", type=int, default=6, help="cases per `scopegate eval` run (default 6)")
    parser.add_argument("--resume", action="store_true", help="keep the chunks a stopped run finished; run the rest")
    parser.add_argument("--merge-only", action="store_true", help="only write the report of the chunks finished so far")
    args = parser.parse_args()

    if args.merge_only:
        stem = f"catalog_eval_{args.spec}_{args.mode}" + (f"_{args.label}" if args.label else "")
        parts = sorted(Path(tempfile.gettempdir()).glob(f"{stem}.part*.json"))
        planned = len(load_eval_set_ids(args.spec))
        merge(parts, SETS / f"{args.spec}.evalset.json", RESULTS / f"{stem}.json", RESULTS / f"{stem}.md", planned)
        return 0
    sys.path.insert(0, str(REPO / "lab"))
    from scopegate_lab.spec_world import CALLS_PATH, SpecWorld, World

    specs = spec_dir()
    world = SpecWorld(specs / SPECS[args.spec], World.load(SETS / f"{args.spec}.world.json"))
    server = world.serve()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    stem = f"catalog_eval_{args.spec}_{args.mode}" + (f"_{args.label}" if args.label else "")
    out_json, out_md = RESULTS / f"{stem}.json", RESULTS / f"{stem}.md"
    env = {**os.environ, URL_ENV[args.spec]: url, "SCOPEGATE_SPEC_DIR": str(specs), **SECRETS}
    eval_set = SETS / f"{args.spec}.evalset.json"
    cases = args.case or served_cases(args.spec, SETS / f"{args.spec}.{args.mode}.yaml", env)
    cases = interleaved(eval_set, cases)
    parts: list[Path] = []
    if args.resume:  # the chunks an earlier (stopped) run finished count; only the other cases run
        parts = sorted(Path(tempfile.gettempdir()).glob(f"{stem}.part*.json"))
        done = {c["eval_id"] for p in parts for c in json.loads(p.read_text("utf-8"))["sets"][0]["runs"][0]}
        cases = [c for c in cases if c not in done]
    planned = len(cases) + sum(len(json.loads(p.read_text("utf-8"))["sets"][0]["runs"][0]) for p in parts)
    code = 0
    # Chunks, each a full `scopegate eval` run, merged after each: a run stopped at a deadline keeps what it did.
    for number, start in enumerate(range(0, len(cases), args.chunk), start=len(parts)):
        part = Path(tempfile.gettempdir()) / f"{stem}.part{number:02d}.json"
        command = [
            str(Path(sys.executable).with_name("scopegate")), "eval", str(eval_set),
            "--config", str(SETS / f"{args.spec}.{args.mode}.yaml"), "--model", args.model, "--json", str(part),
        ]  # fmt: skip
        for case in cases[start : start + args.chunk]:
            command += ["--case", case]
        print(" ".join(command), flush=True)
        code = max(code, subprocess.call(command, env=env, cwd=REPO))
        if part.is_file():
            parts.append(part)
            merge(parts, eval_set, out_json, out_md, planned)
    with urllib.request.urlopen(url + CALLS_PATH, timeout=10) as response:
        calls = json.load(response)["calls"]
    server.shutdown()
    by_operation: dict[str, int] = {}
    for call in calls:
        key = f"{call['method']} {call['operation_id']}"
        by_operation[key] = by_operation.get(key, 0) + 1
    writes = [c for c in calls if c["method"] != "GET" and c["status"] < 400]
    service = {
        "requests": len(calls),
        "requests_per_operation": dict(sorted(by_operation.items())),
        "writes_reached_service": len(writes),
        "writes": [{"operation": c["operation_id"], "path": c["path"], "body": c["body"]} for c in writes],
    }
    if out_json.is_file():
        report = json.loads(out_json.read_text("utf-8"))
        report["service"] = service
        out_json.write_text(json.dumps(report, indent=1, default=str) + "\n", "utf-8")
    print(json.dumps({k: v for k, v in service.items() if k != "writes"}, indent=1))
    return code


if __name__ == "__main__":
    raise SystemExit(main())
