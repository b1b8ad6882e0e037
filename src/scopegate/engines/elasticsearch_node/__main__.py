"""``python -m scopegate.engines.elasticsearch_node start|stop|status|url|build``: the engine's commands alone.

The command line lives in :mod:`scopegate.cli.engines`; this entry point is apart from the node manager
so that the manager never imports the CLI (no import circle)."""

from __future__ import annotations

import sys

from scopegate.cli.engines import run_node_cli

if __name__ == "__main__":
    sys.exit(run_node_cli("elasticsearch", sys.argv[1:], prog_name="python -m scopegate.engines.elasticsearch_node"))
