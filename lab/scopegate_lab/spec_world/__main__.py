"""``python -m scopegate_lab.spec_world SPEC WORLD [--port N] [--url-file F]``: serve until interrupted."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from scopegate_lab.spec_world.server import SpecWorld, World


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("spec")
    parser.add_argument("world")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--url-file", help="write the base URL here once listening")
    args = parser.parse_args()
    server = SpecWorld(args.spec, World.load(args.world)).serve(args.port)
    url = f"http://127.0.0.1:{server.server_address[1]}"
    if args.url_file:
        Path(args.url_file).write_text(url + "\n", "utf-8")
    print(url, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        server.shutdown()


if __name__ == "__main__":
    main()
