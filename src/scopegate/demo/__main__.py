"""``python -m scopegate.demo``: the worked example (docs/getting-started.md) (see also ``scopegate demo``)."""

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


def run_demo(workdir: str | None = None) -> int:
    """Run the worked example in ``workdir`` (kept), or in a temporary folder removed at the end (also on
    failure or Ctrl-C); 0 when every check passed."""
    if workdir:
        return asyncio.run(_main(workdir))
    with tempfile.TemporaryDirectory(prefix="scopegate-demo-", ignore_cleanup_errors=True) as scratch:
        return asyncio.run(_main(scratch))


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    return run_demo(args[0] if args else None)


if __name__ == "__main__":
    raise SystemExit(main())
