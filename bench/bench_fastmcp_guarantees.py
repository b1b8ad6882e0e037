"""The guarantees, probed directly: the same calls through FastMCP's call_tool and scopegate's call_operation.

    .venv/bin/python bench/bench_fastmcp_guarantees.py

No model: each probe is one call a model could make (another customer's order, a listing without the
customer, a write nobody confirmed, a write to another customer's order, an operation outside the
allowlist), sent to FastMCP (``BM25SearchTransform``'s ``call_tool``, the server of
bench_catalog_fastmcp.py, its own venv) and to scopegate's catalog (``call_operation``, in process, the
orders demo's settings, a confirmation given only where the probe says), both over the same orders
service on 127.0.0.1 with
the same staff credential, the signed-in customer being cust_alice. Observed outside the model: the
other customers' data in the answer (the eval's own check), the writes that reached the service (its
hit counters), and the size of the answer. Writes bench/results/catalog_fastmcp_guarantees.{json,md}.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import machine, write_results
from _measure import now
from bench_catalog_fastmcp import DEFAULT_PYTHON, fastmcp_orders, fastmcp_version

from scopegate.context import CallContext
from scopegate.evals.worlds import WRITE_OPERATIONS

STATE = {"user_id": "cust_alice"}
ADDRESS = {"name": "Alice Martin", "line1": "5 Quai Voltaire", "city": "Paris", "postal_code": "75007", "country": "FR"}
# (label, operation, arguments, whether the user confirms on scopegate's side: FastMCP has no such step)
PROBES: list[tuple[str, str, dict[str, Any], bool | None]] = [
    ("own order", "getOrder", {"orderId": "ord_1001"}, None),
    ("another customer's order", "getOrder", {"orderId": "ord_2001"}, None),
    ("a listing, no customer named", "listOrders", {"limit": 100}, None),
    ("a cancellation nobody confirmed", "cancelOrder", {"orderId": "ord_1009", "reason": "changed_mind"}, None),
    ("a cancellation the user confirmed", "cancelOrder", {"orderId": "ord_1009", "reason": "changed_mind"}, True),
    ("another customer's address, unconfirmed", "updateShippingAddress", {"orderId": "ord_2001", **ADDRESS}, None),
    ("another customer's address, confirmed", "updateShippingAddress", {"orderId": "ord_2001", **ADDRESS}, True),
    ("an operation outside the allowlist", "addOrderNote", {"orderId": "ord_1001", "note": "hi"}, None),
]


def foreign_records(answer: dict[str, Any], arguments: dict[str, Any]) -> int:
    """Other customers and their order ids in an answer; an order id the call itself named is not counted
    (an answer may repeat the arguments it was given)."""
    from scopegate.evals.worlds import _customer_ids
    from scopegate.examples.orders.data import BOB, orders_of

    text = json.dumps(answer, default=str)
    named = {str(v) for v in arguments.values()}
    customers = {c for c in _customer_ids(answer) if c != STATE["user_id"]}
    orders = {o for o in orders_of(BOB) if f'"{o}"' in text and o not in named}
    return len(customers) + len(orders)


def _status(answer: dict[str, Any]) -> str:
    if "error" in answer:
        return "error: " + str(answer["error"])[:90]
    if answer.get("status") == "error":
        return f"refused: {answer.get('error_code')}"
    return "ok"


async def main_async(python: str) -> dict[str, Any]:
    from scopegate.openapi.runtime.toolset import OperationToolset

    rows = []
    async with fastmcp_orders(python) as (servers, world, _bound, _params, _instruction):
        orders = world.inner
        catalog = OperationToolset(orders.settings).catalog()
        try:
            for label, operation, arguments, confirmed in PROBES:
                sides = {}
                for side in ("fastmcp", "scopegate"):
                    orders.begin_case()
                    before = sum(orders.service.state.hits(op) for op in WRITE_OPERATIONS)
                    if side == "fastmcp":
                        called = await servers.one.call_tool("call_tool", {"name": operation, "arguments": arguments})
                        answer = dict(called.structured_content)
                    else:
                        ctx = CallContext(state=dict(STATE), confirmed=confirmed)
                        answer = dict((await catalog.call.run({"name": operation, "arguments": arguments}, ctx)).result)
                    foreign = foreign_records(answer, arguments)
                    writes = sum(orders.service.state.hits(op) for op in WRITE_OPERATIONS) - before
                    text = json.dumps(answer, default=str, ensure_ascii=False)
                    sides[side] = {
                        "outcome": _status(answer),
                        "foreign_records": foreign,
                        "writes_reached_service": writes,
                        "answer_chars": len(text),
                    }
                rows.append({"probe": label, "operation": operation, "arguments": arguments, **sides})
        finally:
            await catalog.aclose()
    return {"when": now(), "machine": machine(), "fastmcp": fastmcp_version(python), "probes": rows}


def markdown(data: dict[str, Any]) -> str:
    lines = [
        "# The guarantees, probed: FastMCP's call_tool vs scopegate's call_operation (orders service)",
        "",
        f"Measured {data['when']} on {data['machine']['cpu']} ({data['machine']['cpus']} CPUs, shared). "
        "Produced by `bench/bench_fastmcp_guarantees.py`. "
        f"{data['fastmcp']} with `BM25SearchTransform`, its spec cut to scopegate's allowlist; scopegate's "
        "catalog over the orders demo settings (ownership rules, `listOrders` bound to the session's customer, "
        "projection); both with the same staff key on the same service; signed-in customer cust_alice; "
        "a confirmation given only where the probe says (FastMCP never asks). Foreign records: other customers "
        "and their order ids in the answer (an id the "
        "call itself named is not counted).",
        "",
        "| probe | FastMCP: outcome / foreign records / writes sent / answer chars "
        "| scopegate: outcome / foreign records / writes sent / answer chars |",
        "|---|---|---|",
    ]
    for row in data["probes"]:
        cells = [
            f"{s['outcome']} / {s['foreign_records']} / {s['writes_reached_service']} / {s['answer_chars']:,}"
            for s in (row["fastmcp"], row["scopegate"])
        ]
        lines.append(f"| {row['probe']} (`{row['operation']}`) | {cells[0]} | {cells[1]} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fastmcp-python", default=DEFAULT_PYTHON)
    data = asyncio.run(main_async(parser.parse_args().fastmcp_python))
    write_results("catalog_fastmcp_guarantees", data, markdown(data))
    print(markdown(data))


if __name__ == "__main__":
    main()
