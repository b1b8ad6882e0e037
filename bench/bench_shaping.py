"""Does the tool's cost grow with the body? The same tickets with 300-character and 30 KB bodies.

Run (about 6 min embedded; add --opensearch for the OpenSearch node too, about 12 min more):

    .venv/bin/python bench/bench_shaping.py                   # embedded, 20,000 tickets per variant
    .venv/bin/python bench/bench_shaping.py --opensearch      # also starts a node (heap 1g) and measures there
    .venv/bin/python bench/bench_shaping.py --quick           # 5,000 tickets, 400 queries

Two indexes hold the same generated tickets (``scopegate_lab.workload``: same
ids, tenants, subjects and filters); only the body differs: cut to 300 characters,
or extended to 30,000 with more messages of the same product. The workload's
held-out queries run against both, as raw/tool pairs in alternating order (see
bench/_workload_runs.py). In each run the two indexes take turns query by query
(interleaved_pairs: both measured in the same process state and the same minutes of
the host), and then, as the earlier layout did, each in a block of its own; which
index and which layout go first alternates by run. The target (issue 13): tool
overhead p95 <= 1 ms at 30 KB, and at most 1.5x the overhead at 300 characters in
the same run, read from the interleaved layout (in a block of short bodies, the
process's recent calls were all short: its caches hold less of anything else, which
is the block's history, not the call's cost; the blocked figures are reported beside
it). The embedded raw call runs on an application thread of its own and is timed
there, as an asyncio application runs a blocking engine call (--raw-on-loop: on the
event loop's thread, where its bodies pass through the loop core's caches just
before half the tool calls). The process keeps freed heap memory as ``scopegate
serve`` does (``server.retain_freed_memory_mb``; --default-allocator: glibc's
defaults, which return and fault in the long bodies' pages on every call). Also: the
shaper alone on the same hits (CPU time). Before timing, each tool runs a warm-up
pass over *other* queries from the same generator (seed 14): per-process caches such
as the shaper's compiled needle regexes are as warm as a server's history makes
them, but no timed query ran before.

With --opensearch, the same is measured against a node, plus the raw cost of
four ways to get snippet text from the engine at 30 KB: the whole body in
``_source`` (what the backend does), a highlight fragment, a bounded
``script_fields`` substring, and the first matching chunk: a prototype layout
(bench only) that also stores each long body as overlapping nested chunks and
asks for the chunk with the lowest offset that holds a query term (an inner hit
sorted by offset, scored 0, so pages and scores are unchanged). For that one the
benchmark also reports ingest time and store size against the whole-body index,
whether the pages are identical, and how often the chunk's first match is the
body's first match by the snippet rule (the parity the layout would need).

Writes bench/results/shaping.json and .md. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import re
import shutil
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import machine, write_results
from _measure import fmt, load_average, now, percentiles, spread
from _workload_runs import Side, Timed, interleaved_pairs, prepared

from scopegate.backends.embedded import EmbeddedBackend
from scopegate.config.model import ServerConfig
from scopegate.search.analysis import WORD_CHAR, unique_terms
from scopegate.search.shaper import shape_hits
from scopegate.search.tools import SearchTool
from scopegate.server.allocator import retain_freed_memory
from scopegate_lab.workload import SourceProfile, TicketFactory, make_queries, workload_spec

REPO = Path(__file__).resolve().parents[1]
WORK = REPO / ".cache" / "bench-shaping"
SHORT, LONG = 300, 30_000
# The warm-up runs queries of another seed: caches warm as a server's history leaves them, no timed query seen.
WARM_SEED = 14


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    cut = text[:limit]
    space = cut.rfind(" ")
    return cut[:space] if space > limit // 2 else cut


def variants(profile: SourceProfile, count: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(short, long) versions of the first ``count`` workload tickets."""
    factory = TicketFactory(profile)
    tickets = list(factory.tickets(0, count))
    extra = factory.tickets(10_000_000, 20_000_000)  # tickets no index holds: more text of each product
    pools: dict[str, list[str]] = {}
    short, long_ = [], []
    for t in tickets:
        short.append({**t, "body": _cut(t["body"], SHORT)})
        body = t["body"]
        while len(body) < LONG:
            pool = pools.setdefault(t["product"], [])
            while not pool:
                more = next(extra)
                pools.setdefault(more["product"], []).append(more["body"])
            body += "\n\n" + pool.pop()
        long_.append({**t, "body": _cut(body, LONG)})
    return short, long_


def build(path: Path, docs: list[dict[str, Any]]) -> EmbeddedBackend:
    shutil.rmtree(path, ignore_errors=True)
    backend = EmbeddedBackend(workload_spec(), path)
    backend.ingest_sync(docs, batch_size=10_000)
    return backend


def _ratios(result: dict[str, Any]) -> None:
    for q in ("p95", "p50"):
        result[f"ratio_{q}_in_call"] = round(
            result["long"]["overhead_in_call_ms"][q] / result["short"]["overhead_in_call_ms"][q], 3
        )


async def measure_runs(sides: dict[str, Side], runs: int, engine: str) -> list[dict[str, Any]]:
    """Per run, both layouts: the two indexes interleaved query by query (``interleaved_pairs``: the
    ratio the target is read from, each call measured in the same process state and minutes as its
    counterpart) and each index in a block of its own (the earlier layout: a block of short bodies runs
    in a process whose recent calls were all short). Which index, and which layout, goes first
    alternates by run."""
    out = []
    for run in range(runs):
        order = ("short", "long") if run % 2 == 0 else ("long", "short")
        result: dict[str, Any] = {"order": order}
        blocked: dict[str, Any] = {}
        for layout in ("interleaved", "blocked") if run % 2 == 0 else ("blocked", "interleaved"):
            if layout == "interleaved":
                result.update(await interleaved_pairs({name: sides[name] for name in order}))
            else:
                for name in order:  # one side at a time: a block per index
                    blocked.update(await interleaved_pairs({name: sides[name]}))
        _ratios(result)
        _ratios(blocked)
        result["blocked"] = blocked
        out.append(result)
        print(
            f"  {engine} run {run + 1}: overhead p95 short {result['short']['overhead_in_call_ms']['p95']} ms, "
            f"long {result['long']['overhead_in_call_ms']['p95']} ms, ratio {result['ratio_p95_in_call']} "
            f"(blocked: {blocked['ratio_p95_in_call']})",
            file=sys.stderr,
            flush=True,
        )
    return out


async def measure_embedded(
    short: EmbeddedBackend,
    long_: EmbeddedBackend,
    plan: list[Any],
    warm_plan: list[Any],
    runs: int,
    raw_on_loop: bool = False,
) -> dict:
    sides: dict[str, Side] = {}
    # The raw call runs where an asyncio application runs a blocking engine call: on a thread of its
    # own, timed there. Run on the event loop's thread instead (--raw-on-loop), its 30 KB bodies pass
    # through the loop core's caches just before half the tool calls, which no deployment does.
    raw_thread = None if raw_on_loop else ThreadPoolExecutor(max_workers=1, thread_name_prefix="bench-raw")
    for name, backend in (("short", short), ("long", long_)):
        tool = SearchTool(backend.spec, backend)
        timed, raw_timed = Timed(), Timed()
        engine = EmbeddedBackend.search_sync.__get__(backend)
        backend.search_sync = timed.wrap_sync(engine)  # type: ignore[method-assign]
        engine_timed = raw_timed.wrap_sync(engine)

        async def raw(query: Any, engine: Any = engine_timed) -> Any:
            if raw_thread is None:
                return engine(query)
            return await asyncio.get_running_loop().run_in_executor(raw_thread, engine, query)

        prepared_plan = prepared(tool, plan)
        for args, ctx, _ in prepared(tool, warm_plan):  # warm-up on other queries (module docstring)
            await tool.run(args, ctx)
        sides[name] = Side(tool, raw, timed, prepared_plan, raw_timed)
    out = await measure_runs(sides, runs, "embedded")
    if raw_thread is not None:
        raw_thread.shutdown()
    return {"runs": out, "raw_call": "event loop thread" if raw_on_loop else "application thread"}


def shaper_only(backend: EmbeddedBackend, plan: list[Any], repeats: int = 3) -> dict[str, float]:
    """CPU time of shape_hits on each query's page of hits (the engine is not timed)."""
    spec = backend.spec
    samples = []
    tool = SearchTool(spec, backend)
    for q in plan:
        request = prepared(tool, [q])[0][2]
        raw = backend.search_sync(request)
        terms = raw.terms or unique_terms(q.query)
        t0 = time.process_time()
        for _ in range(repeats):
            shape_hits(spec, raw.hits, terms, backend.analyze)
        samples.append((time.process_time() - t0) / repeats * 1000)
    return percentiles(samples)


def summary(runs: list[dict[str, Any]], side: str, metric: str, q: str) -> dict[str, float]:
    return spread([r[side][metric][q] for r in runs])


async def settled_merges(client: Any, indexes: list[str], timeout_s: float = 600.0) -> None:
    """Wait until no segment merge runs on ``indexes``: a bulk load leaves merges running for a while,
    and timing during them measures the node's background work (on these 2 cores) instead of the calls."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        stats = await client.indices.stats(index=",".join(indexes), metric="merge", params={"request_timeout": 60})
        if int(stats["_all"]["total"]["merges"]["current"]) == 0:
            return
        await asyncio.sleep(2)
    print("  merges still running after the wait; measuring anyway", file=sys.stderr, flush=True)


# -- OpenSearch --------------------------------------------------------------------------------------
async def measure_opensearch(
    url: str,
    short: list[dict[str, Any]],
    long_: list[dict[str, Any]],
    plan: list[Any],
    warm_plan: list[Any],
    runs: int,
) -> dict:
    from scopegate.backends.opensearch import OpenSearchBackend

    backends = {}
    for name, docs in (("short", short), ("long", long_)):
        spec = dataclasses.replace(workload_spec(), index=f"bench-shaping-{name}")
        backend = OpenSearchBackend(spec, url, refresh_after_write=False)
        await backend.drop()
        await backend.ingest(docs, batch_size=2_000)
        await backend.refresh()
        backends[name] = backend
    await settled_merges(backends["short"].client, [b.names.read_alias for b in backends.values()])
    sides: dict[str, Side] = {}
    for name, backend in backends.items():
        tool = SearchTool(backend.spec, backend)
        timed = Timed()
        # Time the client the backend searches with (the coordinating node's, when configured).
        client_search = backend.search_client.search
        backend.search_client.search = timed.wrap_async(client_search)  # type: ignore[method-assign]
        alias = backend.names.read_alias
        from scopegate.backends import dsl

        async def raw(
            query: Any, backend: Any = backend, client_search: Any = client_search, alias: str = alias
        ) -> Any:
            body = dsl.search_body(backend.spec, query)
            return await client_search(
                index=alias, body=body, params={"request_timeout": backend.spec.client_timeout_s}
            )

        prepared_plan = prepared(tool, plan)
        for args, ctx, _ in prepared(tool, warm_plan[:300]):  # warm-up: JIT, caches, connections
            await tool.run(args, ctx)
        sides[name] = Side(tool, raw, timed, prepared_plan)
    out = await measure_runs(sides, runs, "opensearch")
    chunks = await build_chunk_index(backends["long"], long_)
    fragments = await fragment_costs(backends["long"], [p[2] for p in sides["long"].plan], runs, chunks)
    await backends["long"].client.indices.delete(index=f"{CHUNK_INDEX},{WHOLE_INDEX}", params={"request_timeout": 60})
    for backend in backends.values():
        await backend.drop()
        await backend.close()
    return {"runs": out, "fragments": fragments}


# The chunk prototype: raw chunks of CHUNK_CHARS that run on by CHUNK_OVERLAP (so a snippet window around a
# match in a chunk's first CHUNK_OVERLAP characters is also whole in the chunk before), cut between words.
CHUNK_CHARS, CHUNK_OVERLAP, CHUNK_HEAD = 2_048, 1_024, 2_048
CHUNK_INDEX = "bench-shaping-chunks"
WHOLE_INDEX = "bench-shaping-chunks-whole"  # the same tickets whole, by the same bulk path: the parity reference


_WORD_CHAR = re.compile(WORD_CHAR)  # the engines' word characters, marks and joiners included


def _word_end(body: str, at: int) -> int:
    while at < len(body) and _WORD_CHAR.match(body, at):
        at += 1
    return at


def body_chunks(body: str) -> list[dict[str, Any]]:
    """Overlapping chunks of ``body`` with their offsets; every chunk starts and ends between words."""
    out: list[dict[str, Any]] = []
    start = 0
    while start < len(body):
        following = _word_end(body, start + CHUNK_CHARS)
        if following >= len(body):
            out.append({"o": start, "t": body[start:]})
            break
        out.append({"o": start, "t": body[start : _word_end(body, following + CHUNK_OVERLAP)]})
        start = following
    return out


async def _bulk_index(backend: Any, docs: list[dict[str, Any]], index: str, *, chunked: bool) -> tuple[float, float]:
    """``docs`` into a new ``index`` by one bulk path (seconds, store MB); chunked: long bodies as ``head`` +
    nested ``chunks`` instead of ``body``."""
    from opensearchpy.helpers import async_bulk

    from scopegate.backends import dsl

    spec, client = backend.spec, backend.client
    mappings = dsl.mappings(spec)
    if chunked:
        mappings["properties"]["head"] = {"type": "text", "index": False}
        mappings["properties"]["chunks"] = {
            "type": "nested",
            "properties": {
                "o": {"type": "integer"},
                "t": {"type": "text", "analyzer": dsl.ANALYZER, "index_options": "freqs"},
            },
        }
    await client.indices.delete(index=index, ignore_unavailable=True)
    await client.indices.create(
        index=index, body={"settings": dsl.index_settings(refresh_interval="-1"), "mappings": mappings}
    )

    def actions() -> Any:
        for doc in docs:
            source = dsl.document_source(spec, doc)
            body = source.get(spec.snippet_field, "")
            if chunked and len(body) > CHUNK_HEAD:
                source["head"] = body[:CHUNK_HEAD]
                source["chunks"] = body_chunks(source.pop(spec.snippet_field))
            yield {"_index": index, "_id": source[spec.id_field], "_source": source}

    t0 = time.perf_counter()
    await async_bulk(client, actions(), chunk_size=500, request_timeout=300)
    await client.indices.refresh(index=index, params={"request_timeout": 300})
    seconds = time.perf_counter() - t0
    stats = await client.indices.stats(index=index, metric="store")
    size = sum(i["total"]["store"]["size_in_bytes"] for i in stats["indices"].values())
    return seconds, size / 1e6


async def build_chunk_index(backend: Any, docs: list[dict[str, Any]]) -> dict[str, Any]:
    """The long tickets chunked, and (for the ingest and store comparison) whole, by the same bulk path."""
    whole_s, whole_mb = await _bulk_index(backend, docs, WHOLE_INDEX, chunked=False)
    chunk_s, chunk_mb = await _bulk_index(backend, docs, CHUNK_INDEX, chunked=True)
    return {
        "index": CHUNK_INDEX,
        "ingest_s": round(chunk_s, 1),
        "store_mb": round(chunk_mb, 1),
        "whole_ingest_s": round(whole_s, 1),
        "whole_store_mb": round(whole_mb, 1),
    }


def _first_chunk_body(spec: Any, query: Any) -> dict[str, Any]:
    from scopegate.backends import dsl

    body = dsl.search_body(spec, query)
    body["_source"] = [f for f in body["_source"] if f != spec.snippet_field] + ["head"]
    body["query"]["bool"]["should"] = [
        {
            "nested": {
                "path": "chunks",
                "score_mode": "none",  # adds 0: the page and its scores are the whole-body index's
                "query": {"match": {"chunks.t": {"query": query.text, "operator": "or"}}},
                "inner_hits": {"size": 1, "sort": [{"chunks.o": "asc"}], "_source": ["chunks.o", "chunks.t"]},
            }
        }
    ]
    return body


async def chunk_parity(backend: Any, queries: list[Any]) -> dict[str, int]:
    """Same pages as the same tickets whole (same bulk path, same settings)? Is the first chunk's first match
    the body's first match?"""
    from scopegate.backends import dsl
    from scopegate.search.snippet import TermFinder

    spec, client = backend.spec, backend.search_client
    out: dict[str, Any] = {
        "pages_same": 0,
        "pages_differ": 0,
        "first_match_same": 0,
        "first_match_differs": 0,
        "no_match_same": 0,
        "examples": [],
    }
    for query in queries:
        whole = await client.search(index=WHOLE_INDEX, body=dsl.search_body(spec, query))
        chunked = await client.search(index=CHUNK_INDEX, body=_first_chunk_body(spec, query))
        whole_hits, chunk_hits = whole["hits"]["hits"], chunked["hits"]["hits"]
        same = [(h["_id"], h["_score"]) for h in whole_hits] == [(h["_id"], h["_score"]) for h in chunk_hits]
        out["pages_same" if same else "pages_differ"] += 1
        finder = TermFinder(unique_terms(query.text), backend.analyze)
        for w, c in zip(whole_hits, chunk_hits, strict=False):
            body = w["_source"].get(spec.snippet_field, "")
            if len(body) <= CHUNK_HEAD:
                continue
            at = finder.first_match(body)
            inner = c.get("inner_hits", {}).get("chunks", {}).get("hits", {}).get("hits", [])
            chunk = inner[0]["_source"] if inner else {"o": None, "t": ""}
            found = finder.first_match(chunk["t"])
            if not inner and at is None:
                out["no_match_same"] += 1
            elif at is not None and found is not None and chunk["o"] + found == at:
                out["first_match_same"] += 1
            else:
                out["first_match_differs"] += 1
                if len(out["examples"]) < 5:  # what the snippet rule found, and where the engine's chunk was
                    word = body[at : at + 24] if at is not None else None
                    out["examples"].append({"body_first": at, "word": word, "chunk_at": chunk["o"], "in_chunk": found})
    return out


async def fragment_costs(backend: Any, queries: list[Any], runs: int, chunks: dict[str, Any]) -> dict[str, Any]:
    """Raw client latency and response size at 30 KB: whole body vs highlight fragment vs script substring vs
    the first matching chunk."""
    from scopegate.backends import dsl

    spec = backend.spec
    alias = backend.names.read_alias
    client = backend.search_client

    def whole(query: Any) -> dict[str, Any]:
        return dsl.search_body(spec, query)

    def highlight(query: Any) -> dict[str, Any]:
        body = dsl.search_body(spec, query)
        body["_source"] = [f for f in body["_source"] if f != spec.snippet_field]
        body["highlight"] = {
            "fields": {spec.snippet_field: {"fragment_size": spec.snippet_chars, "number_of_fragments": 1,
                                            "no_match_size": spec.snippet_chars}},
        }  # fmt: skip
        return body

    def script(query: Any) -> dict[str, Any]:
        body = dsl.search_body(spec, query)
        body["_source"] = [f for f in body["_source"] if f != spec.snippet_field]
        source = (
            f"def b = params._source['{spec.snippet_field}']; "
            f"return b == null ? null : b.substring(0, (int) Math.min(b.length(), {spec.fetch_body_chars}L));"
        )
        body["script_fields"] = {"head": {"script": {"source": source}}}
        return body

    def first_chunk(query: Any) -> dict[str, Any]:
        return _first_chunk_body(spec, query)

    out: dict[str, Any] = {}
    ways = (
        ("whole_source", alias, whole),
        ("highlight_fragment", alias, highlight),
        ("script_substring", alias, script),
        ("first_chunk_inner_hit", chunks["index"], first_chunk),
    )
    for name, index, make in ways:
        p95s, p50s, sizes = [], [], []
        try:
            await client.search(index=index, body=make(queries[0]), params={"request_timeout": 10})
        except Exception as exc:  # e.g. a node built without the painless module: recorded, not fatal
            out[name] = {"unsupported": f"{type(exc).__name__}: {exc}"[:300]}
            continue
        for _ in range(runs):
            samples = []
            for query in queries:
                body = make(query)
                t0 = time.perf_counter()
                response = await client.search(index=index, body=body, params={"request_timeout": 10})
                samples.append((time.perf_counter() - t0) * 1000)
                sizes.append(len(json.dumps(response)))
            p = percentiles(samples)
            p50s.append(p["p50"])
            p95s.append(p["p95"])
        out[name] = {
            "p50_ms": spread(p50s),
            "p95_ms": spread(p95s),
            "response_chars_mean": round(statistics.fmean(sizes)),
        }
    out["first_chunk_inner_hit"].update(chunks, parity=await chunk_parity(backend, queries[:400]))
    return out


def _pair(runs: list[dict[str, Any]], side: str, metric: str, digits: int = 2) -> str:
    return f"{fmt(summary(runs, side, metric, 'p50'), digits)} / {fmt(summary(runs, side, metric, 'p95'), digits)}"


def markdown(data: dict[str, Any]) -> str:
    busy = max(data["load_average_start"]) > 1.5
    lines = [
        "# Shaping cost against body size (issue 13)",
        "",
        f"{data['when']}; {data['machine']['cpus']} cores; load average {data['load_average_start']} at start, "
        f"{data['load_average_end']} at end" + (" (shared machine: provisional)." if busy else "."),
        f"{data['tickets']:,} workload tickets per index, bodies cut to {SHORT} or extended to {LONG:,} characters; "
        f"{data['queries']} held-out queries, tenant filter always; {data['runs']} runs. In each run the two "
        "indexes are measured query by query in turn (interleaved: the table and the ratio) and each in a block "
        "of its own (the earlier layout: its row), alternating which goes first. Overhead in call = tool time "
        "minus the engine call inside it; paired = minus a separate raw call. Median over runs (lowest–highest "
        "run), ms.",
        f"Allocator: {data.get('allocator', 'defaults')}. Embedded raw call: on "
        f"{data['engines'].get('embedded', {}).get('raw_call', 'the event loop thread')}, timed inside it.",
        "",
        "| engine | body chars | raw p50 / p95 | tool p50 / p95 | overhead in call p50 / p95 | "
        "overhead paired p50 / p95 | shaper alone p50 / p95 (CPU) |",
        "|---|---|---|---|---|---|---|",
    ]
    for engine, result in data["engines"].items():
        runs = result["runs"]
        for side, chars in (("short", SHORT), ("long", LONG)):
            shaper = data.get("shaper_only", {}).get(side, {}) if engine == "embedded" else {}
            alone = f"{shaper['p50']:.3f} / {shaper['p95']:.3f}" if shaper else "–"
            lines.append(
                f"| {engine} | {chars:,} | {_pair(runs, side, 'raw_ms')} | {_pair(runs, side, 'tool_ms')} | "
                f"{_pair(runs, side, 'overhead_in_call_ms', 3)} | {_pair(runs, side, 'overhead_paired_ms', 3)} | "
                f"{alone} |"
            )
        ratio = spread([r["ratio_p95_in_call"] for r in runs])
        lines.append(f"| {engine} | overhead p95 ratio 30 KB / 300 (same run, interleaved) | {fmt(ratio, 2)} | | | | |")
        if all("blocked" in r for r in runs):
            blocked = [r["blocked"] for r in runs]
            short_side = _pair(blocked, "short", "overhead_in_call_ms", 3)
            long_side = _pair(blocked, "long", "overhead_in_call_ms", 3)
            lines.append(
                f"| {engine} | each index in a block of its own: overhead in call p50 / p95, 300 · 30,000; ratio "
                f"| {short_side} · {long_side} | {fmt(spread([b['ratio_p95_in_call'] for b in blocked]), 2)} | | | |"
            )
    if "fragments" in data["engines"].get("opensearch", {}):
        lines += [
            "",
            "OpenSearch, 30 KB bodies, raw client call for the same queries (ms, median of runs):",
            "",
            "| engine returns | p50 | p95 | response characters (mean) |",
            "|---|---|---|---|",
        ]
        for name, f in data["engines"]["opensearch"]["fragments"].items():
            if "unsupported" in f:
                lines.append(f"| {name} | not supported by this node: {f['unsupported'][:120]} | | |")
                continue
            lines.append(f"| {name} | {fmt(f['p50_ms'])} | {fmt(f['p95_ms'])} | {f['response_chars_mean']:,} |")
        chunk = data["engines"]["opensearch"]["fragments"].get("first_chunk_inner_hit", {})
        if "parity" in chunk:
            p = chunk["parity"]
            hits = p["first_match_same"] + p["first_match_differs"] + p["no_match_same"]
            lines += [
                "",
                f"First-chunk prototype ({CHUNK_CHARS:,}-character chunks running on by {CHUNK_OVERLAP:,}, bodies over "
                f"{CHUNK_HEAD:,} characters), against the whole bodies by the same bulk path: ingest "
                f"{chunk['ingest_s']} s against {chunk['whole_ingest_s']} s for {data['tickets']:,} tickets, "
                f"store {chunk['store_mb']} MB against {chunk['whole_store_mb']} MB. On "
                f"{p['pages_same'] + p['pages_differ']} queries: pages identical {p['pages_same']}, differ "
                f"{p['pages_differ']}. Of {hits} long hits, the chunk's first match is the body's first match "
                f"{p['first_match_same']} times, neither has one {p['no_match_same']}, they differ "
                f"{p['first_match_differs']}." + (f" Where they differ: {p['examples']}." if p.get("examples") else ""),
            ]
    return "\n".join(lines)


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    # As `scopegate serve` starts (server.retain_freed_memory_mb), unless --default-allocator.
    retain_mb = None if args.default_allocator else ServerConfig().retain_freed_memory_mb
    retained = retain_mb is not None and retain_freed_memory(retain_mb * 1024 * 1024)
    profile = SourceProfile.load()
    short_docs, long_docs = variants(profile, args.tickets)
    plan = make_queries(profile, args.queries)
    warm_plan = make_queries(profile, args.queries, seed=WARM_SEED)
    data: dict[str, Any] = {
        "when": now(),
        "machine": machine(),
        "load_average_start": load_average(),
        "tickets": args.tickets,
        "queries": len(plan),
        "runs": args.runs,
        "allocator": f"glibc keeps {retain_mb} MiB of freed heap (as scopegate serve)" if retained else "defaults",
        "engines": {},
    }
    WORK.mkdir(parents=True, exist_ok=True)
    short = build(WORK / "short", short_docs)
    long_ = build(WORK / "long", long_docs)
    print("embedded indexes built", file=sys.stderr, flush=True)
    data["engines"]["embedded"] = await measure_embedded(short, long_, plan, warm_plan, args.runs, args.raw_on_loop)
    data["shaper_only"] = {"short": shaper_only(short, plan[:300]), "long": shaper_only(long_, plan[:300])}
    await short.close()
    await long_.close()
    shutil.rmtree(WORK, ignore_errors=True)
    data["load_average_end"] = load_average()
    write_results("shaping", data, markdown(data))  # kept if the OpenSearch part fails
    if args.opensearch:
        from scopegate.engines.opensearch_node import NodeConfig, OpenSearchNode

        node = None
        url = args.url
        if not url:
            node = OpenSearchNode(NodeConfig(state_dir=REPO / ".cache" / "opensearch-node-shaping", heap=args.heap))
            url = node.start(clean=True)
        try:
            data["engines"]["opensearch"] = await measure_opensearch(
                url, short_docs, long_docs, plan, warm_plan, args.runs
            )
        finally:
            if node is not None:
                node.stop()
        data["opensearch_heap"] = args.heap if node is not None else "as started"
    data["load_average_end"] = load_average()
    return data


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tickets", type=int, default=20_000)
    parser.add_argument("--queries", type=int, default=1_200)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--opensearch", action="store_true", help="also measure on an OpenSearch node")
    parser.add_argument("--url", help="an existing OpenSearch node (default: start one)")
    parser.add_argument("--heap", default="1g")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument(
        "--raw-on-loop", action="store_true", help="embedded: run the raw call on the event loop's thread"
    )
    parser.add_argument("--default-allocator", action="store_true", help="leave glibc's trim thresholds as they are")
    args = parser.parse_args()
    if args.quick:
        args.tickets, args.queries = 5_000, 400
    data = asyncio.run(main_async(args))
    write_results("shaping", data, markdown(data))
    print(markdown(data))
    return 0


if __name__ == "__main__":
    sys.exit(main())
