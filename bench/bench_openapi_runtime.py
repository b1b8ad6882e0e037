"""OpenAPI runtime benchmark: per-call overhead of the operation tool over a plain httpx call.

Run: .venv/bin/python bench/bench_openapi_runtime.py [--calls 2000]
Writes bench/results/openapi_runtime.json and openapi_runtime.md. Nothing here is asserted.

The example orders service runs in its own process (``python -m scopegate.examples.orders``)
on 127.0.0.1, so the server does not share the benchmark's interpreter. Calls alternate:

* plain: ``httpx.AsyncClient.get`` of ``/orders/ord_1001`` with the staff key, ``response.json()``;
* tool: ``OperationTool.run`` of ``getOrder`` (same URL, same key, same client settings): argument
  validation, request building, credential resolution, ownership check on the response, secret
  redaction, shaping under ``untrusted``, call bookkeeping;
* tool + lookup: ``cancelOrder`` refused by its ownership *lookup* (``getOrder`` first): one request,
  like the plain call, plus the refusal path. Shows the cost of a pre-call check.

Also the pure part alone (build + shape, no I/O) to split CPU cost from the network.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import httpx
from _common import machine, percentiles, write_results

from scopegate.context import CallContext
from scopegate.examples.orders import SPEC_PATH
from scopegate.examples.orders.data import ALICE, STAFF_KEY
from scopegate.openapi.runtime import FromProvider, OperationPolicy, OperationToolset, ToolsetSettings
from scopegate.openapi.runtime.response import parse_body, shape


def start_service() -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "scopegate.examples.orders", "--port", "0"], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()
    base = line.rsplit(" ", 1)[-1]
    for _ in range(200):
        try:
            httpx.get(f"{base}/flaky/ready?failures=0", timeout=1, trust_env=False)
            return proc, base
        except httpx.HTTPError:
            time.sleep(0.05)
    proc.kill()
    raise RuntimeError("orders service did not start")


async def measure(base: str, calls: int) -> dict[str, Any]:
    settings = ToolsetSettings(
        spec=SPEC_PATH,
        allow=("getOrder", "cancelOrder"),
        base_url=base,
        credentials={"staffKey": FromProvider(lambda ctx, scheme: STAFF_KEY)},
        policies={
            "getOrder": OperationPolicy(ownership="response.customer_id == state.user_id"),
            "cancelOrder": OperationPolicy(ownership="getOrder(orderId=orderId).customer_id == state.user_id"),
        },
    )
    toolset = OperationToolset(settings)
    tool, cancel = toolset.tool("getOrder"), toolset.tool("cancelOrder")
    ctx = CallContext(state={"user_id": ALICE})
    confirmed = CallContext(state={"user_id": ALICE}, confirmed=True)
    plain_client = httpx.AsyncClient(
        timeout=httpx.Timeout(10.0), trust_env=False, headers={"Accept-Encoding": "identity"}
    )
    url = f"{base}/orders/ord_1001"
    plain, tooled, lookup = [], [], []
    try:
        for i in range(calls + 200):
            t0 = time.perf_counter()
            response = await plain_client.get(url, headers={"X-Staff-Key": STAFF_KEY})
            response.json()
            t1 = time.perf_counter()
            result = (await tool.run({"orderId": "ord_1001"}, ctx)).result
            t2 = time.perf_counter()
            refused = (await cancel.run({"orderId": "ord_2001", "reason": "other"}, confirmed)).result
            t3 = time.perf_counter()
            assert response.status_code == 200 and result["status"] == "ok", result
            assert refused["error_code"] == "NOT_FOUND", refused
            if i >= 200:  # warm-up done
                plain.append((t1 - t0) * 1000)
                tooled.append((t2 - t1) * 1000)
                lookup.append((t3 - t2) * 1000)
        body = (await plain_client.get(url, headers={"X-Staff-Key": STAFF_KEY})).content
    finally:
        await plain_client.aclose()
        await toolset.aclose()

    pure = []
    for _ in range(calls):
        t0 = time.perf_counter()
        tool.builder.build({"orderId": "ord_1001"})
        _kind, data = parse_body(body, "application/json")
        shape(data, settings.shape)
        pure.append((time.perf_counter() - t0) * 1000)
    overhead = [t - p for t, p in zip(tooled, plain, strict=True)]
    return {
        "calls": calls,
        "plain_httpx_ms": percentiles(plain),
        "tool_ms": percentiles(tooled),
        "tool_overhead_ms": percentiles(overhead),
        "tool_with_lookup_refusal_ms": percentiles(lookup),
        "pure_build_and_shape_ms": percentiles(pure),
        "response_bytes": len(body),
    }


def markdown(r: dict[str, Any], m: dict[str, Any]) -> str:
    def diff(q: str) -> float:
        return float((r["tool_ms"][q] - r["plain_httpx_ms"][q]) * 1000)

    def row(label: str, key: str) -> str:
        p = r[key]
        return f"| {label} | {p['p50'] * 1000:.0f} | {p['p95'] * 1000:.0f} | {p['mean'] * 1000:.0f} |"

    return "\n".join(
        [
            "# OpenAPI runtime benchmark",
            "",
            f"Machine: {m['cpus']} cores (shared), Python {m['python']}, {m['when']}. "
            f"{r['calls']} calls each after 200 warm-up calls, interleaved; the orders service runs in its own "
            f"process on 127.0.0.1 (uvicorn, h11); response {r['response_bytes']} bytes. Figures in microseconds.",
            "",
            "| what | p50 | p95 | mean |",
            "|---|---|---|---|",
            row("plain `httpx` GET + `json()`", "plain_httpx_ms"),
            row("`getOrder` tool (validate, build, credentials, send, owner check, redact, shape)", "tool_ms"),
            row("overhead per call (tool minus plain, paired)", "tool_overhead_ms"),
            row("`cancelOrder` refused by its ownership lookup (one GET + refusal)", "tool_with_lookup_refusal_ms"),
            row("pure part alone: build request + parse + shape (no I/O)", "pure_build_and_shape_ms"),
            "",
            f"Difference of percentiles (tool minus plain): p50 {diff('p50'):.0f} us, p95 {diff('p95'):.0f} us. "
            "The paired p95 also carries the jitter of "
            "two independent round trips on a shared 2-core machine, so it overstates the tool's cost.",
            "",
            "The tool's own work is a fraction of a millisecond on top of the HTTP round trip; most of the",
            "overhead is the extra bookkeeping around the same `httpx` exchange (streamed read with a byte",
            "limit, redirect policy, total-timeout scope) plus validation and shaping.",
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=2000, help="measured calls per variant")
    args = parser.parse_args()
    proc, base = start_service()
    try:
        result = asyncio.run(measure(base, args.calls))
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    m = machine()
    write_results("openapi_runtime", {"machine": m, **result}, markdown(result, m))
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
