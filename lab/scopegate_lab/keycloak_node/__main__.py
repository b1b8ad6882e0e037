"""``python -m scopegate_lab.keycloak_node start|stop|status|url|build``: the identity provider of the tests.

The commands are scopegate's own node commands (:func:`scopegate.cli.engines.node_commands`) over the
Keycloak node manager; this entry point is apart from the manager so that the manager never imports the CLI."""

from __future__ import annotations

import sys

from scopegate.cli.engines import Engine, run_node_cli
from scopegate_lab.keycloak_node import KEYCLOAK_VERSION, node_from_options

KEYCLOAK = Engine(
    "keycloak",
    "Keycloak",
    f"A local Keycloak {KEYCLOAK_VERSION} (the identity provider of the tests, Maven Central).",
    node_from_options,
)

if __name__ == "__main__":
    sys.exit(run_node_cli(KEYCLOAK, sys.argv[1:], prog_name="python -m scopegate_lab.keycloak_node"))
