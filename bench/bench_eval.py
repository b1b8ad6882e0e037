"""Full offline evals: every shipped set, the 0.5B and 1.5B models, k runs each (``make eval``).

    .venv/bin/python bench/bench_eval.py                       # both models, k=3, all cases
    .venv/bin/python bench/bench_eval.py --models 0.5b --k 1 --ci

Writes bench/results/eval_<model>[_ci].md and .json (summary, per-case time, RSS and transcripts,
load average and date). Runtime on 2 idle cores, 2 threads: roughly 4-8 s per case for the 0.5B
and 8-15 s for the 1.5B, so ~95 cases x 3 runs is ~20-40 min per model; on a busy shared machine
it is several times longer (the per-case time and the load average are in the report).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from scopegate.cli import main as scopegate_main

RESULTS = Path(__file__).resolve().parent / "results"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["0.5b", "1.5b"], help="offline models (default both)")
    parser.add_argument("--k", type=int, default=3, help="runs per case for pass^k (default 3)")
    parser.add_argument("--ci", action="store_true", help="only the CI subset")
    parser.add_argument("--variant", default="baseline", help="declaration variant (see scopegate eval --help)")
    parser.add_argument("--sets", nargs="*", default=[], help="shipped set names (default all)")
    args = parser.parse_args()
    RESULTS.mkdir(parents=True, exist_ok=True)
    status = 0
    for model in args.models:
        suffix = ("_ci" if args.ci else "") + ("" if args.variant == "baseline" else f"_{args.variant}")
        stem = RESULTS / f"eval_{model}{suffix}"
        argv = ["eval", *args.sets, "--model", f"offline:{model}", "-k", str(args.k), "--variant", args.variant,
                "--json", f"{stem}.json", "--markdown", f"{stem}.md", "--quiet"]  # fmt: skip
        if args.ci:
            argv.append("--ci")
        status |= scopegate_main(argv)
    return status


if __name__ == "__main__":
    sys.exit(main())
