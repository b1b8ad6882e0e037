"""``python -m scopegate.examples.orders --port 0``: serve the orders API on 127.0.0.1.

Prints ``listening on http://127.0.0.1:<port>`` once bound (port 0 picks a free one).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys

import uvicorn

from scopegate.examples.orders.app import create_app
from scopegate.examples.orders.server import bind_loopback


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scopegate.examples.orders", description=__doc__)
    parser.add_argument("--port", type=int, default=0, help="TCP port on 127.0.0.1 (0 picks a free port)")
    args = parser.parse_args(argv)
    sock = bind_loopback(args.port)
    port = sock.getsockname()[1]
    print(f"listening on http://127.0.0.1:{port}", flush=True)
    config = uvicorn.Config(create_app(), log_level="warning", access_log=False, lifespan="off")
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(uvicorn.Server(config).serve(sockets=[sock]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
