"""Engine snippets on an existing index: the raw ``_source`` search against the tool call, 30 KB bodies.

Run (about 15 min against a running node; the indexes are created by plain REST calls and deleted after):

    SCOPEGATE_OPENSEARCH_URL=http://127.0.0.1:9200 nice -n 0 .venv/bin/python bench/bench_existing_snippets.py
    .venv/bin/python bench/bench_existing_snippets.py --url http://127.0.0.1:9200 --tickets 1500 --queries 300

The tickets are bench_shaping's 30 KB variant (``scopegate_lab.workload``: same generator, bodies
extended to 30,000 characters with more text of the same product), indexed with a standard mapping
(``subject``/``body`` text, the rest keyword) behind a read alias, as a team would, in three copies
that differ only in how ``body`` keeps match offsets (see ``MAPPINGS``): none (the default a team has),
``index_options: offsets`` (the unified highlighter reads them from the postings) and ``term_vector:
with_positions_offsets`` (scopegate then sends the fast vector highlighter). Per workload query, every
call (three per index, and on the first one the capped highlight below) in an order rotated from query
to query and run to run:

* ``raw _source``: the search a tool without engine snippets sends: the same scored query and filters,
  the whole ``body`` in ``_source`` (what it needs to cut 400 characters locally);
* ``raw highlight``: exactly the body the existing-index tool sends to that index (one highlight
  fragment, the body left out of ``_source``), through the same client;
* ``tool``: ``SearchTool.run`` on an ``index_mode: existing`` backend (validation, engine call,
  highlight parsing, shaping).
* ``raw highlight, first 8,000 chars analysed`` (index without offsets only): what OpenSearch's
  ``max_analyzer_offset`` would save, and how many hits' fragments then still hold a match (it is not
  what the tool sends: a hit whose match lies further gets the body's head).

Reports p50/p95 latency (ms, wall clock, over all runs, and the median/min/max of the runs' p95),
the engine's own ``took`` for the raw calls (so client and transfer time show), and the response size
per page: the engine's JSON (as re-serialised) for the raw calls, the result the model reads for the
tool. Issue 35's target: the tool call's p95 at most the raw ``_source`` search's p95. Writes
bench/results/existing_snippets.json and .md. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import statistics
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import machine, write_results
from _measure import load_average, now, percentiles, spread
from _workload_runs import prepared
from bench_shaping import variants

from scopegate.backends import dsl
from scopegate.backends.opensearch import OpenSearchBackend
from scopegate.search.tools import SearchTool
from scopegate_lab.workload import SourceProfile, make_queries, workload_spec

MAPPING: dict[str, Any] = {  # the team's: no offsets kept for the body
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


def with_body(**options: str) -> dict[str, Any]:
    props = {**MAPPING["properties"], "body": {**MAPPING["properties"]["body"], **options}}
    return {"properties": props}


# How the body keeps match offsets -> its mapping (everything else equal).
MAPPINGS: dict[str, dict[str, Any]] = {
    "no offsets": MAPPING,
    "postings offsets": with_body(index_options="offsets"),
    "term vectors": with_body(term_vector="with_positions_offsets"),
}


async def create_index(url: str, docs: list[dict[str, Any]], mapping: dict[str, Any] = MAPPING) -> tuple[str, str]:
    """A team-style index with a read alias, by plain REST; returns (index, alias)."""
    name = f"bench-existing-{uuid.uuid4().hex[:6]}"
    alias = f"{name}-read"
    async with httpx.AsyncClient(base_url=url, timeout=300) as http:
        settings = {"index": {"number_of_shards": 1, "number_of_replicas": 0, "refresh_interval": "-1"}}
        (await http.put(f"/{name}", json={"settings": settings, "mappings": mapping})).raise_for_status()
        for start in range(0, len(docs), 300):
            lines = []
            for doc in docs[start : start + 300]:
                lines.append(json.dumps({"index": {"_index": name, "_id": f"{doc['tenant_id']}:{doc['ticket_id']}"}}))
                lines.append(json.dumps({k: v for k, v in doc.items() if k in mapping["properties"]}))
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


Call = Callable[[int], Awaitable[tuple[int, float | None]]]


async def side(
    url: str, alias: str, plan: list[Any], matched: list[int]
) -> tuple[OpenSearchBackend, dict[str, Call], str]:
    """The three calls on one index (each returns bytes and the engine's ``took``); the highlighter sent."""
    spec = dataclasses.replace(workload_spec(), index=alias, index_mode="existing")
    backend = OpenSearchBackend(spec, url)
    tool = SearchTool(spec, backend)
    fm = await backend.field_map()
    assert fm is not None
    client = backend.search_client
    params = {"request_timeout": spec.client_timeout_s}
    queries = prepared(tool, plan)
    bodies = [dsl.search_body(spec, q, fm, engine="opensearch") for _, _, q in queries]

    async def raw_source(i: int) -> tuple[int, float | None]:
        response = await client.search(index=alias, body=source_body(bodies[i]), params=params)
        return len(json.dumps(response)), response["took"]

    async def raw_highlight(i: int) -> tuple[int, float | None]:
        response = await client.search(index=alias, body=bodies[i], params=params)
        return len(json.dumps(response)), response["took"]

    async def tool_call(i: int) -> tuple[int, float | None]:
        args, ctx, _ = queries[i]
        result = (await tool.run(args, ctx)).result
        assert result["status"] == "ok", result
        return len(json.dumps(result, ensure_ascii=False)), None

    calls: dict[str, Call] = {"raw _source": raw_source, "raw highlight": raw_highlight, "tool": tool_call}
    if fm.snippet_offsets == "analysis":
        calls[CAPPED] = capped_call(client, alias, bodies, params, matched)
    return backend, calls, bodies[0]["highlight"]["fields"]["body"]["type"]


# Not what the tool sends: the unified highlighter told to analyse only the body's first characters
# (OpenSearch's max_analyzer_offset), marked so the hits whose fragment holds a match can be counted.
CAPPED = "raw highlight, first 8,000 chars analysed"
MARK = "\u27e8"


def capped_call(client: Any, alias: str, bodies: list[dict[str, Any]], params: Any, matched: list[int]) -> Call:
    def capped(body: dict[str, Any]) -> dict[str, Any]:
        options = {**body["highlight"]["fields"]["body"], "max_analyzer_offset": 8000}
        options.update(pre_tags=[MARK], post_tags=["\u27e9"])
        return {**body, "highlight": {"fields": {"body": options}}}

    async def call(i: int) -> tuple[int, float | None]:
        response = await client.search(index=alias, body=capped(bodies[i]), params=params)
        fragments = [(h.get("highlight") or {}).get("body") or [""] for h in response["hits"]["hits"]]
        matched[0] += sum(1 for f in fragments if MARK in f[0])
        matched[1] += len(fragments)
        return len(json.dumps(response)), response["took"]

    return call


async def measure(url: str, aliases: dict[str, str], plan: list[Any], runs: int) -> dict[str, Any]:
    calls: dict[tuple[str, str], Call] = {}
    backends, highlighters = [], {}
    matched = [0, 0]  # capped highlight: hits whose fragment holds a match, hits
    for kind, alias in aliases.items():
        backend, made, highlighters[kind] = await side(url, alias, plan, matched)
        backends.append(backend)
        calls.update({(kind, name): call for name, call in made.items()})
    keys = list(calls)
    for i in range(min(100, len(plan))):  # warm-up: JIT, caches, connections
        for call in calls.values():
            await call(i)
    every: dict[tuple[str, str], list[float]] = {k: [] for k in keys}
    took: dict[tuple[str, str], list[float]] = {k: [] for k in keys}
    sizes: dict[tuple[str, str], list[int]] = {k: [] for k in keys}
    per_run: list[dict[tuple[str, str], dict[str, float]]] = []
    loads = []
    for run in range(runs):
        times: dict[tuple[str, str], list[float]] = {k: [] for k in keys}
        for i in range(len(plan)):
            shift = (i * 4 + run) % len(keys)  # rotate who goes first, and which index follows which
            for key in keys[shift:] + keys[:shift]:
                t0 = time.perf_counter()
                size, engine_ms = await calls[key](i)
                times[key].append((time.perf_counter() - t0) * 1000)
                if engine_ms is not None:
                    took[key].append(engine_ms)
                if run == 0:
                    sizes[key].append(size)
        per_run.append({k: percentiles(samples) for k, samples in times.items()})
        loads.append(load_average())
        for k, samples in times.items():
            every[k] += samples
        print(f"  run {run + 1}: " + ", ".join(f"{k[0]}/{k[1]} p95 {per_run[-1][k]['p95']}" for k in keys),
              file=sys.stderr)  # fmt: skip
    for backend in backends:
        await backend.close()
    out: dict[str, Any] = {"highlighter": highlighters, "load_average_after_run": loads, "indexes": {}}
    out["capped_hits_with_a_match"] = {"matched": matched[0], "hits": matched[1]}
    for kind in aliases:
        table = {}
        for name in [n for k, n in keys if k == kind]:
            k = (kind, name)
            table[name] = {
                "all": percentiles(every[k]),
                "p50_runs": spread([r[k]["p50"] for r in per_run]),
                "p95_runs": spread([r[k]["p95"] for r in per_run]),
                "took": percentiles(took[k]) if took[k] else None,
                "bytes_per_page": {"mean": round(statistics.fmean(sizes[k])), "max": max(sizes[k])},
            }
        source_p95, tool_p95 = table["raw _source"]["all"]["p95"], table["tool"]["all"]["p95"]
        out["indexes"][kind] = {
            "calls": table,
            "target_met": tool_p95 <= source_p95,
            "tool_p95_over_source_p95": round(tool_p95 / source_p95, 3),
        }
    return out


def ratio(side_: dict[str, Any], *path: str) -> float:
    tool, source = side_["calls"]["tool"], side_["calls"]["raw _source"]
    for key in path:
        tool, source = tool[key], source[key]
    return round(float(tool) / float(source), 3)


def markdown(data: dict[str, Any]) -> str:
    m = data["measured"]
    lines = [
        "# Engine snippets on an existing index (issue 35)",
        "",
        f"{data['when']}, OpenSearch {data['engine_version']} at {data['url_kind']}, {data['tickets']} tickets of "
        f"30 KB (bench_shaping's long variant) in plain-REST indexes behind read aliases, {data['queries']} "
        f"workload queries x {data['runs']} runs, the calls of each query in rotating order, one process, "
        f"`nice -n 0`. Machine: {data['machine']['cpus']} CPUs ({data['machine']['cpu']}), shared with other "
        f"agents; load average {data['load_average_start']} -> {data['load_average_end']} "
        f"(after each run: {'; '.join(str(x) for x in m['load_average_after_run'])}). Store size (MB, one "
        f"segment): {', '.join(f'{k} {v}' for k, v in data['store_mb'].items())}.",
        "",
        "| body mapping (highlighter sent) | call | p50 ms | p95 ms | p95 over runs, median (min-max) | engine "
        "took p50 / p95 ms | bytes per page (mean / max) |",
        "|---|---|---|---|---|---|---|",
    ]
    for kind, side_ in m["indexes"].items():
        for name, c in side_["calls"].items():
            took = f"{c['took']['p50']:g} / {c['took']['p95']:g}" if c["took"] else "-"
            r = c["p95_runs"]
            lines.append(
                f"| {kind} ({m['highlighter'][kind]}) | {name} | {c['all']['p50']:.1f} | {c['all']['p95']:.1f} | "
                f"{r['median']:.1f} ({r['min']:.1f}-{r['max']:.1f}) | {took} | "
                f"{c['bytes_per_page']['mean']:,} / {c['bytes_per_page']['max']:,} |"
            )
    lines += ["", "Target (tool p95 <= raw _source p95 on the same index): " + "; ".join(
        f"{kind}: {'met' if s['target_met'] else 'not met'} (tool / raw _source: p95 "
        f"{s['tool_p95_over_source_p95']}, p50 {ratio(s, 'all', 'p50')}, median run's p95 "
        f"{ratio(s, 'p95_runs', 'median')})" for kind, s in m["indexes"].items()
    ), "",
        "raw _source: the tool's scored query and filters with the whole body in `_source` (what local snippet "
        "cutting needs). raw highlight: exactly the body the existing-index tool sends (one highlight fragment of "
        "400 characters, body left out of `_source`). tool: SearchTool.run on index_mode existing (the result the "
        "model reads; <= 2,500 characters of hits). took: the engine's own time, the rest of a raw call is the "
        "client, the transfer and the JSON parsing.", "",
        f"{CAPPED}: not what the tool sends; the same highlight with OpenSearch's `max_analyzer_offset: 8000`. "
        f"Of its hits (all runs, warm-up included), {m['capped_hits_with_a_match']['matched']:,} of "
        f"{m['capped_hits_with_a_match']['hits']:,} got a fragment holding a match; the others got the body's "
        "head, as a hit matched only by another field does. The whole-body highlighters give every hit matched "
        "in the body a fragment around its match."]  # fmt: skip
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
    made: dict[str, tuple[str, str]] = {}
    try:
        for kind, mapping in MAPPINGS.items():
            made[kind] = await create_index(url, long_docs, mapping)
            print(f"indexed {len(long_docs)} tickets into {made[kind][0]} ({kind})", file=sys.stderr)
        async with httpx.AsyncClient(base_url=url, timeout=60) as http:
            for kind, (index, _) in made.items():
                sizes = await http.get(f"/_cat/indices/{index}", params={"h": "store.size", "bytes": "mb"})
                data.setdefault("store_mb", {})[kind] = int(sizes.text.strip())
        data["measured"] = await measure(url, {kind: alias for kind, (_, alias) in made.items()}, plan, args.runs)
    finally:
        async with httpx.AsyncClient(base_url=url, timeout=60) as http:
            for index, _ in made.values():
                await http.delete(f"/{index}")
    data["load_average_end"] = load_average()
    return data


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", help="OpenSearch URL (default: SCOPEGATE_OPENSEARCH_URL)")
    parser.add_argument("--tickets", type=int, default=1500)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--runs", type=int, default=3)
    data = asyncio.run(main_async(parser.parse_args()))
    write_results("existing_snippets", data, markdown(data))
    print(markdown(data))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
