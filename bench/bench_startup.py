"""Start-up cost a user pays: `import scopegate`, `scopegate --version`, a CLI search on an embedded index.

Each figure is a whole fresh process (what a user or a shell script pays), timed from the parent
with ``time.perf_counter``; runs alternate between the measured commands so a burst of noise on the
host hits all of them alike. The module count comes from ``-X importtime``. Figures go to
bench/results/startup.md and .json (one labelled run appended per call: ``--label before|after``).

    python bench/bench_startup.py --label after [--runs 15]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"
TARGETS_MS = {"import scopegate": 150.0, "scopegate --version": 300.0, "scopegate search (embedded)": 600.0}


def _scopegate() -> list[str]:
    exe = Path(sys.executable).with_name("scopegate")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "scopegate.cli"]


def _timed(cmd: list[str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=False)
    elapsed = (time.perf_counter() - start) * 1000
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({done.returncode}): {done.stderr[-2000:]}")
    return elapsed


def _module_count(code: str) -> int:
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", code], capture_output=True, text=True, check=True)
    return sum(1 for line in done.stderr.splitlines() if line.startswith("import time:") and "|" in line) - 1


def _build_index(folder: Path) -> Path:
    """A small demo index (the demo's ticket corpus) built once, outside the timed runs."""
    from scopegate.backends.embedded import EmbeddedBackend
    from scopegate.demo.corpus import generate_tickets, ticket_spec

    index = folder / "tickets"
    backend = EmbeddedBackend(ticket_spec(), index)
    backend.ingest_sync(list(generate_tickets(per_tenant=200)), batch_size=500)
    backend.close()
    return index


def measure(runs: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        index = _build_index(Path(tmp))
        commands = {
            "import scopegate": [sys.executable, "-c", "import scopegate"],
            "scopegate --version": [*_scopegate(), "--version"],
            "scopegate search (embedded)": [*_scopegate(), "search", str(index), "refund failed", "--tenant", "acme"],
        }
        for cmd in commands.values():  # warm the page cache and the bytecode caches once
            _timed(cmd)
        samples: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(runs):
            for name, cmd in commands.items():
                samples[name].append(_timed(cmd))
    rows = {}
    for name, values in samples.items():
        ordered = sorted(values)
        rows[name] = {
            "p50_ms": round(statistics.median(ordered), 1),
            "min_ms": round(ordered[0], 1),
            "max_ms": round(ordered[-1], 1),
            "p90_ms": round(ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))], 1),
            "target_ms": TARGETS_MS[name],
            "runs": len(ordered),
        }
    modules = {
        "import scopegate": _module_count("import scopegate"),
        "import scopegate.cli": _module_count("import scopegate.cli"),
    }
    return {"rows": rows, "modules": modules}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--label", default="after")
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    figures = measure(args.runs)
    entry = {
        "label": args.label,
        "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "python": sys.version.split()[0],
        "load_1min": round(os.getloadavg()[0], 2),
        **figures,
    }
    RESULTS.mkdir(exist_ok=True)
    json_path = RESULTS / "startup.json"
    history = json.loads(json_path.read_text()) if json_path.exists() else []
    history = [h for h in history if h.get("label") != args.label] + [entry]
    json_path.write_text(json.dumps(history, indent=2) + "\n")
    lines = [
        "# Start-up cost (bench/bench_startup.py)",
        "",
        "Whole fresh processes timed from the parent, runs interleaved; ms p50 (min-max, p90).",
        "The search row is `scopegate search INDEX 'refund failed' --tenant acme` on a 1,600-ticket embedded index.",
        "",
    ]
    for run in history:
        lines += [
            f"## {run['label']} ({run['when']}, Python {run['python']}, load {run['load_1min']})",
            "",
            "| command | p50 | min-max | p90 | target |",
            "|---|---|---|---|---|",
        ]
        for name, row in run["rows"].items():
            spread = f"{row['min_ms']}-{row['max_ms']}"
            lines.append(f"| `{name}` | {row['p50_ms']} | {spread} | {row['p90_ms']} | <= {row['target_ms']:.0f} |")
        lines += ["", "Modules loaded: " + ", ".join(f"`{k}` {v}" for k, v in run["modules"].items()), ""]
    (RESULTS / "startup.md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
