"""Why tantivy: the embedded default measured against SQLite FTS5 (stdlib) on the same corpus.

Same generated tickets, same queries, tenant filter always, product filter half the time,
top 5 with an exact total. FTS5 filters are FTS tokens (the fast way, per the bake-off in
../shared/reference/STACK.md); ranking is bm25() with subject weighted 3.
Run: .venv/bin/python bench/bench_engine_choice.py [--size 100000]
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import generated_tickets, machine, percentiles, query_plan, write_results

from scopegate.backends.embedded import EmbeddedBackend
from scopegate.demo.corpus import ticket_spec
from scopegate.scope import Scope
from scopegate.search.analysis import analyze
from scopegate.search.model import SearchQuery


def bench_tantivy(size: int, plan: list[tuple[str, str, str | None]], root: Path) -> dict[str, Any]:
    backend = EmbeddedBackend(ticket_spec(), root / "tantivy")
    t0 = time.perf_counter()
    backend.ingest_sync(generated_tickets(size), batch_size=50_000)
    ingest = size / (time.perf_counter() - t0)
    samples = []
    for text, tenant, product in plan:
        q = SearchQuery(text, Scope(tenant), (("product", product),) if product else (), 0, 5, 10_000, 1.0, 2.5)
        t = time.perf_counter()
        backend.search_sync(q)
        samples.append((time.perf_counter() - t) * 1000)
    return {"ingest_docs_per_s": round(ingest), "query_ms": percentiles(samples)}


def bench_sqlite(size: int, plan: list[tuple[str, str, str | None]], root: Path) -> dict[str, Any]:
    db = sqlite3.connect(root / "fts.db")
    db.execute(
        "CREATE VIRTUAL TABLE t USING fts5(ticket_id UNINDEXED, scope, subject, body, tokenize='porter unicode61')"
    )
    t0 = time.perf_counter()
    batch = []
    for doc in generated_tickets(size):
        scope = f"tenant_{doc['tenant_id']} product_{doc['product']}"
        batch.append((doc["ticket_id"], scope, doc["subject"], doc["body"]))
        if len(batch) >= 50_000:
            db.executemany("INSERT INTO t VALUES (?,?,?,?)", batch)
            db.commit()
            batch.clear()
    db.executemany("INSERT INTO t VALUES (?,?,?,?)", batch)
    db.commit()
    ingest = size / (time.perf_counter() - t0)
    samples = []
    for text, tenant, product in plan:
        words = " OR ".join(f'"{w}"' for w in dict.fromkeys(analyze(text)))
        scope = f'scope:"tenant_{tenant}"' + (f' AND scope:"product_{product}"' if product else "")
        match = f"({scope}) AND ({{subject body}}: ({words}))"
        t = time.perf_counter()
        db.execute("SELECT count(*) FROM t WHERE t MATCH ?", (match,)).fetchone()
        db.execute(
            "SELECT ticket_id, subject, body FROM t WHERE t MATCH ? ORDER BY bm25(t, 0, 0, 3.0, 1.0) LIMIT 5",
            (match,),
        ).fetchall()
        samples.append((time.perf_counter() - t) * 1000)
    db.close()
    return {"ingest_docs_per_s": round(ingest), "query_ms": percentiles(samples)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=500)
    args = parser.parse_args()
    plan = query_plan(args.queries)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        data = {
            "machine": machine(),
            "documents": args.size,
            "tantivy": bench_tantivy(args.size, plan, root),
            "sqlite_fts5": bench_sqlite(args.size, plan, root),
        }
    md = [
        "# Embedded engine choice: tantivy vs SQLite FTS5",
        "",
        f"{args.size:,} generated tickets, 40 tenants, {args.queries} queries, tenant filter always, "
        "product filter half the time, top 5 + exact total.",
        "",
        "| engine | ingest docs/s | query p50 ms | query p95 ms | query p99 ms |",
        "|---|---|---|---|---|",
    ]
    for name in ("tantivy", "sqlite_fts5"):
        e = data[name]
        q = e["query_ms"]
        md.append(f"| {name} | {e['ingest_docs_per_s']:,} | {q['p50']} | {q['p95']} | {q['p99']} |")
    write_results("engine_choice", data, "\n".join(md))
    print("\n".join(md))


if __name__ == "__main__":
    main()
