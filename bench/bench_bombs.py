"""Hostile response bodies against the OpenAPI runtime: memory, event-loop stall and time per bomb.

    python bench/bench_bombs.py                       # every bomb, 3 runs, 1 MB limit (~4-6 min)
    python bench/bench_bombs.py --runs 5 --cases gzip-gzip,zstd --max-bytes 4000000

The hostile example service (``scopegate_lab.hostile``) runs in its own
process. Each run of each bomb is a fresh worker process (so one bomb's
memory never hides another's): it warms up (imports, thread pool, one
ordinary compressed call), resets the kernel's peak-RSS mark
(``/proc/self/clear_refs``), runs one tool call while a probe task measures
the longest event-loop stall (the largest lateness of a 2 ms sleep), and
reports the call's result, peak RSS growth over the warmed-up baseline, the
stall and the wall time. Targets (issue 15): RSS growth <= 4 x max_response_bytes
+ 20 MB, stall <= 50 ms, a structured result for every bomb.

Writes bench/results/bombs.json and bombs.md (median and min-max of the runs,
with the load average: figures taken on a shared machine are provisional).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import machine, write_results

ROOT = Path(__file__).resolve().parent.parent
PROBE_S = 0.002


def _status_kib(field: str) -> int:
    match = re.search(rf"{field}:\s+(\d+)", Path("/proc/self/status").read_text())
    return int(match.group(1)) if match else 0


async def _worker(base_url: str, case: str, max_bytes: int, total_s: float) -> dict[str, Any]:
    from scopegate.context import CallContext
    from scopegate.openapi.runtime import FromProvider, OperationToolset, RetryPolicy, Timeouts, ToolsetSettings
    from scopegate_lab.hostile import SPEC_PATH, TOKEN

    settings = ToolsetSettings(
        spec=SPEC_PATH,
        allow=("getBomb",),
        base_url=base_url,
        credentials={"hostileToken": FromProvider(lambda ctx, scheme: TOKEN)},
        timeouts=Timeouts(connect=2.0, read=total_s, write=2.0, pool=2.0, total=total_s),
        retry=RetryPolicy(max_attempts=2, base_delay=0.01, max_delay=0.05),
        max_response_bytes=max_bytes,
    )
    toolset = OperationToolset(settings)
    tool = toolset.tool("getBomb")
    ctx = CallContext(state={"user_id": "bench"})
    for warm in ("ok-gzip", "ok-br", "ok-zstd"):
        await tool.run({"name": warm}, ctx)
    baseline = _status_kib("VmRSS")
    can_reset = True
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        can_reset = False
    stall = 0.0
    running = True

    async def probe() -> None:
        nonlocal stall
        while running:
            started = time.perf_counter()
            await asyncio.sleep(PROBE_S)
            stall = max(stall, time.perf_counter() - started - PROBE_S)

    probe_task = asyncio.create_task(probe())
    await asyncio.sleep(0.01)
    started = time.perf_counter()
    result = (await tool.run({"name": case}, ctx)).result
    seconds = time.perf_counter() - started
    running = False
    await probe_task
    peak = _status_kib("VmHWM")
    await toolset.aclose()
    return {
        "case": case,
        "result": result.get("error_code") or result.get("status"),
        "structured": isinstance(result.get("status"), str) and "request_id" in result,
        "rss_growth_mb": round(max(0, peak - baseline) / 1024, 1),
        "peak_reset": can_reset,
        "stall_ms": round(stall * 1000, 1),
        "seconds": round(seconds, 3),
    }


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _run_case(base_url: str, case: str, max_bytes: int, total_s: float) -> dict[str, Any]:
    command = [sys.executable, __file__, "--worker", case, "--base-url", base_url]
    command += ["--max-bytes", str(max_bytes), "--total-s", str(total_s)]
    out = subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    lines = [line for line in out.stdout.splitlines() if line.startswith("{")]
    if out.returncode != 0 or not lines:
        return {
            "case": case,
            "result": f"worker failed ({out.returncode})",
            "structured": False,
            "stderr": out.stderr[-500:],
        }
    data: dict[str, Any] = json.loads(lines[-1])
    return data


def _summary(case: str, runs: list[dict[str, Any]], budget_mb: float) -> dict[str, Any]:
    def col(key: str) -> list[float]:
        return [float(r[key]) for r in runs if key in r]

    rss, stall, secs = col("rss_growth_mb"), col("stall_ms"), col("seconds")
    results = sorted({str(r["result"]) for r in runs})
    return {
        "case": case,
        "results": results,
        "structured": all(r.get("structured") for r in runs),
        "rss_growth_mb": {"median": statistics.median(rss), "min": min(rss), "max": max(rss)} if rss else None,
        "stall_ms": {"median": statistics.median(stall), "min": min(stall), "max": max(stall)} if stall else None,
        "seconds": {"median": statistics.median(secs), "min": min(secs), "max": max(secs)} if secs else None,
        "within_memory": bool(rss) and max(rss) <= budget_mb,
        "within_stall": bool(stall) and max(stall) <= 50.0,
    }


def _markdown(data: dict[str, Any]) -> str:
    from scopegate_lab.hostile import CATALOGUE

    m = data["machine"]
    lines = [
        "# Hostile response bodies (issue 15)",
        "",
        f"{m['when']}, Python {m['python']}, {m['cpus']} CPUs, load average {data['loadavg']} "
        f"(a shared machine: provisional figures). max_response_bytes = {data['max_bytes']:,}, "
        f"memory budget 4 x limit + 20 MB = {data['budget_mb']:.1f} MB, stall budget 50 ms, "
        f"total timeout {data['total_s']} s; {data['runs']} runs per bomb, median (min-max).",
        "",
        "| bomb | what | result | peak RSS growth MB | longest loop stall ms | time s |",
        "|---|---|---|---|---|---|",
    ]

    def fmt(stat: dict[str, float] | None, digits: int = 1) -> str:
        if not stat:
            return "-"
        return f"{stat['median']:.{digits}f} ({stat['min']:.{digits}f}-{stat['max']:.{digits}f})"

    for row in data["cases"]:
        what = CATALOGUE[row["case"]].what if row["case"] in CATALOGUE else ""
        lines.append(
            f"| {row['case']} | {what} | {', '.join(row['results'])} | {fmt(row['rss_growth_mb'])} | "
            f"{fmt(row['stall_ms'])} | {fmt(row['seconds'], 2)} |"
        )
    ok_mem = sum(r["within_memory"] for r in data["cases"])
    ok_stall = sum(r["within_stall"] for r in data["cases"])
    lines += [
        "",
        f"Within the memory budget: {ok_mem}/{len(data['cases'])}; within the stall budget: "
        f"{ok_stall}/{len(data['cases'])}; structured result every run: "
        f"{sum(r['structured'] for r in data['cases'])}/{len(data['cases'])}.",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--cases", default="", help="comma-separated bomb names (default: all)")
    parser.add_argument("--max-bytes", type=int, default=1_000_000)
    parser.add_argument("--total-s", type=float, default=2.0)
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--base-url", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(asyncio.run(_worker(args.base_url, args.worker, args.max_bytes, args.total_s))))
        return

    from scopegate_lab.hostile import CATALOGUE

    cases = [c for c in args.cases.split(",") if c] or sorted(CATALOGUE)
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "scopegate_lab.hostile", "--port", str(port), "--prebuild"],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    try:
        assert server.stdout is not None
        server.stdout.readline()  # "hostile service on ..."
        base_url = f"http://127.0.0.1:{port}"
        budget_mb = (4 * args.max_bytes + 20 * 1024 * 1024) / (1024 * 1024)
        rows = []
        for case in cases:
            runs = [_run_case(base_url, case, args.max_bytes, args.total_s) for _ in range(args.runs)]
            row = _summary(case, runs, budget_mb)
            rows.append(row)
            print(json.dumps(row), flush=True)
    finally:
        server.terminate()
        server.wait(timeout=10)
    data = {
        "machine": machine(),
        "loadavg": [round(x, 2) for x in os.getloadavg()],
        "max_bytes": args.max_bytes,
        "budget_mb": budget_mb,
        "total_s": args.total_s,
        "runs": args.runs,
        "cases": rows,
    }
    write_results("bombs", data, _markdown(data))


if __name__ == "__main__":
    main()
