"""``python -m scopegate_lab.hostile --port 8090``: the hostile upstream in the foreground."""

from __future__ import annotations

import argparse

from scopegate_lab.hostile.server import serve_forever


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--prebuild", action="store_true", help="make every bomb before serving")
    args = parser.parse_args()
    serve_forever(args.port, prebuild=args.prebuild)


if __name__ == "__main__":
    main()
