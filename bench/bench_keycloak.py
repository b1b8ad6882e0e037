"""Keycloak start-up cost: what the tests' identity provider costs per ``make test``.

Run: .venv/bin/python bench/bench_keycloak.py [--runs 3] [--cold] [--java PATH]
Writes bench/results/keycloak_startup.json and keycloak_startup.md. Nothing is asserted.
About 1-2 minutes per run on a quiet 2-core machine (more when it is shared); ``--cold`` adds one
build from an empty state folder (unpack, ``kc.sh build``, the database seed: a few minutes).

Per warm run (``start --clean``: the cached build, the seed database, both realms imported):
wall time until both realms serve their OpenID configuration, CPU seconds of the JVM by then
(user + system: less sensitive to other load than wall time), resident memory at ready and after
a small workload (20 password grants, 20 token exchanges, 20 introspections). The load average
is recorded: figures measured on a shared machine are provisional.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import machine, write_results

from scopegate_lab.keycloak import RealmClient
from scopegate_lab.keycloak_node import KEYCLOAK_VERSION, KeycloakConfig, KeycloakNode
from scopegate_lab.keycloak_realm import MCP_CLIENT, RealmInfo


def _java_pid(node: KeycloakNode) -> int | None:
    pid = node.pid()
    if pid is None:
        return None
    for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split():
        cmd = Path(f"/proc/{child}/cmdline").read_bytes()
        if b"java" in cmd.split(b"\0")[0]:
            return int(child)
    return None


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _workload(url: str) -> None:
    info = RealmInfo(url)
    realm = RealmClient(info)
    try:
        for _ in range(20):
            token = realm.password_token("alice", scopes=["orders:read"])
            realm.http.post(
                info.token_endpoint,
                data={
                    "grant_type": "urn:ietf:params:oauth:grant-type:token-exchange",
                    "subject_token": token,
                    "subject_token_type": "urn:ietf:params:oauth:token-type:access_token",
                    "audience": "orders-api",
                },
                auth=(MCP_CLIENT, info.secret(MCP_CLIENT)),
            ).raise_for_status()
            realm.http.post(
                f"{info.issuer}/protocol/openid-connect/token/introspect",
                data={"token": token},
                auth=(MCP_CLIENT, info.secret(MCP_CLIENT)),
            ).raise_for_status()
    finally:
        realm.close()


def warm_run(node: KeycloakNode) -> dict[str, Any]:
    node.stop()
    load = os.getloadavg()[0]
    began = time.monotonic()
    url = node.start(clean=True)
    wall = time.monotonic() - began
    java = _java_pid(node)
    assert java is not None
    cpu, rss = _cpu_s(java), _rss_mb(java)
    began = time.monotonic()
    _workload(url)
    work = time.monotonic() - began
    return {
        "wall_s": round(wall, 2),
        "jvm_cpu_s": round(cpu, 2),
        "rss_ready_mb": round(rss, 1),
        "rss_after_workload_mb": round(_rss_mb(java), 1),
        "workload_s": round(work, 2),
        "load_before": round(load, 2),
    }


def cold_build(java: str | None) -> dict[str, Any]:
    folder = Path(tempfile.mkdtemp(prefix="kc-cold-"))
    try:
        node = KeycloakNode(KeycloakConfig(state_dir=folder, java=java))
        load = os.getloadavg()[0]
        began = time.monotonic()
        node.build()
        return {"build_and_seed_s": round(time.monotonic() - began, 1), "load_before": round(load, 2)}
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _spread(values: list[float]) -> str:
    return f"{statistics.median(values):.1f} (min {min(values):.1f}, max {max(values):.1f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--cold", action="store_true", help="also time one build from an empty state folder")
    parser.add_argument("--java", help="the java executable (default: SCOPEGATE_KEYCLOAK_JAVA, JAVA_HOME, PATH)")
    args = parser.parse_args()
    node = KeycloakNode(KeycloakConfig(java=args.java) if args.java else None)
    node.build()
    runs = []
    try:
        for _ in range(args.runs):
            runs.append(warm_run(node))
            print(runs[-1], flush=True)
    finally:
        node.stop()
    cold = cold_build(args.java) if args.cold else None
    data = {
        "machine": machine(),
        "keycloak": KEYCLOAK_VERSION,
        "java": args.java or os.environ.get("SCOPEGATE_KEYCLOAK_JAVA") or shutil.which("java"),
        "heap": node.config.heap,
        "runs": runs,
        "cold": cold,
        "load_after": round(os.getloadavg()[0], 2),
    }
    col = {k: [r[k] for r in runs] for k in runs[0]}
    md = [
        f"# Keycloak {KEYCLOAK_VERSION} start-up (the tests' identity provider)",
        "",
        f"{data['machine']['when']}, {data['machine']['cpus']} CPUs, heap {node.config.heap}, java {data['java']}; "
        f"load average {min(col['load_before']):.1f}-{max(col['load_before']):.1f} before the runs "
        "(a shared machine: provisional figures).",
        "",
        f"Warm start (`start --clean`: cached build and database seed, two realms imported), {len(runs)} runs, "
        "median (min, max):",
        "",
        "| wall s | JVM CPU s | RSS at ready MB | RSS after workload MB | workload s |",
        "|---|---|---|---|---|",
        f"| {_spread(col['wall_s'])} | {_spread(col['jvm_cpu_s'])} | {_spread(col['rss_ready_mb'])} | "
        f"{_spread(col['rss_after_workload_mb'])} | {_spread(col['workload_s'])} |",
        "",
        "Workload: 20 × (password grant, token exchange, introspection).",
    ]
    if cold:
        md += ["", f"Cold build (unpack, `kc.sh build`, database seed): {cold['build_and_seed_s']} s "
                   f"(load {cold['load_before']})."]  # fmt: skip
    write_results("keycloak_startup", data, "\n".join(md))
    print("\n".join(md))


if __name__ == "__main__":
    main()
