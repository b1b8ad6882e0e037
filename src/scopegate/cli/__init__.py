"""The ``scopegate`` command line: one click command tree, thin over the library.

Each command parses its arguments, calls one library function and prints the result;
:mod:`scopegate.cli.core` holds what they share (exit codes, error reports, output).
Every command and option has help text; ``tests/unit/test_cli_tree.py`` walks the tree.
"""

from __future__ import annotations

from collections.abc import Sequence

import click

from scopegate.cli import dashboard, engines, guard, openapi, reindex, search, server
from scopegate.cli.core import CONTEXT_SETTINGS, ExitCode, Group, run, version_option
from scopegate.evals import cli as evals_cli

__all__ = ["ExitCode", "cli", "main"]


@click.group(cls=Group, context_settings=CONTEXT_SETTINGS)
@version_option
def cli() -> None:
    """Safe, typed, tenant-scoped tools for LLM agents.

    Exit codes: 0 ok, 1 the command reports a failure, 2 usage error, 3 no index, 4 an optional extra or
    engine is not available, 130 interrupted, 141 stdout closed (see the README, "Exit codes")."""


for _module in (search, openapi, guard, dashboard, server, engines, reindex):
    for _command in _module.COMMANDS:
        cli.add_command(_command)
cli.add_command(evals_cli.eval_command)


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``scopegate`` with ``argv`` (default: the process's arguments) and return its exit code."""
    return run(cli, argv, prog_name="scopegate")
