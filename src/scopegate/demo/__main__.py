"""``python -m scopegate.demo``: the worked example of the README (see also ``scopegate demo``)."""

from __future__ import annotations

import asyncio
import sys
import tempfile

from scopegate.demo.search_demo import run_search_demo


async def _main(workdir: str) -> int:
    summary = await run_search_demo(workdir)
    ok = bool(summary["ok"])
    try:
        from scopegate.demo.orders_demo import run_orders_demo
    except ImportError:
        return 0 if ok else 1
    print("\n\n##### Orders assistant (OpenAPI toolset against a real local service)")
    orders_ok = await run_orders_demo(print)
    return 0 if ok and orders_ok is not False else 1


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    workdir = args[0] if args else tempfile.mkdtemp(prefix="scopegate-demo-")
    return asyncio.run(_main(workdir))


if __name__ == "__main__":
    raise SystemExit(main())
