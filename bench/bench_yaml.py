"""What a native YAML parser would buy: scopegate.documents vs PyYAML's CSafeLoader vs yaml_rs.

Parses one YAML file (default: the 3 MB OpenAI spec in ../shared/data/openapi) with

* ``scopegate``: :func:`scopegate.documents.parse_yaml`, the one YAML path (libyaml events,
  every check: duplicate keys, tags, aliases, depth, scalar length);
* ``csafeloader``: ``yaml.load(Loader=yaml.CSafeLoader)``, what the peers and the old fallback used
  (``csafeloader_no_gc``: the same with the cyclic GC paused, as scopegate does);
* ``yaml_rs``: ``yaml_rs.loads`` in this process (the old fast path; built with panic=abort, so a
  parser panic ends the process);
* ``yaml_rs_subprocess``: the same in a child process that prints JSON the parent reads, i.e. the
  price of containing a crash.

yaml_rs is no longer a dependency: its rows are measured when it is installed
(``pip install yaml-rs==0.1.6``) and marked missing otherwise. Writes bench/results/yaml.json and
bench/results/yaml.md, with the load average and the date.

    .venv/bin/python bench/bench_yaml.py [--file PATH] [--repeat 5]     # about 15 s with yaml_rs
"""

from __future__ import annotations

import argparse
import datetime as dt
import gc
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from scopegate.documents import C_PARSER, parse_yaml
from scopegate.openapi.parse import SPEC_LIMITS

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results"


def _shared_openapi() -> Path:
    for base in (REPO.parent / "shared" / "data", Path("/work/shared/data")):
        if (base / "openapi").is_dir():
            return base / "openapi"
    raise SystemExit("../shared/data/openapi not found: pass --file")


def _without_gc(fn: Callable[[], Any]) -> Any:
    gc.disable()
    try:
        return fn()
    finally:
        gc.enable()


CHILD = (
    "import sys, json, yaml_rs; "
    "sys.stdout.write(json.dumps(yaml_rs.loads(open(sys.argv[1], encoding='utf-8').read(), parse_datetime=False)))"
)


def _systems(text: str, path: Path) -> dict[str, Callable[[], Any] | str]:
    systems: dict[str, Callable[[], Any] | str] = {
        "scopegate": lambda: parse_yaml(text, path.name, SPEC_LIMITS).data,
        "csafeloader": lambda: yaml.load(text, Loader=yaml.CSafeLoader),
        "csafeloader_no_gc": lambda: _without_gc(lambda: yaml.load(text, Loader=yaml.CSafeLoader)),
    }
    try:
        import yaml_rs  # type: ignore[import-not-found]
    except ImportError:
        systems["yaml_rs"] = systems["yaml_rs_subprocess"] = "yaml_rs not installed"
        return systems

    def in_child() -> Any:
        done = subprocess.run(
            [sys.executable, "-c", CHILD, str(path)], capture_output=True, text=True, timeout=60, check=True
        )
        return json.loads(done.stdout)

    systems["yaml_rs"] = lambda: yaml_rs.loads(text, parse_datetime=False)
    systems["yaml_rs_subprocess"] = in_child
    return systems


def run(path: Path, repeat: int) -> dict[str, Any]:
    text = path.read_text("utf-8")
    rows: dict[str, Any] = {}
    for name, fn in _systems(text, path).items():
        if isinstance(fn, str):
            rows[name] = {"missing": fn}
            continue
        fn()  # warm-up: imports, page cache
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
        rows[name] = {
            "median_s": round(statistics.median(times), 4),
            "min_s": round(min(times), 4),
            "max_s": round(max(times), 4),
            "runs": [round(t, 4) for t in times],
        }
    return {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "loadavg": [round(x, 2) for x in os.getloadavg()],
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "pyyaml": yaml.__version__,
        "libyaml": C_PARSER,
        "file": path.name,
        "bytes": path.stat().st_size,
        "repeat": repeat,
        "systems": rows,
    }


def render_md(report: dict[str, Any]) -> str:
    base = report["systems"]["scopegate"]["median_s"]
    lines = [
        "# YAML parsing: the one path (scopegate.documents) against the alternatives",
        "",
        f"{report['file']} ({report['bytes'] / 1e6:.1f} MB), {report['repeat']} runs after a warm-up, "
        f"{report['date']}, load average {report['loadavg']} on {report['cpus']} CPUs, Python {report['python']}, "
        f"PyYAML {report['pyyaml']} (libyaml: {report['libyaml']}). "
        "Shared machine: figures are provisional. `bench/bench_yaml.py` re-runs it.",
        "",
        "| parser | median s | min s | max s | vs scopegate |",
        "|---|---|---|---|---|",
    ]
    for name, row in report["systems"].items():
        if "missing" in row:
            lines.append(f"| {name} | {row['missing']} | | | |")
        else:
            lines.append(
                f"| {name} | {row['median_s']} | {row['min_s']} | {row['max_s']} | {row['median_s'] / base:.2f}x |"
            )
    lines += [
        "",
        "`scopegate` is the only YAML path (every check included: duplicate keys with lines, tags, aliases, depth, "
        "scalar length). yaml_rs is no longer a dependency (pre-1.0, built with panic=abort: a parser panic ends "
        "the process); `yaml_rs_subprocess` is what a crash-contained native path costs, process start and JSON "
        "transfer included, without any of those checks. A spec is parsed once, when its toolset is built.",
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--file", type=Path, default=None, help="YAML file (default: the OpenAI spec)")
    parser.add_argument("--repeat", type=int, default=5, help="timed runs per parser (default 5)")
    args = parser.parse_args(argv)
    path = args.file or _shared_openapi() / "openai-openapi.yaml"
    report = run(path, args.repeat)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "yaml.json").write_text(json.dumps(report, indent=2) + "\n", "utf-8")
    md = render_md(report)
    (RESULTS / "yaml.md").write_text(md, "utf-8")
    print(md)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
