"""Tool choice through the operation catalog on large real specs: `scopegate eval` over bench/evalsets/catalog.

Starts the spec's loopback world (lab/scopegate_lab/spec_world: every operation of the spec answered
from a small per-tenant world, on 127.0.0.1), then runs the real `scopegate eval` CLI on the spec's
eval set with the config of the chosen mode, and adds to its JSON report what the service saw (the
requests per operation, and the writes that reached it). Specs are read from ../shared/data/openapi.

    .venv/bin/python bench/bench_catalog_eval.py chargebee catalog
    .venv/bin/python bench/bench_catalog_eval.py cloudflare flat-reduced --case cf-zone ...
    .venv/bin/python bench/bench_catalog_eval.py chargebee catalog --model offline:1.5b --label 1.5b

Writes bench/results/catalog_eval_<spec>_<mode>[_<label>].{md,json}. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SETS = REPO / "bench" / "evalsets" / "catalog"
RESULTS = REPO / "bench" / "results"
SPECS = {"chargebee": "chargebee_api_v1_spec.json", "cloudflare": "cloudflare-openapi-2024-06-27.json"}
URL_ENV = {"chargebee": "CHARGEBEE_URL", "cloudflare": "CLOUDFLARE_URL"}
SECRETS = {"CHARGEBEE_API_KEY": "eval-key", "CLOUDFLARE_API_TOKEN": "eval-token"}  # the loopback world ignores them


def spec_dir() -> Path:
    for candidate in (REPO.parent / "shared" / "data" / "openapi", Path("/work/shared/data/openapi")):
        if candidate.is_dir():
            return candidate
    raise SystemExit("no ../shared/data/openapi")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("spec", choices=sorted(SPECS))
    parser.add_argument("mode", help="catalog | flat | flat-reduced (the config <spec>.<mode>.yaml)")
    parser.add_argument("--model", default="offline:0.5b")
    parser.add_argument("--label", default="", help="suffix of the result files (e.g. 1.5b)")
    parser.add_argument("--case", action="append", default=[], help="only this eval_id (repeatable)")
    args = parser.parse_args()

    sys.path.insert(0, str(REPO / "lab"))
    from scopegate_lab.spec_world import CALLS_PATH, SpecWorld, World

    specs = spec_dir()
    world = SpecWorld(specs / SPECS[args.spec], World.load(SETS / f"{args.spec}.world.json"))
    server = world.serve()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    stem = f"catalog_eval_{args.spec}_{args.mode}" + (f"_{args.label}" if args.label else "")
    out_json, out_md = RESULTS / f"{stem}.json", RESULTS / f"{stem}.md"
    env = {**os.environ, URL_ENV[args.spec]: url, "SCOPEGATE_SPEC_DIR": str(specs), **SECRETS}
    command = [
        str(Path(sys.executable).with_name("scopegate")), "eval", str(SETS / f"{args.spec}.evalset.json"),
        "--config", str(SETS / f"{args.spec}.{args.mode}.yaml"), "--model", args.model,
        "--json", str(out_json), "--markdown", str(out_md),
    ]  # fmt: skip
    for case in args.case:
        command += ["--case", case]
    print(" ".join(command), flush=True)
    code = subprocess.call(command, env=env, cwd=REPO)
    with urllib.request.urlopen(url + CALLS_PATH, timeout=10) as response:
        calls = json.load(response)["calls"]
    server.shutdown()
    by_operation: dict[str, int] = {}
    for call in calls:
        key = f"{call['method']} {call['operation_id']}"
        by_operation[key] = by_operation.get(key, 0) + 1
    writes = [c for c in calls if c["method"] != "GET" and c["status"] < 400]
    service = {
        "requests": len(calls),
        "requests_per_operation": dict(sorted(by_operation.items())),
        "writes_reached_service": len(writes),
        "writes": [{"operation": c["operation_id"], "path": c["path"], "body": c["body"]} for c in writes],
    }
    if out_json.is_file():
        report = json.loads(out_json.read_text("utf-8"))
        report["service"] = service
        out_json.write_text(json.dumps(report, indent=1, default=str) + "\n", "utf-8")
    print(json.dumps({k: v for k, v in service.items() if k != "writes"}, indent=1))
    return code


if __name__ == "__main__":
    raise SystemExit(main())
