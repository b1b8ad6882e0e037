"""Run N searches through the guard against an engine that is down; logs as ``scopegate serve`` sets them up.

    python outage_calls.py opensearch|elasticsearch URL N

Prints each call's error code on stdout; the log goes to stderr (the test counts its lines).
"""

from __future__ import annotations

import asyncio
import logging
import sys

from scopegate.backends.elasticsearch import ElasticsearchBackend
from scopegate.backends.opensearch import OpenSearchBackend
from scopegate.context import CallContext
from scopegate.demo.corpus import ticket_spec
from scopegate.guard.guard import Guard
from scopegate.search.tools import SearchTool


async def main(engine: str, url: str, calls: int) -> None:
    backend_type = OpenSearchBackend if engine == "opensearch" else ElasticsearchBackend
    backend = backend_type(ticket_spec(), url)
    guard = Guard()
    tool = SearchTool(backend.spec, backend)
    try:
        for i in range(calls):
            ctx = CallContext(state={"tenant_id": "acme"}, invocation_id=f"inv-{i}", session_id="s")
            result = (await guard.call(tool, {"query": f"refund {i}"}, ctx)).result
            print(result.get("error_code"), flush=True)
    finally:
        await backend.close()


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)  # as `scopegate serve` does by default
    asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
