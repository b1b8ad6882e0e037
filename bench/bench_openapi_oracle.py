"""The OpenAPI oracle over every operation of every shared spec (and the synthetic ones).

For each operation: scopegate translates it, arguments are generated from the
declaration the model sees (deterministic seeds), the real OperationTool builds
and sends the request to a loopback catch-all, and the request that arrived is
validated against the *original* spec by openapi-core 0.23.1 and by an
independent second implementation (scopegate_lab.openapi_oracle). Per
spec: operations, operations validated, requests validated (by openapi-core /
by the independent oracle alone where openapi-core cannot judge, with why),
mismatches (target 0), operations the runtime refused every try (arguments
valid for the declaration but not for the spec: the runtime said why), and
operations skipped with the reason (multipart/binary bodies).

    .venv/bin/python bench/bench_openapi_oracle.py [--per-spec N] [--seed 0] [--specs NAME,...]

Writes bench/results/openapi_oracle.json and .md. The full run takes about
15-25 minutes on 2 cores (Cloudflare's 1,449 operations are a third of it);
tests/integration/openapi_runtime/test_oracle_shared.py runs a fixed subset in CI.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO / "bench"))

DATA = REPO.parent / "shared" / "data" / "openapi"
COLUMNS = (
    ("operations", "operations"),
    ("checked", "checked"),
    ("operations_validated", "validated ops"),
    ("requests_validated", "requests validated"),
    ("validated_by_openapi_core", "by openapi-core"),
    ("openapi_core_not_applicable", "independent only"),
    ("mismatches", "mismatches"),
    ("refused_by_runtime", "refused by runtime"),
    ("skipped", "skipped"),
    ("errors", "errors"),
    ("seconds", "s"),
)


def _sampled(report: dict[str, Any]) -> str:
    return f", {report['per_spec']} operations per spec" if report["per_spec"] else ""


def render(report: dict[str, Any]) -> str:
    m = report["machine"]
    lines = [
        "# OpenAPI oracle: every built request validated against the original spec",
        "",
        f"{m['when']}, {m['cpus']} cores, Python {m['python']}, load average {report['loadavg']}; "
        f"seed {report['seed']}, {report['attempts']} tries and up to {report['requests_per_operation']} "
        f"validated requests per operation{_sampled(report)}.",
        "Arguments come from the declaration the model sees; the runtime builds and sends the request to a loopback "
        "catch-all; openapi-core 0.23.1 and an independent decoder/validator check what arrived against the "
        "original spec. *Independent only*: requests openapi-core cannot judge (Swagger 2.0, nested deepObject, "
        "wildcard media types, object form fields without an encoding...; the reasons are below). *Refused by "
        "runtime*: every try had arguments that fit the declaration but not the spec, and the runtime refused to "
        "send them (BAD_ARGUMENTS naming the fields). *Skipped*: not translated (multipart or binary bodies).",
        "",
        "| spec | " + " | ".join(title for _, title in COLUMNS) + " |",
        "|---|" + "---|" * len(COLUMNS),
    ]
    totals: dict[str, float] = {}
    for row in report["specs"]:
        cells = []
        for key, _ in COLUMNS:
            cells.append(str(row.get(key, "")))
            if isinstance(row.get(key), int | float):
                totals[key] = totals.get(key, 0) + row[key]
        lines.append(f"| {row['spec']} | " + " | ".join(cells) + " |")
    lines.append(
        "| **total** | "
        + " | ".join(
            f"**{round(totals.get(k, 0), 1) if k == 'seconds' else int(totals.get(k, 0))}**" for k, _ in COLUMNS
        )
        + " |"
    )
    lines += ["", "## Why openapi-core could not judge (requests)", ""]
    limits: dict[str, int] = {}
    skips: dict[str, int] = {}
    for row in report["specs"]:
        for k, v in row.get("openapi_core_limits", {}).items():
            limits[k] = limits.get(k, 0) + v
        for k, v in row.get("skip_reasons", {}).items():
            skips[k] = skips.get(k, 0) + v
    lines += [f"- {k}: {v}" for k, v in sorted(limits.items())] or ["- none"]
    lines += ["", "## Skipped operations by reason", ""]
    lines += [f"- {k}: {v}" for k, v in sorted(skips.items())] or ["- none"]
    if report.get("findings"):
        lines += ["", "## Mismatches, refusals and errors (first per spec)", ""]
        lines += [f"- {f}" for f in report["findings"]]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--per-spec", type=int, default=None, help="operations per spec (default: all)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--attempts", type=int, default=4)
    parser.add_argument("--requests-per-operation", type=int, default=2)
    parser.add_argument("--specs", default="", help="comma-separated spec names (default: all, + synthetic)")
    parser.add_argument(
        "--merge", action="store_true", help="replace only these specs' rows in the existing results (same settings)"
    )
    args = parser.parse_args(argv)
    if not DATA.is_dir():
        print(f"skipped: shared data not found at {DATA}", file=sys.stderr)
        return 0
    from _common import machine, write_results

    from scopegate.openapi.discover import find_documents
    from scopegate_lab.openapi_oracle import check_spec
    from scopegate_lab.openapi_synth import expandable_web

    sources: dict[str, Path | dict[str, Any]] = {p.relative_to(DATA).as_posix(): p for p in find_documents(DATA)}
    sources["synthetic-web-10"] = expandable_web(10, 60)
    sources["synthetic-web-200"] = expandable_web(200, 500)
    if args.specs:
        sources = {k: v for k, v in sources.items() if k in args.specs.split(",")}
    report: dict[str, Any] = {
        "machine": machine(),
        "loadavg": [round(x, 2) for x in os.getloadavg()],
        "seed": args.seed,
        "attempts": args.attempts,
        "requests_per_operation": args.requests_per_operation,
        "per_spec": args.per_spec,
        "specs": [],
        "findings": [],
    }
    started = time.monotonic()
    for name, source in sources.items():
        rep = check_spec(
            source,
            name,
            per_spec=args.per_spec,
            seed=args.seed,
            attempts=args.attempts,
            requests_per_operation=args.requests_per_operation,
        )
        summary = rep.summary()
        report["specs"].append(summary)
        for r in rep.results:
            if r.status in ("mismatch", "error", "refused"):
                report["findings"].append(f"{name} {r.label}: {r.status}: {r.reason} {'; '.join(r.problems[:2])}"[:600])
        print(json.dumps(summary), flush=True)
    report["seconds"] = round(time.monotonic() - started, 1)
    report["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
    previous = REPO / "bench" / "results" / "openapi_oracle.json"
    if args.merge and previous.is_file():
        old = json.loads(previous.read_text("utf-8"))
        fresh = {row["spec"]: row for row in report["specs"]}
        report["specs"] = [fresh.pop(row["spec"], row) for row in old["specs"]] + list(fresh.values())
        rerun = tuple(f"{name} " for name in sources)
        report["findings"] = [f for f in old.get("findings", []) if not f.startswith(rerun)] + report["findings"]
        report["merged"] = sorted(sources)
    write_results("openapi_oracle", report, render(report))
    print(render(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
