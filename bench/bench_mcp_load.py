"""Bounded MCP load test: N concurrent clients over streamable HTTP, a fixed number of calls each.

Starts ``scopegate serve CONFIG --transport http`` (a subprocess, one uvicorn
worker) over a generated multi-tenant ticket index, connects N official-SDK
clients, each with its own tenant's token (opaque and JWT alternate), and has
them all call tools at once: searches with random keywords, filters and pages,
fetches of ids they were shown, and probes for other tenants' ids. Every
response is checked: each id must belong to the caller's tenant and every
probe must be NOT_FOUND. Latency is measured around each ``call_tool``.

Run: .venv/bin/python bench/bench_mcp_load.py [--clients 20] [--calls 50] [--modes legacy auto]
Writes bench/results/mcp_load.json and mcp_load.md. Nothing is asserted about
timings; the exit code is non-zero only if a response crossed tenants.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import httpx2
import jwt
import yaml
from cryptography.hazmat.primitives.asymmetric import rsa
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import QUERIES, machine, percentiles, write_results

from scopegate.backends.embedded import EmbeddedBackend
from scopegate.demo.corpus import PRODUCTS, STATUSES, generate_tickets, ticket_spec
from scopegate.search.spec import spec_to_dict

ISSUER = "https://login.bench.test/"
AUDIENCE = "scopegate-bench"


@dataclass
class ClientPlan:
    """One simulated client: whose token it holds and which tenant that is."""

    tenant: str
    token: str
    seed: int


@dataclass
class LoadStats:
    latencies_ms: dict[str, list[float]] = field(default_factory=lambda: {"search": [], "fetch": [], "probe": []})
    connect_ms: list[float] = field(default_factory=list)
    errors: Counter[str] = field(default_factory=Counter)
    calls: int = 0
    ids_checked: int = 0
    violations: list[str] = field(default_factory=list)
    probes: int = 0
    probes_refused: int = 0
    wall_s: float = 0.0

    def all_latencies(self) -> list[float]:
        return [x for values in self.latencies_ms.values() for x in values]


def _ids(structured: Mapping[str, Any]) -> list[str]:
    ids = [str(r.get("ticket_id")) for r in structured.get("results", []) or []]
    if isinstance(structured.get("document"), Mapping):
        ids.append(str(structured["document"].get("ticket_id")))
    return ids


async def _one_client(
    url: str,
    plan: ClientPlan,
    calls: int,
    owner: Mapping[str, str],
    foreign: Sequence[str],
    stats: LoadStats,
    start: asyncio.Event,
    connected: asyncio.Queue[None],
    mode: str,
) -> None:
    rng = random.Random(plan.seed)
    headers = {"Authorization": f"Bearer {plan.token}"}
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(60.0)) as http:
        t0 = time.perf_counter()
        async with Client(streamable_http_client(url, http_client=http), mode=mode) as client:
            stats.connect_ms.append((time.perf_counter() - t0) * 1000)
            await connected.put(None)
            await start.wait()
            seen: list[str] = []
            for _ in range(calls):
                roll = rng.random()
                if roll < 0.1:
                    kind, name, args = "probe", "get_ticket", {"id": rng.choice(foreign)}
                elif roll < 0.3 and seen:
                    kind, name, args = "fetch", "get_ticket", {"id": rng.choice(seen)}
                else:
                    args = {"query": rng.choice(QUERIES), "page": rng.choice([1, 1, 2])}
                    if rng.random() < 0.5:
                        args["product"] = rng.choice(PRODUCTS)
                    if rng.random() < 0.2:
                        args["status"] = rng.choice(STATUSES)
                    kind, name = "search", "search_tickets"
                t = time.perf_counter()
                result = await client.call_tool(name, args)
                stats.latencies_ms[kind].append((time.perf_counter() - t) * 1000)
                stats.calls += 1
                data = result.structured_content or {}
                if data.get("status") == "error":
                    stats.errors[str(data.get("error_code"))] += 1
                for doc_id in _ids(data):
                    stats.ids_checked += 1
                    if owner.get(doc_id) != plan.tenant:
                        stats.violations.append(f"{plan.tenant} got {doc_id} ({owner.get(doc_id)})")
                    elif kind == "search":
                        seen.append(doc_id)
                if kind == "probe":
                    stats.probes += 1
                    stats.probes_refused += int(data.get("error_code") == "NOT_FOUND")


async def run_load(
    url: str, plans: Sequence[ClientPlan], calls: int, owner: Mapping[str, str], *, mode: str = "auto"
) -> LoadStats:
    """Connect every client, then start them together; return what they measured and checked."""
    stats = LoadStats()
    start = asyncio.Event()
    connected: asyncio.Queue[None] = asyncio.Queue()
    tasks = []
    for plan in plans:
        foreign = [doc_id for doc_id, tenant in owner.items() if tenant != plan.tenant]
        foreign = random.Random(plan.seed).sample(foreign, min(200, len(foreign)))
        tasks.append(asyncio.create_task(_one_client(url, plan, calls, owner, foreign, stats, start, connected, mode)))
    for _ in plans:
        getter = asyncio.create_task(connected.get())
        done, _pending = await asyncio.wait({getter, *tasks}, return_when=asyncio.FIRST_COMPLETED)
        if getter not in done:
            getter.cancel()
            for task in done:
                task.result()  # a client failed to connect: raise its error
    t0 = time.perf_counter()
    start.set()
    await asyncio.gather(*tasks)
    stats.wall_s = time.perf_counter() - t0
    return stats


# -- set-up ------------------------------------------------------------------------------
def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def prepare(folder: Path, per_tenant: int, cache: bool) -> tuple[Path, dict[str, str], dict[str, list[str]]]:
    """Index, keys, token table and config; returns (config, owner map, tokens per tenant)."""
    tickets = list(generate_tickets(per_tenant=per_tenant))
    backend = EmbeddedBackend(ticket_spec(), folder / "data" / "tickets")
    backend.ingest_sync(tickets, batch_size=5000)
    owner = {t["ticket_id"]: t["tenant_id"] for t in tickets}
    tenants = sorted(set(owner.values()))
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key()))
    jwk.update(kid="bench", alg="RS256")
    (folder / "jwks.json").write_text(json.dumps({"keys": [jwk]}), "utf-8")
    tokens: dict[str, list[str]] = {}
    rows = []
    for tenant in tenants:
        opaque = f"sg-bench-{tenant}-" + hashlib.sha256(tenant.encode()).hexdigest()[:24]
        rows.append({"sha256": hashlib.sha256(opaque.encode()).hexdigest(), "tenant": tenant, "user": "bench"})
        now = int(time.time())
        signed = jwt.encode(
            {"iss": ISSUER, "aud": AUDIENCE, "sub": "bench", "tenant_id": tenant, "iat": now, "exp": now + 7200},
            key,
            algorithm="RS256",
            headers={"kid": "bench"},
        )
        tokens[tenant] = [opaque, signed]
    (folder / "tokens.yaml").write_text(yaml.safe_dump({"tokens": rows}), "utf-8")
    search = spec_to_dict(ticket_spec())
    search.pop("scope_keys")
    config = {
        "version": 1,
        "server": {"name": "scopegate-bench", "http": {"max_sessions": 1000}},
        "backends": {"local": {"type": "embedded", "path": str(folder / "data")}},
        "search_tools": [{"backend": "local", **{k: v for k, v in search.items() if v is not None}}],
        "auth": {
            "token_table": str(folder / "tokens.yaml"),
            "jwt": {
                "jwks_file": str(folder / "jwks.json"),
                "issuer": ISSUER,
                "audience": AUDIENCE,
                "claims": {"tenant": "tenant_id", "user": "sub"},
            },
        },
        "guards": {"cap": {"families": {"search": 1_000_000}}, "cache": {"enabled": cache}},
    }
    path = folder / "scopegate.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), "utf-8")
    return path, owner, tokens


def start_server(config: Path, folder: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    log = open(folder / f"server-{port}.log", "wb")  # noqa: SIM115 - lives as long as the server
    proc = subprocess.Popen(
        [sys.executable, "-m", "scopegate.cli", "serve", str(config), "--transport", "http", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=log,
        env=dict(os.environ),
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError((folder / f"server-{port}.log").read_text())
        try:
            if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                return proc, base
        except httpx.HTTPError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError("server did not start")


def plans_for(tokens: Mapping[str, list[str]], clients: int) -> list[ClientPlan]:
    tenants = sorted(tokens)
    return [
        ClientPlan(tenant=tenants[i % len(tenants)], token=tokens[tenants[i % len(tenants)]][i % 2], seed=1000 + i)
        for i in range(clients)
    ]


def summarise(stats: LoadStats, mode: str, clients: int, calls: int, cache_hit_rate: float | None) -> dict[str, Any]:
    return {
        "mode": mode,
        "clients": clients,
        "calls_per_client": calls,
        "total_calls": stats.calls,
        "wall_s": round(stats.wall_s, 3),
        "throughput_calls_per_s": round(stats.calls / stats.wall_s, 1) if stats.wall_s else None,
        "latency_ms": percentiles(stats.all_latencies()),
        "latency_ms_by_kind": {k: percentiles(v) for k, v in stats.latencies_ms.items() if v},
        "connect_ms": percentiles(stats.connect_ms),
        "errors": dict(stats.errors),
        "ids_checked": stats.ids_checked,
        "cross_tenant_probes": stats.probes,
        "cross_tenant_probes_refused": stats.probes_refused,
        "violations": len(stats.violations),
        "violation_examples": stats.violations[:5],
        "server_cache_hit_rate": cache_hit_rate,
    }


def _cache_hit_rate(base: str, token: str) -> float | None:
    """From /metrics, which wants a bearer token the MCP endpoint accepts (metrics_auth: bearer)."""
    for line in httpx.get(
        f"{base}/metrics", headers={"Authorization": f"Bearer {token}"}, timeout=10
    ).text.splitlines():
        if line.startswith("scopegate_cache_hit_rate "):
            return round(float(line.split()[1]), 3)
    return None


def markdown(data: dict[str, Any]) -> str:
    m = data["machine"]
    lines = [
        "# MCP load test (streamable HTTP)",
        "",
        f"Machine: {m['cpus']} cores, Python {m['python']}, {m['when']}. Server: one `scopegate serve` process "
        "(uvicorn, one worker) on 127.0.0.1; clients: the official `mcp` SDK client, all in one other process.",
        f"Corpus: {data['documents']} tickets over {data['tenants']} tenants (embedded index). "
        "Each client holds one tenant's token (opaque and JWT alternate) and makes its calls back to back: "
        "~70% searches (random keywords, filters, pages), ~20% fetches of ids it was shown, ~10% fetches of "
        "other tenants' ids. Cache: " + ("on" if data["cache"] else "off") + ".",
        "",
        "| protocol | clients x calls | wall s | calls/s | p50 ms | p95 ms | p99 ms | connect p50 ms | "
        "ids checked | foreign probes refused | violations |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for run in data["runs"]:
        lat = run["latency_ms"]
        era = "2025-11-25 (session)" if run["mode"] == "legacy" else "2026-07-28 (stateless)"
        lines.append(
            f"| {era} | {run['clients']} x {run['calls_per_client']} | {run['wall_s']} | "
            f"{run['throughput_calls_per_s']} | {lat['p50']:.1f} | {lat['p95']:.1f} | {lat['p99']:.1f} | "
            f"{run['connect_ms']['p50']:.0f} | {run['ids_checked']} | "
            f"{run['cross_tenant_probes_refused']}/{run['cross_tenant_probes']} | {run['violations']} |"
        )
    lines += [
        "",
        "Latency is measured by the client around each `call_tool` (HTTP, auth, MCP, guard, engine).",
        "Figures, not thresholds: nothing here is asserted.",
    ]
    return "\n".join(lines)


async def main_async(args: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory(prefix="scopegate-mcp-load-") as tmp:
        folder = Path(tmp)
        config, owner, tokens = prepare(folder, args.per_tenant, not args.no_cache)
        runs = []
        bad = 0
        for mode in args.modes:
            proc, base = start_server(config, folder)
            try:
                stats = await run_load(f"{base}/mcp", plans_for(tokens, args.clients), args.calls, owner, mode=mode)
                scrape = next(iter(tokens.values()))[0]
                run = summarise(stats, mode, args.clients, args.calls, _cache_hit_rate(base, scrape))
            finally:
                proc.terminate()
                proc.wait(timeout=10)
            bad += run["violations"] + (run["cross_tenant_probes"] - run["cross_tenant_probes_refused"])
            runs.append(run)
            print(json.dumps(run, indent=2))
        data = {
            "machine": machine(),
            "documents": len(owner),
            "tenants": len(tokens),
            "cache": not args.no_cache,
            "runs": runs,
        }
        write_results("mcp_load", data, markdown(data))
        return 1 if bad else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clients", type=int, default=20, help="concurrent MCP clients (default 20)")
    parser.add_argument("--calls", type=int, default=50, help="calls per client (default 50)")
    parser.add_argument("--per-tenant", type=int, default=400, help="tickets per tenant (default 400, 6 tenants)")
    parser.add_argument(
        "--modes",
        nargs="+",
        default=["legacy", "auto"],
        choices=["legacy", "auto"],
        help="client protocol modes: legacy = 2025-11-25 sessions, auto = 2026-07-28",
    )
    parser.add_argument("--no-cache", action="store_true", help="switch the result cache off")
    return asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    raise SystemExit(main())
