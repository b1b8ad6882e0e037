"""A real call log: searches and fetches over an embedded index through a real Guard (cap, cache, file log)."""

from __future__ import annotations

from pathlib import Path

from scopegate import EmbeddedBackend, FetchTool, Guard, SearchTool
from scopegate.context import CallContext
from scopegate.demo.corpus import generate_tickets, ticket_spec
from scopegate.guard import CallCap, CallLog, CapPolicy

HOSTILE_QUERY = '<script>alert("x")</script> zzqx'
ZERO_QUERIES = ("kubernetes helm chart", "kubernetes helm chart", "quantum teleport", HOSTILE_QUERY)


async def write_call_log(workdir: Path) -> Path:
    """Index a small demo corpus, run a few agent-like sessions through a guard, return the log file."""
    spec = ticket_spec()
    backend = EmbeddedBackend(spec, workdir / "index")
    report = await backend.ingest(list(generate_tickets(per_tenant=40, tenants=("acme", "globex"))))
    assert report.indexed > 0
    path = workdir / "calls.jsonl"
    guard = Guard(cap=CallCap(CapPolicy(family_limits={"search": 4})), call_log=CallLog.to_file(path))
    search, fetch = guard.wrap(SearchTool(spec, backend)), guard.wrap(FetchTool(spec, backend))
    try:
        for turn in range(6):
            ctx = CallContext(state={"tenant_id": ("acme", "globex")[turn % 2]}, invocation_id=f"inv-{turn}")
            first = await search.run({"query": "refund failed"}, ctx)
            await search.run({"query": ZERO_QUERIES[turn % len(ZERO_QUERIES)]}, ctx)
            hits = first.result.get("results") or [{}]
            await fetch.run({"id": str(hits[0].get("ticket_id", "missing"))}, ctx)
            if turn % 3 == 0:
                # a status outside the filter's allowed list: BAD_ARGUMENTS
                await search.run({"query": "payout", "filters": {"status": "reopened"}}, ctx)
                await search.run({"query": "chargeback"}, ctx)  # past the cap of 4: CALL_LIMIT
            guard.invocation_answered(ctx.invocation_id)
        await search.run({"query": "refund failed"}, CallContext(state={}, invocation_id="no-scope"))  # NO_SCOPE
    finally:
        await guard.aclose()
        await backend.close()
    return path
