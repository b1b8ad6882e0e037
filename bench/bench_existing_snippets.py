"""Engine snippets on an existing index: the raw ``_source`` search against the tool call, 30 KB bodies.

Run (about 5 min against a running node; the index is created by plain REST calls and deleted after):

    SCOPEGATE_OPENSEARCH_URL=http://127.0.0.1:9200 .venv/bin/python bench/bench_existing_snippets.py
    .venv/bin/python bench/bench_existing_snippets.py --url http://127.0.0.1:9200 --tickets 1500 --queries 300

The tickets are bench_shaping's 30 KB variant (``scopegate_lab.workload``: same generator, bodies
extended to 30,000 characters with more text of the same product), indexed with a standard mapping
(``subject``/``body`` text, the rest keyword) behind a read alias, as a team would. Per workload query,
in rotating order:

* ``raw _source``: the search a tool without engine snippets sends: the same scored query and filters,
  the whole ``body`` in ``_source`` (what it needs to cut 400 characters locally);
* ``raw highlight``: exactly the body the existing-index tool sends (one highlight fragment, the body
  left out of ``_source``), through the same client;
* ``tool``: ``SearchTool.run`` on an ``index_mode: existing`` backend (validation, engine call,
  highlight parsing, shaping).

Reports p50/p95 latency (ms, wall clock, per run and over all runs) and the response size per page:
the engine's JSON (as re-serialised) for the raw calls, the result the model reads for the tool.
Issue 35's target: the tool call's p95 at most the raw ``_source`` search's p95. Writes
bench/results/existing_snippets.json and .md. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import machine, write_results
from _measure import load_average, now, percentiles
from _workload_runs import prepared
from bench_shaping import variants

from scopegate.backends import dsl
from scopegate.backends.opensearch import OpenSearchBackend
from scopegate.search.tools import SearchTool
from scopegate_lab.workload import SourceProfile, make_queries, workload_spec

MAPPING: dict[str, Any] = {
    "properties": {
        "ticket_id": {"type": "keyword"},
        "tenant_id": {"type": "keyword"},
        "subject": {"type": "text"},
        "body": {"type": "text"},
        "product": {"type": "keyword"},
        "status": {"type": "keyword"},
        "priority": {"type": "keyword"},
        "created_at": {"type": "keyword"},
    }
}


async def create_index(url: str, docs: list[dict[str, Any]]) -> tuple[str, str]:
    """A team-style index with a read alias, by plain REST; returns (index, alias)."""
    name = f"bench-existing-{uuid.uuid4().hex[:6]}"
    alias = f"{name}-read"
    async with httpx.AsyncClient(base_url=url, timeout=300) as http:
        settings = {"index": {"number_of_shards": 1, "number_of_replicas": 0, "refresh_interval": "-1"}}
        (await http.put(f"/{name}", json={"settings": settings, "mappings": MAPPING})).raise_for_status()
        for start in range(0, len(docs), 300):
            lines = []
            for doc in docs[start : start + 300]:
                lines.append(json.dumps({"index": {"_index": name, "_id": f"{doc['tenant_id']}:{doc['ticket_id']}"}}))
                lines.append(json.dumps({k: v for k, v in doc.items() if k in MAPPING["properties"]}))
            response = await http.post(
                "/_bulk", content="\n".join(lines) + "\n", headers={"Content-Type": "application/x-ndjson"}
            )
            response.raise_for_status()
            assert not response.json()["errors"], response.text[:500]
        (await http.put(f"/{name}/_settings", json={"index": {"refresh_interval": "1s"}})).raise_for_status()
        (await http.post(f"/{name}/_refresh")).raise_for_status()
        (await http.post(f"/{name}/_forcemerge", params={"max_num_segments": 1}, timeout=600)).raise_for_status()
        (await http.post("/_aliases", json={"actions": [{"add": {"index": name, "alias": alias}}]})).raise_for_status()
    return name, alias


def source_body(tool_body: dict[str, Any]) -> dict[str, Any]:
    """The same search with the whole body in ``_source`` and no highlighter (what local snippets need)."""
    body = {k: v for k, v in tool_body.items() if k != "highlight"}
    body["_source"] = list(dict.fromkeys([*tool_body["_source"], "body"]))
    return body


async def measure(url: str, alias: str, plan: list[Any], runs: int) -> dict[str, Any]:
    spec = dataclasses.replace(workload_spec(), index=alias, index_mode="existing")
    backend = OpenSearchBackend(spec, url)
    tool = SearchTool(spec, backend)
    fm = await backend.field_map()
    assert fm is not None
    client = backend.search_client
    params = {"request_timeout": spec.client_timeout_s}
    queries = prepared(tool, plan)
    bodies = [dsl.search_body(spec, q, fm, engine="opensearch") for _, _, q in queries]

    async def raw_source(i: int) -> int:
        return len(json.dumps(await client.search(index=alias, body=source_body(bodies[i]), params=params)))

    async def raw_highlight(i: int) -> int:
        return len(json.dumps(await client.search(index=alias, body=bodies[i], params=params)))

    async def tool_call(i: int) -> int:
        args, ctx, _ = queries[i]
        result = (await tool.run(args, ctx)).result
        assert result["status"] == "ok", result
        return len(json.dumps(result, ensure_ascii=False))

    calls = {"raw _source": raw_source, "raw highlight": raw_highlight, "tool": tool_call}
    for i in range(min(100, len(queries))):  # warm-up: JIT, caches, connections
        for call in calls.values():
            await call(i)
    out: dict[str, Any] = {"runs": []}
    every: dict[str, list[float]] = {name: [] for name in calls}
    sizes: dict[str, list[int]] = {name: [] for name in calls}
    names = list(calls)
    for run in range(runs):
        times: dict[str, list[float]] = {name: [] for name in calls}
        for i in range(len(queries)):
            shift = (i + run) % len(names)
            for name in names[shift:] + names[:shift]:  # rotate who goes first
                t0 = time.perf_counter()
                size = await calls[name](i)
                times[name].append((time.perf_counter() - t0) * 1000)
                if run == 0:
                    sizes[name].append(size)
        out["runs"].append({name: percentiles(samples) for name, samples in times.items()})
        for name, samples in times.items():
            every[name] += samples
        print(
            f"  run {run + 1}: " + ", ".join(f"{n} p95 {out['runs'][-1][n]['p95']} ms" for n in names), file=sys.stderr
        )
    out["all"] = {name: percentiles(samples) for name, samples in every.items()}
    out["bytes_per_page"] = {
        name: {"mean": round(sum(s) / len(s)), "max": max(s), "p50": sorted(s)[len(s) // 2]}
        for name, s in sizes.items()
    }
    await backend.close()
    return out


def markdown(data: dict[str, Any]) -> str:
    m = data["measured"]
    lines = [
        "# Engine snippets on an existing index (issue 35)",
        "",
        f"{data['when']}, OpenSearch {data['engine_version']} at {data['url_kind']}, {data['tickets']} tickets of "
        f"30 KB (bench_shaping's long variant) in a plain-REST index behind a read alias, {data['queries']} workload "
        f"queries x {data['runs']} runs, rotating order. Machine: {data['machine']['cpus']} CPUs "
        f"({data['machine']['cpu']}), load average {data['load_average_start']} -> {data['load_average_end']}.",
        "",
        "| call | p50 ms | p95 ms | bytes per page (mean / max) |",
        "|---|---|---|---|",
    ]
    for name, q in m["all"].items():
        size = m["bytes_per_page"][name]
        lines.append(f"| {name} | {q['p50']} | {q['p95']} | {size['mean']:,} / {size['max']:,} |")
    lines += ["", "Per run (p95 ms): " + "; ".join(
        ", ".join(f"{n} {r[n]['p95']}" for n in r) for r in m["runs"]
    ), "",
        "raw _source: the tool's scored query and filters with the whole body in `_source` (what local snippet "
        "cutting needs). raw highlight: exactly the body the existing-index tool sends (one highlight fragment of "
        "400 characters, body left out of `_source`). tool: SearchTool.run on index_mode existing (the result the "
        "model reads; <= 2,500 characters of hits). Target: tool p95 <= raw _source p95."]  # fmt: skip
    return "\n".join(lines)


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    url = args.url or os.environ.get("SCOPEGATE_OPENSEARCH_URL")
    if not url:
        raise SystemExit("give --url or SCOPEGATE_OPENSEARCH_URL")
    profile = SourceProfile.load()
    _short, long_docs = variants(profile, args.tickets)
    # Queries only of the tenants the first tickets hold: the workload's tenants are skewed.
    plan = make_queries(profile, args.queries)
    data: dict[str, Any] = {
        "when": now(),
        "machine": machine(),
        "load_average_start": load_average(),
        "tickets": len(long_docs),
        "queries": len(plan),
        "runs": args.runs,
        "url_kind": "a shared local node" if not args.url else "the given node",
    }
    async with httpx.AsyncClient(base_url=url, timeout=30) as http:
        data["engine_version"] = (await http.get("/")).json()["version"]["number"]
    index, alias = await create_index(url, long_docs)
    print(f"indexed {len(long_docs)} tickets into {index}", file=sys.stderr)
    try:
        data["measured"] = await measure(url, alias, plan, args.runs)
    finally:
        async with httpx.AsyncClient(base_url=url, timeout=60) as http:
            await http.delete(f"/{index}")
    data["load_average_end"] = load_average()
    return data


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", help="OpenSearch URL (default: SCOPEGATE_OPENSEARCH_URL)")
    parser.add_argument("--tickets", type=int, default=1500)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--runs", type=int, default=2)
    data = asyncio.run(main_async(parser.parse_args()))
    write_results("existing_snippets", data, markdown(data))
    print(markdown(data))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
