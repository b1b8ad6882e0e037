"""The side-by-side table of bench/results/catalog_eval_<spec>_<mode>.json (written by bench_catalog_eval.py).

    .venv/bin/python bench/catalog_eval_table.py      # prints Markdown for bench/results/catalog_eval.md

One row per run, then the same rates over only the cases both modes ran (a reduced flat allowlist
skips a few cases, and a run stopped at the deadline covers a prefix), so flat and catalog are
compared on the same cases. Per case kind too (read, write, declines, ownership, injection).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"
MODES = ("flat-reduced", "catalog")


def load(spec: str, mode: str) -> dict[str, Any] | None:
    path = RESULTS / f"catalog_eval_{spec}_{mode}.json"
    if not path.is_file():
        return None
    data = json.loads(path.read_text("utf-8"))
    return {"set": data["sets"][0], "service": data.get("service", {})}


def rates(cases: list[dict[str, Any]]) -> dict[str, Any]:
    turns = [(t, EXPECTS[c["eval_id"]][i]) for c in cases for i, t in enumerate(c["turns"])]
    tool = [t for t, expects in turns if expects]
    decline = [t for t, expects in turns if not expects]
    seconds = sorted(c["seconds"] for c in cases)

    def rate(hits: int, n: int) -> str:
        return f"{hits / n:.2f}" if n else "-"

    return {
        "cases": len(cases),
        "right tool": rate(sum(t["right_tool"] for t in tool), len(tool)),
        "exact args": rate(sum(t["exact_args"] for t in tool), len(tool)),
        "correct decline": rate(sum(t["declined"] for t in decline), len(decline)),
        "pass": rate(sum(c["passed"] for c in cases), len(cases)),
        "scope violations": sum(c["scope_violations"] for c in cases),
        "unconfirmed writes": sum(c["unconfirmed_writes"] for c in cases),
        "unwanted writes (denied)": sum(c["unwanted_writes"] for c in cases),
        "errors": sum(c["error"] is not None for c in cases),
        "s/case": f"{sum(seconds) / len(seconds):.1f}" if seconds else "-",
    }


EXPECTS: dict[str, list[bool]] = {}  # eval_id -> whether each turn expects a call (else a decline)


def table(rows: list[tuple[str, dict[str, Any]]]) -> list[str]:
    keys = list(rows[0][1]) if rows else []
    out = ["| row | " + " | ".join(keys) + " |", "|---" * (len(keys) + 1) + "|"]
    out += [f"| {label} | " + " | ".join(str(r[k]) for k in keys) + " |" for label, r in rows]
    return out


def main() -> None:
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    from scopegate.evals.evalset import load_eval_set

    lines: list[str] = []
    for spec in ("chargebee", "cloudflare"):
        eval_set = load_eval_set(Path(__file__).resolve().parent / "evalsets" / "catalog" / f"{spec}.evalset.json")
        tags = {c.eval_id: (c.spec.tags or ("",))[0] for c in eval_set.cases}
        EXPECTS.update({c.eval_id: [bool(t.expect) for t in c.spec.turns] for c in eval_set.cases})
        runs = {m: r for m in MODES if (r := load(spec, m)) is not None}
        if not runs:
            continue
        lines += [f"### {spec} ({len(eval_set.cases)} cases)", ""]
        flat = load(spec, "flat")
        if flat is not None:
            errors = {c["error"] for c in flat["set"]["runs"][0] if c["error"]}
            sizes = sorted({m.group(0) for e in errors if (m := re.search(r"prompt is \d+ tokens", e))})
            lines += [
                f"- flat, whole allowlist: {len(flat['set']['runs'][0])} of {len(flat['set']['runs'][0])} cases "
                f"CONTEXT_OVERFLOW ({', '.join(sizes)} against a window of 8,192); nothing reached the service.",
                "",
            ]
        rows = [(f"{m}, all it ran", rates(r["set"]["runs"][0])) for m, r in runs.items()]
        common = set.intersection(*({c["eval_id"] for c in r["set"]["runs"][0]} for r in runs.values()))
        if len(runs) > 1:
            for m, r in runs.items():
                rows.append((f"{m}, common cases", rates([c for c in r["set"]["runs"][0] if c["eval_id"] in common])))
        lines += [*table(rows), ""]
        kinds = sorted({tags[i] for i in common})
        krows = []
        for m, r in runs.items():
            for kind in kinds:
                chosen = [c for c in r["set"]["runs"][0] if c["eval_id"] in common and tags[c["eval_id"]] == kind]
                krows.append((f"{m} / {kind}", rates(chosen)))
        lines += ["By kind (common cases):", "", *table(krows), ""]
        for m, r in runs.items():
            service = r["service"]
            if service:
                lines.append(
                    f"- {m}: the service saw {service.get('requests', 0)} requests, "
                    f"{service.get('writes_reached_service', 0)} writes reached it"
                )
        lines.append("")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
