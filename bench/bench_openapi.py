"""OpenAPI spec -> tool declarations: scopegate vs ADK OpenAPIToolset vs FastMCP.from_openapi.

One run measures, on the GitHub (3 MB JSON) and OpenAI (3 MB YAML, OAS 3.1)
specs, each in a fresh subprocess (median of --repeat runs):

* scopegate: load + select + translate a 5-operation allowlist, and all operations
  (YAML through scopegate.documents: libyaml events, see bench_yaml.py);
* google.adk.tools.openapi_tool.OpenAPIToolset: construct tools + declarations;
* fastmcp.FastMCP.from_openapi: construct the server + list its tools.

FastMCP 4.1.7 conflicts with google-adk's opentelemetry pin, so it runs from a
separate virtualenv: set FASTMCP_PYTHON (default /tmp/fastmcp-venv/bin/python;
create it with `python -m venv /tmp/fastmcp-venv && /tmp/fastmcp-venv/bin/pip
install fastmcp==4.1.7 pyyaml`). It is skipped, with the reason recorded, when
that interpreter is missing.

Per measurement: `parse_s` (read + parse the spec file; the peers get PyYAML's
libyaml CSafeLoader or json, scopegate uses its own loader), `build_s` (tools +
declarations from the parsed document), `total_s` (parse + build, excluding
library import), `import_s`, `process_s` (whole subprocess wall time, as
seen by the parent), `peak_rss_mb` (ru_maxrss of the subprocess), and
`decl_chars`: compact JSON size of name + description + parameters of the
allowlisted tools, i.e. what the model is sent on every turn.

    .venv/bin/python bench/bench_openapi.py [--repeat 3]

Writes bench/results/openapi.json and bench/results/openapi.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data" / "openapi"
RESULTS = REPO / "bench" / "results"

SPECS: dict[str, dict[str, Any]] = {
    "github": {
        "file": "github-api.github.com-v0.0.5.json",
        "allow": [
            "repos/get",
            "issues/list-for-repo",
            "issues/get",
            "pulls/list",
            "search/issues-and-pull-requests",
        ],
    },
    "openai": {
        "file": "openai-openapi.yaml",
        "allow": ["listModels", "retrieveModel", "listFiles", "retrieveFile", "createEmbedding"],
    },
}
SYSTEMS = ("scopegate", "adk", "fastmcp")
MODES = ("allow5", "all")


def _compact(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def _parse_for_peer(path: Path) -> Any:
    data = path.read_bytes()
    if path.suffix == ".json":
        return json.loads(data)
    import yaml

    return yaml.load(data, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


# ----------------------------------------------------------------- workers
def worker_scopegate(path: Path, allow: list[str] | None) -> dict[str, Any]:
    t0 = time.perf_counter()
    from scopegate.openapi.loader import load_document
    from scopegate.openapi.select import Selection, select_operations
    from scopegate.openapi.translate import translate

    t1 = time.perf_counter()
    doc = load_document(path)
    t2 = time.perf_counter()
    chosen = select_operations(doc.infos(), Selection.build(allow=allow)) if allow else None
    translation = translate(doc, chosen)
    decls = [t.function_declaration() for t in translation.tools]
    t3 = time.perf_counter()
    wanted = set(allow or [])
    chars = sum(
        len(_compact(d.model_dump(exclude_none=True, mode="json")))
        for t, d in zip(translation.tools, decls, strict=True)
        if not wanted or t.operation.operation_id in wanted
    )
    return {"import_s": t1 - t0, "parse_s": t2 - t1, "build_s": t3 - t2, "tools": len(decls), "decl_chars": chars}


def worker_adk(path: Path, allow: list[str] | None) -> dict[str, Any]:
    import asyncio

    t0 = time.perf_counter()
    from google.adk.tools.openapi_tool import OpenAPIToolset

    t1 = time.perf_counter()
    spec = _parse_for_peer(path)
    t2 = time.perf_counter()
    toolset = OpenAPIToolset(spec_dict=spec)
    tools = asyncio.run(toolset.get_tools())
    if allow:
        wanted = set(allow)
        tools = [t for t in tools if getattr(getattr(t, "operation", None), "operationId", None) in wanted]
    decls = [t._get_declaration() for t in tools]
    t3 = time.perf_counter()
    chars = sum(len(_compact(d.model_dump(exclude_none=True, mode="json"))) for d in decls) if allow else 0
    return {"import_s": t1 - t0, "parse_s": t2 - t1, "build_s": t3 - t2, "tools": len(decls), "decl_chars": chars}


def worker_fastmcp(path: Path, allow: list[str] | None) -> dict[str, Any]:
    import asyncio

    t0 = time.perf_counter()
    import fastmcp
    from fastmcp.server.providers.openapi.routing import MCPType, RouteMap

    t1 = time.perf_counter()
    spec = _parse_for_peer(path)
    t2 = time.perf_counter()
    if allow:
        wanted = set(allow)

        def route_map_fn(route: Any, mcp_type: Any) -> Any:
            return MCPType.TOOL if route.operation_id in wanted else MCPType.EXCLUDE

        server = fastmcp.FastMCP.from_openapi(
            spec, route_maps=[RouteMap(mcp_type=MCPType.TOOL)], route_map_fn=route_map_fn
        )
    else:
        server = fastmcp.FastMCP.from_openapi(spec, route_maps=[RouteMap(mcp_type=MCPType.TOOL)])
    tools = asyncio.run(server.list_tools())
    declared = [{"name": t.name, "description": t.description, "inputSchema": t.parameters} for t in tools]
    t3 = time.perf_counter()
    chars = sum(len(_compact(d)) for d in declared) if allow else 0
    return {"import_s": t1 - t0, "parse_s": t2 - t1, "build_s": t3 - t2, "tools": len(declared), "decl_chars": chars}


def run_worker(system: str, spec_path: str, allow: str) -> None:
    path = Path(spec_path)
    ops = [a for a in allow.split(",") if a] if allow else None
    fn = {
        "scopegate": worker_scopegate,
        "adk": worker_adk,
        "fastmcp": worker_fastmcp,
    }[system]
    try:
        out = fn(path, ops)
        out["total_s"] = out["parse_s"] + out["build_s"]
    except Exception as exc:  # the peers' failures are results, not crashes of the benchmark
        out = {"error": f"{type(exc).__name__}: {str(exc)[:300]}"}
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print("BENCH-RESULT " + json.dumps(out))


# ------------------------------------------------------------------ parent
def _python_for(system: str) -> str | None:
    if system == "fastmcp":
        candidate = os.environ.get("FASTMCP_PYTHON", "/tmp/fastmcp-venv/bin/python")
        return candidate if Path(candidate).exists() else None
    return sys.executable


def measure(system: str, spec: str, mode: str, repeat: int) -> dict[str, Any]:
    python = _python_for(system)
    if python is None:
        return {"error": "skipped: no FastMCP interpreter (set FASTMCP_PYTHON)"}
    info = SPECS[spec]
    allow = ",".join(info["allow"]) if mode == "allow5" else ""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO / "src") + os.pathsep + env.get("PYTHONPATH", "")
    env.setdefault("PYTHONWARNINGS", "ignore")
    runs: list[dict[str, Any]] = []
    for _ in range(repeat):
        start = time.perf_counter()
        proc = subprocess.run(
            [python, __file__, "--worker", system, str(DATA / info["file"]), allow],
            capture_output=True,
            text=True,
            env=env,
            timeout=600,
            check=False,
        )
        elapsed = time.perf_counter() - start
        line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("BENCH-RESULT ")), None)
        if line is None:
            return {"error": f"worker crashed (exit {proc.returncode}): {proc.stderr.strip()[-300:]}"}
        result = json.loads(line.removeprefix("BENCH-RESULT "))
        result["process_s"] = elapsed
        runs.append(result)
        if "error" in result:
            return result
    merged: dict[str, Any] = {"runs": len(runs)}
    for key in ("import_s", "parse_s", "build_s", "total_s", "process_s", "peak_rss_mb"):
        merged[key] = round(statistics.median(r[key] for r in runs), 4)
    merged["tools"] = runs[0]["tools"]
    merged["decl_chars"] = runs[0]["decl_chars"]
    return merged


def _fmt(value: Any, unit: str = "") -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.3f}{unit}" if unit == " s" else f"{value:.0f}{unit}"
    return f"{value}{unit}"


def render_md(report: dict[str, Any]) -> str:
    lines = [
        "# OpenAPI -> tool declarations: scopegate vs peers",
        "",
        f"Machine: {report['machine']}. Median of {report['repeat']} fresh subprocesses per cell. "
        "`total` = parse + build (library import excluded; shown separately). "
        "Peers parse YAML with PyYAML's libyaml CSafeLoader; scopegate uses scopegate.documents (libyaml events).",
        "",
        "| spec | ops | system | parse s | build s | total s | import s | process s | peak RSS MB | tools "
        "| decl chars |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for spec, modes in report["results"].items():
        for mode, systems in modes.items():
            for system, r in systems.items():
                if "error" in r:
                    lines.append(f"| {spec} | {mode} | {system} | fails: {r['error']} |||||||| ")
                    continue
                lines.append(
                    f"| {spec} | {mode} | {system} | {_fmt(r['parse_s'], ' s')} | {_fmt(r['build_s'], ' s')} | "
                    f"{_fmt(r['total_s'], ' s')} | {_fmt(r['import_s'], ' s')} | {_fmt(r['process_s'], ' s')} | "
                    f"{_fmt(r['peak_rss_mb'])} | {r['tools']} | {r['decl_chars'] or '–'} |"
                )
    lines += ["", "## Speed-ups (peer total / scopegate total)", ""]
    for spec, modes in report["results"].items():
        for mode, systems in modes.items():
            ours = systems.get("scopegate", {})
            for peer in ("adk", "fastmcp"):
                theirs = systems.get(peer, {})
                if "total_s" in ours and "total_s" in theirs:
                    ratio = theirs["total_s"] / max(ours["total_s"], 1e-9)
                    proc = theirs["process_s"] / max(ours["process_s"], 1e-9)
                    lines.append(
                        f"- {spec} {mode}: {ratio:.1f}x faster than {peer} (whole process incl. imports: {proc:.1f}x)"
                    )
                elif "error" in theirs:
                    lines.append(f"- {spec} {mode}: {peer} fails ({theirs['error'][:120]})")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--worker", nargs=3, metavar=("SYSTEM", "SPEC", "ALLOW"), help=argparse.SUPPRESS)
    parser.add_argument("--repeat", type=int, default=3, help="fresh subprocesses per cell (median reported)")
    parser.add_argument("--specs", default="github,openai", help="comma-separated subset of: github,openai")
    parser.add_argument("--systems", default=",".join(SYSTEMS), help="comma-separated subset of systems")
    args = parser.parse_args(argv)
    if args.worker:
        run_worker(*args.worker)
        return 0
    if not DATA.is_dir():
        print(f"skipped: shared data not found at {DATA}", file=sys.stderr)
        return 0
    report: dict[str, Any] = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "repeat": args.repeat,
        "results": {},
    }
    for spec in args.specs.split(","):
        report["results"][spec] = {}
        for mode in MODES:
            report["results"][spec][mode] = {}
            for system in args.systems.split(","):
                result = measure(system, spec, mode, args.repeat)
                report["results"][spec][mode][system] = result
                print(f"{spec:7s} {mode:7s} {system:10s} {json.dumps(result)}", flush=True)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "openapi.json").write_text(json.dumps(report, indent=2) + "\n", "utf-8")
    (RESULTS / "openapi.md").write_text(render_md(report), "utf-8")
    print((RESULTS / "openapi.md").read_text("utf-8"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
