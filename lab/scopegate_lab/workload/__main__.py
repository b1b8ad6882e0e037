"""``python -m scopegate_lab.workload generate --docs 2000000 --out .cache/workload/w2m``

Writes JSONL shards, queries.json, spec.json and manifest.json (see
:mod:`scopegate_lab.workload.corpus`). About 2 minutes per million tickets
with 2 workers on a quiet 2-core machine; 3.5 KB of JSON per ticket on average
(2M tickets: about 7 GB).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from scopegate_lab.workload.corpus import CorpusSettings, generate_corpus


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scopegate_lab.workload", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    gen = sub.add_parser("generate", help="write a corpus folder (kept shards are not rewritten)")
    gen.add_argument("--out", required=True, help="corpus folder, e.g. .cache/workload/w2m")
    gen.add_argument("--docs", type=int, default=2_000_000)
    gen.add_argument("--seed", type=int, default=13)
    gen.add_argument("--tenants", type=int, default=40)
    gen.add_argument("--shard-docs", type=int, default=100_000)
    gen.add_argument("--queries", type=int, default=2400)
    gen.add_argument("--workers", type=int, default=2)
    gen.add_argument("--nice", type=int, default=10, help="niceness of the worker processes (default 10)")
    gen.add_argument("--data", default=None, help="shared data folder (default $SCOPEGATE_SHARED_DATA, ../shared/data)")
    args = parser.parse_args(argv)
    settings = CorpusSettings(args.docs, args.seed, args.tenants, args.shard_docs, args.queries)
    manifest = generate_corpus(
        args.out,
        settings,
        workers=args.workers,
        niceness=args.nice,
        data_root=args.data,
        log=lambda message: print(message, file=sys.stderr, flush=True),
    )
    print(json.dumps({k: v for k, v in manifest.items() if k != "shards"}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
