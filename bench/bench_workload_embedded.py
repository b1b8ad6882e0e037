"""Embedded engine on the realistic workload: ingest through the CLI, cold and warm search, 1 and 8 clients.

Run (the lead's quiet-machine re-run; about 2 h 30 min for the defaults, 8 min with --quick):

    .venv/bin/python bench/bench_workload_embedded.py                       # 1M and 2M, 3 runs each
    .venv/bin/python bench/bench_workload_embedded.py --quick               # 100k tickets, 600 queries
    .venv/bin/python bench/bench_workload_embedded.py --sizes 2000000 --ingest-runs 1 --runs 3

The corpus (``scopegate_lab.workload``, 2M tickets, ~7 GB of JSONL) is
generated into ``--corpus`` first if missing (~15 min, niced). Indexes are built
under ``.cache/bench-embedded/`` and removed afterwards (``--keep-index`` keeps
the last one). Needs ~8 GB free per 1M tickets while an index and the corpus coexist.

Phases, each in a fresh process so peak RSS is per phase:

1. **ingest**: ``cat shards | scopegate ingest IDX /dev/stdin --format jsonl --spec spec.json``
   with the CLI's default batch size (10,000) and its progress bar (to a log file),
   ``--ingest-runs`` times into a fresh folder; docs/s from the CLI's report.
2. **query** (``--runs`` times): open the index after evicting its files from the
   page cache (``--evict files``: ``posix_fadvise`` on the index files only, so the
   other users of a shared machine keep their caches; ``global`` drops every cache,
   root only; the result says which happened and how much stayed resident); then
   *cold*: the first ``--cold-queries`` queries of the plan as raw/tool pairs;
   *warm*: the whole plan once untimed, then every query as a pair;
   *concurrent*: ``--clients`` tool clients (asyncio) and as many raw clients
   (threads) over the whole plan, in alternating order between runs.

Every figure is reported as the median over runs with the lowest and highest run.
Raw = ``EmbeddedBackend.search_sync`` (build the tantivy query, search with an
exact count, load the page's stored documents). Tool = ``SearchTool.run``. All
queries carry a tenant filter; half add product and/or status filters; pages 1-4.
Writes bench/results/workload_embedded.json and .md. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import machine, write_results
from _measure import (
    PeakRss,
    drop_all_caches,
    evict,
    fmt,
    fmt_int,
    index_files,
    load_average,
    now,
    resident_fraction,
    spread_of,
)
from _workload_runs import Timed, concurrent_raw_threads, concurrent_tool, pairs, prepared

REPO = Path(__file__).resolve().parents[1]
DEFAULT_CORPUS = REPO / ".cache" / "workload" / "w2m"
WORK = REPO / ".cache" / "bench-embedded"


# -- corpus ---------------------------------------------------------------------------------
def ensure_corpus(corpus: Path, docs: int, nice: int) -> None:
    manifest = corpus / "manifest.json"
    if manifest.exists() and json.loads(manifest.read_text())["settings"]["docs"] >= docs:
        return
    print(f"generating the workload corpus into {corpus} (niced) ...", file=sys.stderr, flush=True)
    subprocess.run(
        [sys.executable, "-m", "scopegate_lab.workload", "generate", "--out", str(corpus), "--docs", str(docs),
         "--nice", str(nice)],
        check=True,
    )  # fmt: skip


# -- phase 1: ingest through the CLI -------------------------------------------------------------
def ingest_once(corpus: Path, docs: int, index: Path, nice: int) -> dict[str, Any]:
    from scopegate_lab.workload import corpus_files

    shutil.rmtree(index, ignore_errors=True)
    files = [str(p) for p in corpus_files(corpus, docs)]
    log = index.parent / f"{index.name}.ingest.log"
    cli = [sys.executable, "-m", "scopegate.cli", "ingest", str(index), "/dev/stdin", "--format", "jsonl"]
    cli += ["--spec", str(corpus / "spec.json")]
    started = time.perf_counter()
    with log.open("w") as err:
        cat = subprocess.Popen(["cat", *files], stdout=subprocess.PIPE)
        proc = subprocess.Popen(
            ["nice", "-n", str(nice), *cli], stdin=cat.stdout, stdout=subprocess.PIPE, stderr=err, text=True
        )
        assert cat.stdout is not None and proc.stdout is not None
        cat.stdout.close()
        output = proc.stdout.read()
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        cat.wait()
    seconds = time.perf_counter() - started
    if proc.returncode != 0:
        raise RuntimeError(f"ingest failed ({proc.returncode}): {output[-2000:]} (log: {log})")
    report = json.loads(output)
    return {
        "documents": report["indexed"],
        "failed": report["failed"],
        "commits": report["commits"],
        "cli_seconds": report["seconds"],
        "docs_per_s": report["docs_per_second"],
        "wall_seconds": round(seconds, 1),
        "peak_rss_mb": round(usage.ru_maxrss / 1024, 1),
        "cpu_seconds": round(usage.ru_utime + usage.ru_stime, 1),
        "index_bytes": sum(p.stat().st_size for p in index_files(index)),
        "load_average": load_average(),
    }


# -- phase 2: queries, in a fresh process -----------------------------------------------------------
async def query_phase(index: Path, corpus: Path, queries: int, cold_queries: int, clients: int, run: int) -> dict:
    from scopegate.backends.embedded import EmbeddedBackend
    from scopegate.search.tools import SearchTool
    from scopegate_lab.workload import read_queries

    out: dict[str, Any] = {"load_average_start": load_average()}
    with PeakRss() as rss:
        t0 = time.perf_counter()
        backend = EmbeddedBackend.open(index)
        out["open_seconds"] = round(time.perf_counter() - t0, 3)
    out["open_peak_rss_mb"] = rss.mb
    tool = SearchTool(backend.spec, backend)
    timed = Timed()
    backend.search_sync = timed.wrap_sync(backend.search_sync)  # type: ignore[method-assign]
    engine = EmbeddedBackend.search_sync.__get__(backend)  # the raw call, untimed by the wrapper

    async def raw(query: Any) -> Any:
        return engine(query)

    plan = prepared(tool, read_queries(corpus)[:queries])
    with PeakRss() as rss:
        out["cold"] = await pairs(tool, raw, timed, plan[:cold_queries])
    out["cold"]["peak_rss_mb"] = rss.mb
    with PeakRss() as rss:
        for args, ctx, _ in plan:  # warm-up, untimed
            await tool.run(args, ctx)
        out["warm"] = await pairs(tool, raw, timed, plan)
    out["warm"]["peak_rss_mb"] = rss.mb
    with PeakRss() as rss:
        order = ("tool", "raw") if run % 2 == 0 else ("raw", "tool")
        concurrent: dict[str, Any] = {}
        for side in order:
            if side == "tool":
                concurrent["tool"] = await concurrent_tool(tool, plan, clients)
            else:
                concurrent["raw"] = await asyncio.to_thread(concurrent_raw_threads, engine, plan, clients)
        single = out["warm"]["tool_ms"]["mean"]
        concurrent["tool_single_client_calls_per_s"] = round(1000 / single, 1)
    concurrent["peak_rss_mb"] = rss.mb
    out["concurrent"] = concurrent
    out["load_average_end"] = load_average()
    await backend.close()
    return out


def run_query_process(index: Path, corpus: Path, args: argparse.Namespace, run: int) -> dict[str, Any]:
    files = index_files(index)
    if args.evict == "global":
        dropped = drop_all_caches()
        how = "global drop_caches" if dropped else "global drop_caches refused; evicted the index files instead"
        if not dropped:
            evict(files)
    elif args.evict == "files":
        evict(files)
        how = "posix_fadvise(DONTNEED) on the index files"
    else:
        how = "none"
    resident = resident_fraction(files)
    cmd = [sys.executable, __file__, "--phase", "query", "--index", str(index), "--corpus", str(corpus)]
    cmd += ["--queries", str(args.queries), "--cold-queries", str(args.cold_queries), "--clients", str(args.clients)]
    cmd += ["--run", str(run)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"query phase failed: {done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout)
    result["eviction"] = how
    result["resident_fraction_before_cold"] = resident
    return result


# -- report -----------------------------------------------------------------------------------
def summarise(size: int, ingests: list[dict[str, Any]], runs: list[dict[str, Any]]) -> dict[str, Any]:
    s: dict[str, Any] = {"documents": size, "ingest_runs": len(ingests), "query_runs": len(runs)}
    if ingests:
        s["ingest"] = {k: spread_of(ingests, k) for k in ("docs_per_s", "cli_seconds", "peak_rss_mb", "index_bytes")}
    for phase in ("cold", "warm"):
        s[phase] = {
            metric: {q: spread_of(runs, phase, metric, q) for q in ("p50", "p95", "p99")}
            for metric in ("raw_ms", "tool_ms", "overhead_in_call_ms", "overhead_paired_ms")
        }
        s[phase]["peak_rss_mb"] = spread_of(runs, phase, "peak_rss_mb")
    s["open_seconds"] = spread_of(runs, "open_seconds")
    s["concurrent"] = {
        side: {
            "calls_per_s": spread_of(runs, "concurrent", side, "calls_per_s"),
            **{q: spread_of(runs, "concurrent", side, "latency_ms", q) for q in ("p50", "p95", "p99")},
        }
        for side in ("tool", "raw")
    }
    s["concurrent"]["tool_single_client_calls_per_s"] = spread_of(runs, "concurrent", "tool_single_client_calls_per_s")
    s["concurrent"]["peak_rss_mb"] = spread_of(runs, "concurrent", "peak_rss_mb")
    return s


def markdown(data: dict[str, Any]) -> str:
    lines = [
        "# Embedded engine on the realistic workload",
        "",
        f"{data['when']}; {data['machine']['cpus']} cores, Python {data['machine']['python']}. "
        f"Load average at start {data['load_average_start']}, at end {data['load_average_end']}"
        + (" (shared machine: provisional figures)." if max(data["load_average_start"]) > 1.5 else "."),
        f"Corpus: {data['corpus']}; {data['queries']} distinct queries (held-out real ticket text), "
        f"first {data['cold_queries']} cold; {data['clients']} concurrent clients. Cold runs: {data['eviction']}.",
        "Figures: median over runs (lowest–highest run). Latencies in ms.",
        "",
    ]
    for size, s in data["sizes"].items():
        lines += [f"## {int(size):,} tickets", ""]
        if "ingest" in s:
            i = s["ingest"]
            lines += [
                f"Ingest (CLI, batch 10,000, progress bar; {s['ingest_runs']} runs): "
                f"{fmt_int(i['docs_per_s'])} docs/s, "
                f"{fmt(i['cli_seconds'], 0)} s, peak RSS {fmt(i['peak_rss_mb'], 0)} MB, "
                f"index {i['index_bytes']['median'] / 1e9:.2f} GB.",
                "",
            ]
        lines += [
            "| phase | raw p50 / p95 / p99 | tool p50 / p95 / p99 | overhead in call p50 / p95 | "
            "overhead paired p50 / p95 | peak RSS MB |",
            "|---|---|---|---|---|---|",
        ]
        for phase in ("cold", "warm"):
            p = s[phase]
            lines.append(
                f"| {phase} | {fmt(p['raw_ms']['p50'])} / {fmt(p['raw_ms']['p95'])} / {fmt(p['raw_ms']['p99'])} | "
                f"{fmt(p['tool_ms']['p50'])} / {fmt(p['tool_ms']['p95'])} / {fmt(p['tool_ms']['p99'])} | "
                f"{fmt(p['overhead_in_call_ms']['p50'])} / {fmt(p['overhead_in_call_ms']['p95'])} | "
                f"{fmt(p['overhead_paired_ms']['p50'])} / {fmt(p['overhead_paired_ms']['p95'])} | "
                f"{fmt(p['peak_rss_mb'], 0)} |"
            )
        c = s["concurrent"]
        lines += [
            "",
            f"Concurrent ({data['clients']} clients): tool {fmt(c['tool']['calls_per_s'], 0)} calls/s, "
            f"p50 / p95 / p99 {fmt(c['tool']['p50'])} / {fmt(c['tool']['p95'])} / {fmt(c['tool']['p99'])}; "
            f"raw (threads) {fmt(c['raw']['calls_per_s'], 0)} calls/s, "
            f"p50 / p95 / p99 {fmt(c['raw']['p50'])} / {fmt(c['raw']['p95'])} / {fmt(c['raw']['p99'])}. "
            f"One client through the tool: {fmt(c['tool_single_client_calls_per_s'], 0)} calls/s. "
            f"Peak RSS {fmt(c['peak_rss_mb'], 0)} MB. Opening the index: {fmt(s['open_seconds'], 3)} s.",
            "",
        ]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS, help="workload corpus folder")
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000_000, 2_000_000])
    parser.add_argument("--runs", type=int, default=3, help="query-phase processes per size")
    parser.add_argument(
        "--ingest-runs", type=int, nargs="+", default=[3], help="full ingests per size (one value, or one per size)"
    )
    parser.add_argument("--queries", type=int, default=2400)
    parser.add_argument("--cold-queries", type=int, default=200)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--evict", choices=("files", "global", "none"), default="files")
    parser.add_argument("--nice", type=int, default=10, help="niceness of generation and ingest")
    parser.add_argument("--keep-index", action="store_true")
    parser.add_argument("--index", type=Path, help="use this existing index (skips ingest); one size")
    parser.add_argument("--quick", action="store_true", help="100k tickets, 600 queries, 3 + 3 runs")
    parser.add_argument("--phase", choices=("query",), help=argparse.SUPPRESS)
    parser.add_argument("--run", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--output", default="workload_embedded", help="results name under bench/results/")
    args = parser.parse_args()
    if args.phase == "query":
        result = asyncio.run(
            query_phase(args.index, args.corpus, args.queries, args.cold_queries, args.clients, args.run)
        )
        print(json.dumps(result))
        return 0
    if args.quick:
        args.sizes, args.queries, args.cold_queries = [100_000], 600, 100
    ensure_corpus(args.corpus, max(args.sizes), args.nice)
    data: dict[str, Any] = {
        "when": now(),
        "machine": machine(),
        "load_average_start": load_average(),
        "corpus": str(args.corpus.relative_to(REPO) if args.corpus.is_relative_to(REPO) else args.corpus),
        "queries": args.queries,
        "cold_queries": args.cold_queries,
        "clients": args.clients,
        "eviction": args.evict,
        "sizes": {},
        "raw": {},
    }
    WORK.mkdir(parents=True, exist_ok=True)
    ingest_runs = args.ingest_runs * len(args.sizes) if len(args.ingest_runs) == 1 else args.ingest_runs
    if len(ingest_runs) != len(args.sizes):
        parser.error("--ingest-runs takes one value or one per size")
    for size, ingest_count in zip(args.sizes, ingest_runs, strict=True):
        index = args.index or WORK / f"idx-{size}"
        ingests = []
        if args.index is None:
            for n in range(ingest_count):
                print(f"[{size:,}] ingest run {n + 1}/{ingest_count} ...", file=sys.stderr, flush=True)
                ingests.append(ingest_once(args.corpus, size, index, args.nice))
                print(f"  {ingests[-1]}", file=sys.stderr, flush=True)
        runs = []
        for n in range(args.runs):
            print(f"[{size:,}] query run {n + 1}/{args.runs} ...", file=sys.stderr, flush=True)
            runs.append(run_query_process(index, args.corpus, args, n))
            print(f"  warm tool p95 {runs[-1]['warm']['tool_ms']['p95']} ms", file=sys.stderr, flush=True)
        data["sizes"][str(size)] = summarise(size, ingests, runs)
        data["raw"][str(size)] = {"ingest": ingests, "query": runs}
        data["eviction"] = runs[-1]["eviction"] if runs else args.evict
        if args.index is None and not (args.keep_index and size == args.sizes[-1]):
            shutil.rmtree(index, ignore_errors=True)
        data["load_average_end"] = load_average()
        write_results(args.output, data, markdown(data))  # after each size: a long run keeps what it measured
    data["load_average_end"] = load_average()
    write_results(args.output, data, markdown(data))
    print(markdown(data))
    return 0


if __name__ == "__main__":
    sys.exit(main())
