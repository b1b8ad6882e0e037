"""What a dashboard request costs: ``scopegate dashboard`` re-reads the call log on every page load.

Writes a synthetic call log (searches with zero-result and cached calls, fetches, refusals,
answers; 6 tools, 40 tenants, over one day) of each size, then times, over ``--repeat`` runs:

* ``compute``: :func:`scopegate.dashboard.data.dashboard_from_log` (read + parse + every figure);
* ``render``: :func:`scopegate.dashboard.page.render_page` of that dashboard;

and records the page's size. Writes bench/results/dashboard.json and bench/results/dashboard.md with the
load average and the date. The log files go to a temporary folder.

    .venv/bin/python bench/bench_dashboard.py [--sizes 10000,100000] [--repeat 3]   # about 30 s
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import RESULTS

from scopegate.dashboard.data import dashboard_from_log
from scopegate.dashboard.page import render_page

TOOLS = ("search_tickets", "get_ticket", "search_docs", "get_doc", "search_orders", "get_order")
WORDS = ("refund", "failed", "payout", "delayed", "apple", "pay", "E4012", "card", "declined", "helm", "kubernetes")


def write_log(path: Path, n: int, seed: int = 3) -> None:
    rng = random.Random(seed)
    start = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    with path.open("w", encoding="utf-8") as fh:
        for i in range(n):
            ts = (start + dt.timedelta(seconds=86400 * i / n)).isoformat()
            tool = rng.choice(TOOLS)
            inv = f"inv-{i // 4}"
            record: dict[str, Any] = {
                "v": 1, "event": "call", "ts": ts, "invocation_id": inv, "tool": tool, "family": "search",
                "tenant_id": f"t{rng.randrange(40)}", "latency_ms": round(rng.lognormvariate(0.0, 0.8), 3),
                "cache_hit": rng.random() < 0.3, "outcome": "ok", "error_code": None,
            }  # fmt: skip
            if rng.random() < 0.03:
                record.update(outcome="error", error_code=rng.choice(["CALL_LIMIT", "BAD_FILTER", "NOT_FOUND"]))
            elif tool.startswith("search"):
                total = 0 if rng.random() < 0.12 else rng.randrange(1, 500)
                record.update(query=" ".join(rng.sample(WORDS, 2)), page=1, total=total, filters={})
            else:
                record.update(query=f"T-{rng.randrange(10_000)}", total=1)
            fh.write(json.dumps(record) + "\n")
            if i % 4 == 3:
                fh.write(json.dumps({"v": 1, "event": "answer", "ts": ts, "invocation_id": inv}) + "\n")


def measure(sizes: list[int], repeat: int) -> list[dict[str, Any]]:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            path = Path(tmp) / f"calls-{n}.jsonl"
            write_log(path, n)
            compute, render = [], []
            page = ""
            for _ in range(repeat):
                t0 = time.perf_counter()
                board = dashboard_from_log([path])
                t1 = time.perf_counter()
                page = render_page(board)
                t2 = time.perf_counter()
                compute.append((t1 - t0) * 1000)
                render.append((t2 - t1) * 1000)
            rows.append(
                {
                    "records": n,
                    "log_bytes": path.stat().st_size,
                    "compute_ms": {"median": statistics.median(compute), "min": min(compute), "max": max(compute)},
                    "render_ms": {"median": statistics.median(render), "min": min(render), "max": max(render)},
                    "page_bytes": len(page.encode()),
                    "runs": repeat,
                }
            )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,100000", help="Call-log sizes in records, comma-separated.")
    parser.add_argument("--repeat", type=int, default=3, help="Runs per size (default 3).")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s]
    load_before = os.getloadavg()
    rows = measure(sizes, max(1, args.repeat))
    result = {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "loadavg_before": load_before,
        "loadavg_after": os.getloadavg(),
        "rows": rows,
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "dashboard.json").write_text(json.dumps(result, indent=2) + "\n", "utf-8")
    lines = [
        "# Dashboard: cost of one page load (bench/bench_dashboard.py)",
        "",
        f"{result['date']}, Python {result['python']}, {result['cpus']} CPUs, load average "
        f"{load_before[0]:.1f} before / {result['loadavg_after'][0]:.1f} after. Median (min–max) of "
        f"{args.repeat} runs; provisional when the machine is shared.",
        "",
        "| records | log MB | read + compute ms | render ms | page KB |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        c, p = r["compute_ms"], r["render_ms"]
        lines.append(
            f"| {r['records']:,} | {r['log_bytes'] / 1e6:.1f} | {c['median']:.0f} ({c['min']:.0f}–{c['max']:.0f}) | "
            f"{p['median']:.1f} ({p['min']:.1f}–{p['max']:.1f}) | {r['page_bytes'] / 1000:.0f} |"
        )
    (RESULTS / "dashboard.md").write_text("\n".join(lines) + "\n", "utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
