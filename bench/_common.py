"""Shared helpers for benchmarks: percentiles, a fast generated corpus, result files."""

from __future__ import annotations

import json
import platform
import random
import statistics
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from scopegate.demo.corpus import (
    BODY_CLOSERS,
    BODY_DETAILS,
    BODY_MIDDLES,
    BODY_OPENERS,
    ERROR_CODES,
    PRODUCTS,
    STATUSES,
    SUBJECTS,
    WALLETS,
)

RESULTS = Path(__file__).resolve().parent / "results"


def percentiles(samples_ms: list[float]) -> dict[str, float]:
    s = sorted(samples_ms)
    if not s:
        return {}

    def q(p: float) -> float:
        return round(s[min(len(s) - 1, int(p * len(s)))], 4)

    return {"p50": q(0.50), "p95": q(0.95), "p99": q(0.99), "mean": round(statistics.fmean(s), 4), "n": len(s)}


def generated_tickets(count: int, tenants: int = 40, seed: int = 11) -> Iterator[dict[str, Any]]:
    """``count`` tickets over ``tenants`` tenants, same templates as the demo corpus."""
    rng = random.Random(seed)
    tenant_names = [f"tenant{t:03d}" for t in range(tenants)]
    for i in range(count):
        product = PRODUCTS[i % 4]
        code, slug = rng.choice(ERROR_CODES[product])
        fill = {"wallet": rng.choice(WALLETS), "code": code, "slug": slug, "n": rng.randint(3, 400)}
        yield {
            "ticket_id": f"T{i:08d}",
            "tenant_id": tenant_names[i % tenants],
            "product": product,
            "status": rng.choice(STATUSES),
            "subject": rng.choice(SUBJECTS[product]).format(**fill),
            "body": " ".join(
                (
                    rng.choice(BODY_OPENERS),
                    rng.choice(BODY_MIDDLES[product]).format(**fill),
                    rng.choice(BODY_DETAILS).format(**fill),
                    rng.choice(BODY_CLOSERS).format(**fill),
                )
            ),
        }


QUERIES = [
    "apple pay refund failed",
    "E4012",
    "card_declined",
    "payout delayed bank",
    "invoice total wrong",
    "selfie check fails",
    "PSP-502 processor",
    "refund window expired",
    "charged twice",
    "KYC rejected document",
]


def query_plan(n: int, tenants: int = 40, seed: int = 5) -> list[tuple[str, str, str | None]]:
    rng = random.Random(seed)
    return [
        (rng.choice(QUERIES), f"tenant{rng.randrange(tenants):03d}", rng.choice([None, rng.choice(PRODUCTS)]))
        for _ in range(n)
    ]


def cpu_model() -> str:
    """The CPU's model and clock as Linux reports them (a virtual machine's host can change between runs,
    and with it every timing: the figures say which one measured them)."""
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return platform.processor() or "unknown"
    info = dict(line.split(":", 1) for line in lines if ":" in line)
    fields = {k.strip(): v.strip() for k, v in info.items()}
    model, mhz, bogomips = (fields.get(k, "?") for k in ("model name", "cpu MHz", "bogomips"))
    return f"{model}, {mhz} MHz, bogomips {bogomips}"


def machine() -> dict[str, Any]:
    import os

    return {
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "cpu": cpu_model(),
        "platform": platform.platform(),
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def write_results(name: str, data: dict[str, Any], markdown: str) -> None:
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{name}.json").write_text(json.dumps(data, indent=2) + "\n", "utf-8")
    (RESULTS / f"{name}.md").write_text(markdown.rstrip() + "\n", "utf-8")
