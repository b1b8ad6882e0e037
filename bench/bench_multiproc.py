"""Many processes, one index: search latency idle vs during two concurrent bulk ingests, and staleness.

Latency (same run, rounds alternate idle and ingest so load drifts hit both): the search tool
(``SearchTool.run``, no cache) in this process, while two bulk ingests run concurrently:

* ``in-process``: two ``backend.ingest`` calls on the same embedded backend (its writer thread);
* ``processes``: two ingest processes on the same folder (tantivy's writer lock serialises them);
* ``in-process-nice0``, ``processes-nice0``: the same with ``writer_nice`` 0 (ingest at the searches'
  CPU priority), to show what the lower writer priority buys;
* ``shared-pool``: wave 1's design, the two ingests on the search thread pool (what issue 12 fixed);
* ``opensearch`` (with ``--opensearch URL``): two concurrent ``backend.ingest`` calls (another process).

Staleness: :func:`scopegate_lab.consistency.run_consistency` (one writer process, three guarded
reader processes, generation_ttl 0.25 s): how old a served document state was when it had already been
replaced (max and p99), and the ground-truth violations (must be 0).

Run: .venv/bin/python bench/bench_multiproc.py [--docs 100000] [--ingest-docs 15000] [--rounds 3]
     [--queries-idle 1500] [--opensearch URL] [--consistency-ops 150] [--redis URL]
     [--modes in-process,in-process-nice0,processes,shared-pool] [--writer-nice 10]
Takes about 8 minutes on 2 shared cores with --opensearch and --redis (8 min 18 s measured at load
average 10-21; the ingest phases at writer_nice 10 last longest on a busy machine, less on a quiet
one). Writes bench/results/multiproc.json and .md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import generated_tickets, machine, percentiles, query_plan, write_results

from scopegate.backends.embedded import DEFAULT_WRITER_NICE, EmbeddedBackend
from scopegate.context import CallContext
from scopegate.demo.corpus import ticket_spec
from scopegate.search.tools import SearchTool
from scopegate_lab.consistency import Target, run_consistency

# What `scopegate ingest` does: backend.ingest, so the writer thread (at writer_nice) does the work.
INGEST_PROCESS = textwrap.dedent(
    """
    import asyncio, sys
    sys.path.insert(0, sys.argv[4])
    from _common import generated_tickets
    from scopegate.backends.embedded import EmbeddedBackend
    prefix, count, nice = sys.argv[2], int(sys.argv[3]), int(sys.argv[5])
    backend = EmbeddedBackend.open(sys.argv[1], writer_wait_s=600, writer_nice=nice)
    docs = (dict(d, ticket_id=prefix + d["ticket_id"]) for d in generated_tickets(count, seed=sum(map(ord, prefix))))
    async def main():
        await backend.ingest(docs, batch_size=5000)
        await backend.close()
    asyncio.run(main())
    """
)

OPENSEARCH_INGEST = textwrap.dedent(
    """
    import asyncio, dataclasses, sys
    sys.path.insert(0, sys.argv[5])
    from _common import generated_tickets
    from scopegate.backends.opensearch import OpenSearchBackend
    from scopegate.demo.corpus import ticket_spec
    url, index, prefix, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    async def one(p):
        spec = dataclasses.replace(ticket_spec(), index=index)
        backend = OpenSearchBackend(spec, url, bulk_concurrency=int(sys.argv[6]))
        docs = (dict(d, ticket_id=p + d["ticket_id"]) for d in generated_tickets(count, seed=len(p)))
        await backend.ingest(docs, batch_size=5000)
        await backend.close()
    async def main():
        await asyncio.gather(one(prefix + "a"), one(prefix + "b"))  # two concurrent bulk ingests
    asyncio.run(main())
    """
)


MODES = ("in-process", "in-process-nice0", "processes", "processes-nice0", "shared-pool")


async def searches_until(tool: SearchTool, done: Any, plan: list[tuple[str, str, str | None]]) -> list[float]:
    """Search latencies (ms) of back-to-back tool calls until ``done()`` is true (at least 20 calls)."""
    out: list[float] = []
    i = 0
    while not done() or len(out) < 20:
        text, tenant, product = plan[i % len(plan)]
        i += 1
        args: dict[str, Any] = {"query": text, **({"product": product} if product else {})}
        t0 = time.perf_counter()
        result = (await tool.run(args, CallContext(state={"tenant_id": tenant}))).result
        out.append((time.perf_counter() - t0) * 1000)
        if result.get("status") != "ok":
            out[-1] = float("inf")  # a failed search counts as the slowest possible
    return out


async def idle(tool: SearchTool, plan: list[tuple[str, str, str | None]], n: int) -> list[float]:
    count = 0

    def done() -> bool:
        nonlocal count
        count += 1
        return count > n

    return await searches_until(tool, done, plan)


async def embedded_round(
    backend: EmbeddedBackend, tool: SearchTool, mode: str, round_: int, ingest_docs: int, plan: Any, nice: int
) -> list[float]:
    bench_dir = str(Path(__file__).resolve().parent)
    prefixes = [f"R{round_}M{MODES.index(mode)}{k}-" for k in range(2)]
    nice = 0 if mode.endswith("nice0") else nice
    if mode.startswith("processes"):
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", INGEST_PROCESS, str(backend.path), p, str(ingest_docs), bench_dir, str(nice)]
            )
            for p in prefixes
        ]
        latencies = await searches_until(tool, lambda: all(p.poll() is not None for p in procs), plan)
        assert all(p.returncode == 0 for p in procs)
        return latencies

    def docs(prefix: str) -> Any:
        return (dict(d, ticket_id=prefix + d["ticket_id"]) for d in generated_tickets(ingest_docs, seed=round_))

    if mode.startswith("in-process"):
        assert backend.path is not None
        writer = backend if nice == backend.writer_nice else EmbeddedBackend.open(backend.path, writer_nice=nice)
        tasks = [asyncio.create_task(writer.ingest(docs(p), batch_size=5000)) for p in prefixes]
        latencies = await searches_until(tool, lambda: all(t.done() for t in tasks), plan)
        await asyncio.gather(*tasks)
        if writer is not backend:
            await writer.close()
        return latencies
    else:  # shared-pool: wave 1 ran ingest on the search pool
        tasks = [
            asyncio.create_task(backend._run(lambda p=p: backend.ingest_sync(docs(p), batch_size=5000)))
            for p in prefixes
        ]
    latencies = await searches_until(tool, lambda: all(t.done() for t in tasks), plan)
    await asyncio.gather(*tasks)
    return latencies


def summarise(rounds: list[list[float]]) -> dict[str, Any]:
    per_round = [percentiles(r) for r in rounds]
    merged = percentiles([x for r in rounds for x in r])
    return {
        "rounds": per_round,
        "p50_ms": merged.get("p50"),
        "p95_ms": merged.get("p95"),
        "max_ms": max((x for r in rounds for x in r), default=None),
        "p95_ms_per_round": [r.get("p95") for r in per_round],
        "p95_ms_median_of_rounds": statistics.median([r["p95"] for r in per_round]) if per_round else None,
        "failed": sum(1 for r in rounds for x in r if x == float("inf")),
        "n": merged.get("n"),
    }


async def embedded_latency(args: argparse.Namespace, root: Path) -> dict[str, Any]:
    path = root / "index"
    backend = EmbeddedBackend(ticket_spec(), path, writer_nice=args.writer_nice)
    t0 = time.perf_counter()
    backend.ingest_sync(generated_tickets(args.docs), batch_size=50_000)
    build_s = time.perf_counter() - t0
    tool = SearchTool(backend.spec, backend)
    plan = query_plan(5000)
    await idle(tool, plan, 200)  # warm-up
    modes = list(args.modes)
    results: dict[str, list[list[float]]] = {"idle": [], **{m: [] for m in modes}}
    before: dict[str, list[list[float]]] = {m: [] for m in modes}  # the idle phase right before each
    seconds: dict[str, list[float]] = {m: [] for m in modes}  # how long the two ingests took
    for round_ in range(args.rounds):
        for mode in modes:
            before[mode].append(await idle(tool, plan, args.queries_idle))
            results["idle"].append(before[mode][-1])
            t0 = time.perf_counter()
            results[mode].append(
                await embedded_round(backend, tool, mode, round_, args.ingest_docs, plan, args.writer_nice)
            )
            seconds[mode].append(round(time.perf_counter() - t0, 1))
            print(f"embedded round {round_} {mode}: {percentiles(results[mode][-1])}", flush=True)
    await backend.close()
    out = {
        "documents": args.docs,
        "build_seconds": round(build_s, 1),
        "ingest_docs_each": args.ingest_docs,
        "writer_nice": args.writer_nice,
    }
    out.update({mode: summarise(r) for mode, r in results.items()})
    for mode in modes:
        out[mode].update(paired(results[mode], before[mode]))
        out[mode]["ingest_seconds_per_round"] = seconds[mode]
    return out


def paired(during: list[list[float]], idle_before: list[list[float]]) -> dict[str, Any]:
    """p95 of each ingest phase over p95 of the idle phase just before it (same minute, same load), and
    the p95 of all phases of this kind over the p95 of those idle phases together."""
    ratios = [round(percentiles(d)["p95"] / percentiles(i)["p95"], 2) for d, i in zip(during, idle_before, strict=True)]
    flat_during, flat_idle = [x for r in during for x in r], [x for r in idle_before for x in r]
    merged = percentiles(flat_during)["p95"] / percentiles(flat_idle)["p95"]
    return {
        "p95_vs_idle_per_round": ratios,
        "p95_vs_idle": round(statistics.median(ratios), 2) if ratios else None,
        "p95_vs_idle_merged": round(merged, 2),
    }


async def opensearch_latency(args: argparse.Namespace) -> dict[str, Any]:
    import dataclasses

    from scopegate.backends.opensearch import OpenSearchBackend

    spec = dataclasses.replace(ticket_spec(), index=f"bench-multiproc-{os.getpid()}")
    backend = OpenSearchBackend(spec, args.opensearch)
    bench_dir = str(Path(__file__).resolve().parent)
    try:
        await backend.ingest(generated_tickets(args.opensearch_docs), batch_size=5000)
        tool = SearchTool(spec, backend)
        plan = query_plan(5000)
        await idle(tool, plan, 100)
        results: dict[str, list[list[float]]] = {"idle": [], "two ingests": []}
        for round_ in range(args.rounds):
            results["idle"].append(await idle(tool, plan, args.queries_idle // 3))  # right before the ingests
            proc = subprocess.Popen(
                [
                    sys.executable, "-c", OPENSEARCH_INGEST, args.opensearch, spec.index, f"R{round_}-",
                    str(args.ingest_docs), bench_dir, str(args.opensearch_bulk_concurrency),
                ]
            )  # fmt: skip
            results["two ingests"].append(await searches_until(tool, lambda p=proc: p.poll() is not None, plan))
            assert proc.returncode == 0
            print(f"opensearch round {round_}: {percentiles(results['two ingests'][-1])}", flush=True)
        out: dict[str, Any] = {
            "documents": args.opensearch_docs,
            "ingest_docs_each": args.ingest_docs,
            "bulk_concurrency": args.opensearch_bulk_concurrency,
        }
        out.update({mode: summarise(r) for mode, r in results.items()})
        out["two ingests"].update(paired(results["two ingests"], results["idle"]))
        return out
    finally:
        await backend.drop()
        await backend.close()


def staleness(args: argparse.Namespace, root: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    targets = [("embedded", Target("embedded", str(root / "consistency-index")), None)]
    if args.redis:
        targets.append(("embedded+redis", Target("embedded", str(root / "consistency-redis")), args.redis))
    if args.opensearch:
        targets.append(("opensearch", Target("opensearch", args.opensearch, f"bench-consistency-{os.getpid()}"), None))
    for name, target, redis_url in targets:
        run = run_consistency(target, root / f"run-{name}", ops=args.consistency_ops, redis_url=redis_url)
        out[name] = run.summary()
        print(f"staleness {name}: {json.dumps(out[name])}", flush=True)
        if target.engine == "opensearch":
            asyncio.run(_drop_opensearch(target))
    return out


async def _drop_opensearch(target: Target) -> None:
    from scopegate_lab.consistency import open_backend

    backend = open_backend(target)
    await backend.drop()
    await backend.close()


TABLE_HEAD = (
    "| phase | searches | p50 ms | p95 ms | max ms | p95 per phase ms | p95 / idle before: all phases; median "
    "(per round) | failed | ingests took s |\n"
    "|---|---|---|---|---|---|---|---|---|"
)


def _row(mode: str, r: dict[str, Any]) -> str:
    biggest = r["max_ms"]
    shown = "inf (failed)" if biggest == float("inf") else round(biggest, 1)
    per_round = r.get("p95_vs_idle_per_round")
    ratio = (
        f"{r['p95_vs_idle_merged']}; {r['p95_vs_idle']} ({' / '.join(str(x) for x in per_round)})" if per_round else "-"
    )
    return (
        f"| {mode} | {r['n']} | {r['p50_ms']} | {r['p95_ms']} | {shown} | "
        f"{' / '.join(str(x) for x in r['p95_ms_per_round'])} | {ratio} | {r['failed']} | "
        f"{' / '.join(str(x) for x in r.get('ingest_seconds_per_round', [])) or '-'} |"
    )


def to_markdown(data: dict[str, Any]) -> str:
    m = data["machine"]
    lines = [
        "# Many processes, one index: search latency during ingest, staleness",
        "",
        f"Machine: {m['cpus']} cores, Python {m['python']}, {m['when']}; load average at start "
        f"{data['loadavg_start']}, at end {data['loadavg_end']} (shared machine: provisional figures).",
        "Search = `SearchTool.run` (no cache), back to back, 40 tenants, product filter on about half.",
        f"Rounds: {data['rounds']}; in each, every ingest phase follows an idle phase (so load drifts hit both); "
        "p95 over all phases of a kind, per phase, and the ratio of each ingest phase's p95 to the idle phase "
        "just before it (median of rounds first). Target: p95 during ingest <= 2x idle.",
        "",
    ]
    e = data.get("embedded")
    if e:
        lines += [
            f"## Embedded, {e['documents']:,} documents; each ingest {e['ingest_docs_each']:,} documents",
            "",
            TABLE_HEAD,
        ]
        for mode in ("idle", *MODES):
            if mode in e:
                lines.append(_row(mode, e[mode]))
        lines += [
            "",
            "in-process: two concurrent `backend.ingest` calls (the writer thread, "
            f"`writer_nice` {e.get('writer_nice', '-')}; searches keep their pool). "
            "processes: two ingest processes on the folder, as `scopegate ingest` runs them (the second waits "
            "for tantivy's writer lock). `-nice0`: the same with `writer_nice: 0` (ingest at the searches' CPU "
            "priority, as before). shared-pool: wave 1's design, ingest on the search pool (searches queue "
            "behind it; an inf latency is a failed search).",
            "",
        ]
    o = data.get("opensearch")
    if o:
        lines += [
            f"## OpenSearch, {o['documents']:,} documents; two concurrent ingests of {o['ingest_docs_each']:,} "
            f"(bulk_concurrency {o['bulk_concurrency']} each, from another process)",
            "",
            TABLE_HEAD,
        ]
        for mode in ("idle", "two ingests"):
            lines.append(_row(mode, o[mode]))
        lines.append("")
    s = data.get("staleness")
    if s:
        lines += [
            f"## Staleness (1 writer process, 3 guarded reader processes, generation_ttl_s 0.25, "
            f"bound {next(iter(s.values()))['bound_s']} s)",
            "",
            "| backend | writes | answers | cache hits | stale answers (within bound) | age max s | age p99 s | "
            "age p99 s, all answers | beyond bound | foreign | failed |",
            "|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for name, r in s.items():
            lines.append(
                f"| {name} | {r['writes']} | {r['answers']} | {r['cache_hits']} | "
                f"{r['stale_answers_within_bound']} | {r['staleness_max_s']} | {r['staleness_p99_s']} | "
                f"{r['staleness_p99_all_answers_s']} | "
                f"{r['stale_beyond_bound']} | {r['foreign']} | {r['failed_calls']} |"
            )
        lines += [
            "",
            "Age: for an answer that showed a document state already replaced when the call started, how long "
            "before the call the replacing write had returned (max and p99 over those answers; the last column: "
            "p99 over every answer, a fresh one counting 0). Every answer is checked against the ground "
            "truth (scopegate_lab.consistency); the bound holds by construction (a generation is trusted "
            "for generation_ttl_s from when it was asked for), so 'beyond bound' must be 0 on any machine.",
        ]
    return "\n".join(lines)


def _modes(text: str) -> list[str]:
    names = [m.strip() for m in text.split(",") if m.strip()]
    unknown = [m for m in names if m not in MODES]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"unknown modes {unknown}; known: {', '.join(MODES)}")
    return names


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=100_000, help="Embedded index size before the rounds.")
    parser.add_argument("--ingest-docs", type=int, default=15_000, help="Documents per bulk ingest.")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--queries-idle",
        type=int,
        default=8000,
        help="Searches per idle phase (long enough that a burst of other load does not decide its p95).",
    )
    parser.add_argument("--opensearch", default=os.environ.get("SCOPEGATE_OPENSEARCH_URL"), help="Node URL.")
    parser.add_argument("--opensearch-docs", type=int, default=50_000)
    parser.add_argument(
        "--opensearch-bulk-concurrency", type=int, default=2, help="Bulk requests in flight per ingest (default 2)."
    )
    parser.add_argument("--redis", default=None, help="redis:// URL for the shared-cache staleness run.")
    parser.add_argument("--consistency-ops", type=int, default=150)
    parser.add_argument(
        "--modes",
        default=",".join(MODES),
        type=_modes,
        help=f"Ingest phases, comma-separated, of: {', '.join(MODES)}.",
    )
    parser.add_argument("--writer-nice", type=int, default=DEFAULT_WRITER_NICE, help="The backends' writer_nice.")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="scopegate-bench-multiproc-"))
    data: dict[str, Any] = {"machine": machine(), "loadavg_start": [round(x, 2) for x in os.getloadavg()]}
    data["rounds"] = args.rounds
    try:
        data["embedded"] = asyncio.run(embedded_latency(args, root))
        if args.opensearch:
            data["opensearch"] = asyncio.run(opensearch_latency(args))
        data["staleness"] = staleness(args, root)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    data["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
    write_results("multiproc", data, to_markdown(data))
    print(to_markdown(data))


if __name__ == "__main__":
    main()
