"""Loading OpenAPI specs into tools: scopegate vs ADK 2.13 OpenAPIToolset vs FastMCP from_openapi.

Every shared OpenAPI document (../shared/data/openapi, found by content; the
two multi-file specs by their root) and the synthetic expandable-field webs
(scopegate_lab.openapi_synth: 10/50/200 schemas), each in a fresh process:

* ``scopegate_5``: load + select a 5-operation allowlist (the first five
  operations in spec order) + build the toolset (declarations, request
  builders, validators): the lazy path a deployment takes;
* ``scopegate_all``: load + translate every operation + its FunctionDeclaration;
* ``adk``: ``OpenAPIToolset(spec_dict=...)`` + ``get_tools()`` + every declaration
  (ADK always builds every operation);
* ``fastmcp``: ``FastMCP.from_openapi(spec, client)`` + ``list_tools()`` (every operation).

Measured: wall time of the whole process (imports included) and of the work
alone (after imports), peak RSS; ``--repeat`` runs per cell (median, min-max).
The peers run under a time cap and a memory cap (a watchdog kills the process
when its RSS passes the cap); "did not finish" is reported as such, and a
peer's exception as "fails: ...". The peers get the root file parsed with
PyYAML/json: neither resolves external files, which the table notes.

FastMCP 4.2.3 needs opentelemetry-api >= 1.45.2, google-adk 2.13.0 <= 1.44, so it
runs from its own virtualenv, created on first use under .cache/peers/
(``pip install fastmcp==4.2.3 pyyaml``), never in the project's.

    .venv/bin/python bench/bench_openapi_load.py [--repeat 3] [--time-cap 120] [--memory-cap-mb 4096]
        [--systems scopegate_5,scopegate_all,adk,fastmcp] [--specs NAME,...]

Writes bench/results/openapi_load.json and .md. About 25-40 minutes with the
defaults on 2 cores (the peers' capped cells dominate); figures measured while
the machine is shared are provisional.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO / "bench"))

DATA = REPO.parent / "shared" / "data" / "openapi"
CACHE = REPO / ".cache"
PEERS = CACHE / "peers"
FASTMCP_VENV = PEERS / "fastmcp-4.2.3"
SYNTHETIC_DIR = CACHE / "bench" / "synthetic"
SYSTEMS = ("scopegate_5", "scopegate_all", "adk", "fastmcp")
WORK = {
    "scopegate_5": "load, 5-op allowlist, build the toolset",
    "scopegate_all": "load, translate every operation",
    "adk": "every operation (no lazy mode)",
    "fastmcp": "every operation (no lazy mode)",
}


# ------------------------------------------------------------------ workers
def _parse_for_peer(path: Path) -> Any:
    data = path.read_bytes()
    if path.suffix == ".json":
        return json.loads(data)
    import yaml

    return yaml.load(data, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def worker(system: str, spec_path: str) -> dict[str, Any]:
    path = Path(spec_path)
    t0 = time.perf_counter()
    c0 = time.process_time()
    if system.startswith("scopegate"):
        from google.genai import types  # noqa: F401 - imported by declarations; an import, not work

        from scopegate.openapi.loader import load_document
        from scopegate.openapi.runtime import OperationToolset, ToolsetSettings
        from scopegate.openapi.translate import translate

        t1, c1 = time.perf_counter(), time.process_time()
        if system == "scopegate_5":
            doc = load_document(path, allow_external_refs=True)
            five = tuple(i.operation_id or i.key for i in doc.infos()[:5])
            toolset = OperationToolset(
                ToolsetSettings(spec=path, allow=five, base_url="https://api.example.test", allow_external_refs=True)
            )
            tools = len(toolset.tools)
        else:
            doc = load_document(path, allow_external_refs=True)
            result = translate(doc, strict=False)
            tools = len([t.function_declaration() for t in result.tools])
    elif system == "adk":
        import asyncio

        from google.adk.tools.openapi_tool import OpenAPIToolset

        t1, c1 = time.perf_counter(), time.process_time()
        toolset = OpenAPIToolset(spec_dict=_parse_for_peer(path))
        adk_tools = asyncio.run(toolset.get_tools())
        tools = len([t._get_declaration() for t in adk_tools])
    else:
        import asyncio

        import fastmcp
        import httpx2
        from fastmcp.server.providers.openapi.routing import MCPType, RouteMap

        t1, c1 = time.perf_counter(), time.process_time()
        server = fastmcp.FastMCP.from_openapi(
            _parse_for_peer(path),
            client=httpx2.AsyncClient(base_url="https://api.example.test"),
            route_maps=[RouteMap(mcp_type=MCPType.TOOL)],  # every operation a tool, as the others
        )
        tools = len(asyncio.run(server.list_tools()))
    t2, c2 = time.perf_counter(), time.process_time()
    return {"import_s": t1 - t0, "work_s": t2 - t1, "work_cpu_s": c2 - c1, "cpu_s": c2 - c0, "tools": tools}


def run_worker(system: str, spec_path: str) -> None:
    try:
        out = worker(system, spec_path)
    except Exception as exc:  # a peer's failure is a result, not a crash of the benchmark
        out = {"error": f"{type(exc).__name__}: {str(exc)[:240]}"}
    out["peak_rss_mb"] = _peak_rss_mb()
    print("BENCH-RESULT " + json.dumps(out), flush=True)


def _peak_rss_mb() -> float:
    """This process's peak RSS (VmHWM). Not ru_maxrss: Linux carries that over from the forking parent."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# ------------------------------------------------------------------- parent
def _rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return 0.0
    return 0.0


def ensure_fastmcp() -> Path | None:
    python = FASTMCP_VENV / "bin" / "python"
    if python.exists():
        return python
    PEERS.mkdir(parents=True, exist_ok=True)
    try:
        subprocess.run([sys.executable, "-m", "venv", str(FASTMCP_VENV)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", "fastmcp==4.2.3", "pyyaml"], check=True)
    except (subprocess.CalledProcessError, OSError) as exc:
        print(f"fastmcp venv: {exc}", file=sys.stderr)
        return None
    return python


def measure_once(python: str, system: str, spec: Path, time_cap: float, memory_cap_mb: float) -> dict[str, Any]:
    env = dict(os.environ, PYTHONWARNINGS="ignore", PYTHONPATH=str(REPO / "src"))
    start = time.perf_counter()
    proc = subprocess.Popen(
        [python, __file__, "--worker", system, str(spec)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    peak = [0.0]
    killed: list[str] = []

    def watch() -> None:
        while proc.poll() is None:
            rss = _rss_mb(proc.pid)
            peak[0] = max(peak[0], rss)
            if rss > memory_cap_mb:
                killed.append(f"did not finish (memory cap {memory_cap_mb:.0f} MB)")
                proc.kill()
                return
            if time.perf_counter() - start > time_cap:
                killed.append(f"did not finish (time cap {time_cap:.0f} s)")
                proc.kill()
                return
            time.sleep(0.05)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    stdout, stderr = proc.communicate()
    watcher.join()
    elapsed = time.perf_counter() - start
    if killed:
        return {"dnf": killed[0], "process_s": elapsed, "peak_rss_mb": peak[0]}
    line = next((ln for ln in stdout.splitlines() if ln.startswith("BENCH-RESULT ")), None)
    if line is None:
        return {"error": f"crashed (exit {proc.returncode}): {stderr.strip()[-240:]}", "process_s": elapsed}
    result: dict[str, Any] = json.loads(line.removeprefix("BENCH-RESULT "))
    result["process_s"] = elapsed
    return result


def measure(python: str | None, system: str, spec: Path, args: argparse.Namespace) -> dict[str, Any]:
    if python is None:
        return {"error": "skipped: no FastMCP interpreter"}
    peer = system in ("adk", "fastmcp")
    cap = args.time_cap if peer else args.time_cap * 5
    memory = args.memory_cap_mb if peer else args.memory_cap_mb * 4
    runs: list[dict[str, Any]] = []
    for _ in range(args.repeat):
        run = measure_once(python, system, spec, cap, memory)
        runs.append(run)
        if "dnf" in run or "error" in run:
            return run
    out: dict[str, Any] = {"runs": len(runs), "tools": runs[0]["tools"]}
    for key in ("process_s", "work_s", "work_cpu_s", "cpu_s", "import_s", "peak_rss_mb"):
        values = [r[key] for r in runs]
        out[key] = round(statistics.median(values), 3)
        out[f"{key}_min"] = round(min(values), 3)
        out[f"{key}_max"] = round(max(values), 3)
    return out


def synthetic_specs() -> dict[str, Path]:
    from scopegate_lab.openapi_synth import SUITE, expandable_web

    SYNTHETIC_DIR.mkdir(parents=True, exist_ok=True)
    out: dict[str, Path] = {}
    for name, (schemas, operations) in SUITE.items():
        path = SYNTHETIC_DIR / f"{name}.json"
        if not path.exists():
            path.write_text(json.dumps(expandable_web(schemas, operations)), "utf-8")
        out[name] = path
    return out


def all_specs() -> dict[str, Path]:
    from scopegate.openapi.discover import find_documents

    specs = {p.relative_to(DATA).as_posix(): p for p in find_documents(DATA)}
    specs.update(synthetic_specs())
    return specs


def _cell(r: dict[str, Any], key: str, unit: str) -> str:
    if "dnf" in r:
        return r["dnf"]
    if "error" in r:
        return "fails: " + r["error"][:90]
    med, lo, hi = r[key], r[f"{key}_min"], r[f"{key}_max"]
    return f"{med:.2f} {unit} ({lo:.2f}–{hi:.2f})" if unit == "s" else f"{med:.0f} MB"


def render(report: dict[str, Any]) -> str:
    m = report["machine"]
    lines = [
        "# Loading OpenAPI specs into tools: scopegate vs ADK vs FastMCP",
        "",
        f"{m['when']}, {m['cpus']} cores, Python {m['python']}, load average at start {report['loadavg']}. "
        f"Median of {report['repeat']} fresh processes per cell (min–max); peers capped at "
        f"{report['time_cap']} s and {report['memory_cap_mb']} MB. **Provisional** while the machine is shared.",
        "Work per cell: " + "; ".join(f"`{k}`: {v}" for k, v in WORK.items()) + ". "
        "`work` excludes imports (wall time; `work CPU` the CPU time of the same, which a busy shared machine "
        "inflates less); `process` is the whole fresh process as the parent sees it. "
        "ADK and FastMCP get the root document only: neither follows external `$ref`s (multi-file specs).",
        "",
        "| spec | ops | system | tools | work s | work CPU s | process s | peak RSS |",
        "|---|---|---|---|---|---|---|---|",
    ]
    reruns = [
        f"Re-run {rerun['when']} (load {rerun['loadavg']}): {', '.join(rerun['systems'])}"
        + (f" on {', '.join(rerun['specs'])}." if rerun.get("specs") else " on every spec.")
        for rerun in report.get("reruns", [])
    ]
    if reruns:
        reruns.append(
            "Cells measured before 2026-12-01T11:05Z and not re-run report peak RSS as ru_maxrss, which Linux "
            "carries over from the forking parent: a figure at or below ~112 MB there is the parent's, not the peer's."
        )
    lines[4:4] = reruns
    for spec, cells in report["results"].items():
        for system, r in cells.items():
            tools = r.get("tools", "–")
            lines.append(
                f"| {spec} | {report['operations'].get(spec, '')} | {system} | {tools} | {_cell(r, 'work_s', 's')} "
                f"| {_cell(r, 'work_cpu_s', 's')} | {_cell(r, 'process_s', 's')} "
                f"| {_cell(r, 'peak_rss_mb', 'MB') if 'peak_rss_mb_min' in r else '–'} |"
            )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--worker", nargs=2, metavar=("SYSTEM", "SPEC"), help=argparse.SUPPRESS)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--time-cap", type=float, default=120.0, help="seconds per peer process")
    parser.add_argument("--memory-cap-mb", type=float, default=4096.0, help="peak RSS per peer process")
    parser.add_argument("--systems", default=",".join(SYSTEMS))
    parser.add_argument("--specs", default="", help="comma-separated spec names (default: all)")
    parser.add_argument("--merge", action="store_true", help="replace only these cells in the existing results")
    args = parser.parse_args(argv)
    if args.worker:
        run_worker(*args.worker)
        return 0
    if not DATA.is_dir():
        print(f"skipped: shared data not found at {DATA}", file=sys.stderr)
        return 0
    from _common import machine, write_results

    from scopegate.openapi.loader import load_document

    specs = all_specs()
    if args.specs:
        specs = {k: v for k, v in specs.items() if k in args.specs.split(",")}
    systems = args.systems.split(",")
    fastmcp = ensure_fastmcp() if "fastmcp" in systems else None
    report: dict[str, Any] = {
        "machine": machine(),
        "loadavg": [round(x, 2) for x in os.getloadavg()],
        "repeat": args.repeat,
        "time_cap": args.time_cap,
        "memory_cap_mb": args.memory_cap_mb,
        "operations": {},
        "results": {},
    }
    for name, path in specs.items():
        report["operations"][name] = len(load_document(path, allow_external_refs=True).infos())
        report["results"][name] = {}
        for system in systems:
            python = str(fastmcp) if system == "fastmcp" and fastmcp else sys.executable
            result = measure(None if system == "fastmcp" and not fastmcp else python, system, path, args)
            report["results"][name][system] = result
            print(f"{name:45s} {system:14s} {json.dumps(result)[:200]}", flush=True)
    report["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
    previous = REPO / "bench" / "results" / "openapi_load.json"
    if args.merge and previous.is_file():
        old = json.loads(previous.read_text("utf-8"))
        for name, cells in report["results"].items():
            old["results"].setdefault(name, {}).update(cells)
        old["operations"].update(report["operations"])
        old.setdefault("reruns", []).append(
            {
                "when": report["machine"]["when"],
                "systems": systems,
                "specs": sorted(report["results"]) if args.specs else [],
                "loadavg": report["loadavg"],
            }
        )
        report = old
    write_results("openapi_load", report, render(report))
    print(render(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
