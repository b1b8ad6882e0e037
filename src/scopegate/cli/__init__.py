"""The ``scopegate`` command line: one click command tree, thin over the library.

Each command parses its arguments, calls one library function and prints the result;
:mod:`scopegate.cli.core` holds what they share (exit codes, error reports, output).
Every command and option has help text; ``tests/unit/test_cli_tree.py`` walks the tree.

Commands are imported when they run (``scopegate --version`` and ``scopegate search`` load only what
they use); the root's help lists them from :data:`COMMANDS` without importing them, and a test checks
that each short help here is the command's own.
"""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping, Sequence
from importlib import import_module
from typing import Any

import click

from scopegate.cli.core import CONTEXT_SETTINGS, ExitCode, Group, run, version_option

__all__ = ["ExitCode", "cli", "main"]

# name -> (module, attribute, short help as the command declares it)
COMMANDS: dict[str, tuple[str, str, str]] = {
    "check": ("scopegate.cli.server", "check", "Validate a config file and print each tool's declaration."),
    "dashboard": (
        "scopegate.cli.dashboard",
        "dashboard",
        "The call log's health figures as a local web page or an HTML report.",
    ),
    "count": ("scopegate.cli.search", "count", "Count the documents a tenant's scope sees."),
    "demo": ("scopegate.cli.search", "demo", "Run the worked example on the embedded engine."),
    "engine": ("scopegate.cli.engines", "engine", "Run a local OpenSearch or Elasticsearch node (no Docker needed)."),
    "eval": (
        "scopegate.evals.cli",
        "eval_command",
        "Run agent eval sets against a model (offline GGUF, Gemini, LiteLLM).",
    ),
    "get": ("scopegate.cli.search", "get", "Fetch one document by id inside a tenant's scope."),
    "ingest": ("scopegate.cli.search", "ingest", "Ingest JSONL or CSV into an embedded index."),
    "migrate": ("scopegate.cli.search", "migrate", "Move an index onto per-tenant document keys (older indexes)."),
    "openapi": ("scopegate.cli.openapi", "openapi", "Turn an OpenAPI spec into reviewed tool declarations."),
    "reembed": (
        "scopegate.cli.search",
        "reembed",
        "Re-embed every document of an embedded index with its spec's encoder.",
    ),
    "reindex": (
        "scopegate.cli.reindex",
        "reindex",
        "Reindex into a new version, verify it against the live one, swap the aliases.",
    ),
    "replay": (
        "scopegate.cli.guard",
        "replay",
        "Re-run logged searches against the current index and diff the results.",
    ),
    "search": (
        "scopegate.cli.search",
        "search",
        "Run the search tool against an index (embedded folder or --config).",
    ),
    "serve": ("scopegate.cli.server", "serve", "Serve a config's tools over MCP (stdio or streamable HTTP)."),
    "spec": ("scopegate.cli.search", "spec", "Print the declarations a search spec produces."),
    "stats": ("scopegate.cli.guard", "stats", "Health figures of the tool layer from a call log."),
}


def _load(name: str) -> click.Command:
    module, attribute, _help = COMMANDS[name]
    command = getattr(import_module(module), attribute)
    assert isinstance(command, click.Command)
    return command


class _Commands(MutableMapping[str, click.Command]):
    """``group.commands`` of the root: every name listed, each command imported when first looked up."""

    def __init__(self) -> None:
        self._loaded: dict[str, click.Command] = {}

    def __getitem__(self, name: str) -> click.Command:
        if name not in self._loaded:
            if name not in COMMANDS:
                raise KeyError(name)
            self._loaded[name] = _load(name)
        return self._loaded[name]

    def __setitem__(self, name: str, command: click.Command) -> None:
        self._loaded[name] = command

    def __delitem__(self, name: str) -> None:
        del self._loaded[name]

    def __iter__(self) -> Iterator[str]:
        return iter(sorted({*COMMANDS, *self._loaded}))

    def __len__(self) -> int:
        return len({*COMMANDS, *self._loaded})


class LazyGroup(Group):
    """The root group: commands imported on first use, listed in help from :data:`COMMANDS`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.commands: MutableMapping[str, click.Command] = _Commands()

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, help_text) for name, (_m, _a, help_text) in sorted(COMMANDS.items())]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings=CONTEXT_SETTINGS)
@version_option
def cli() -> None:
    """Safe, typed, tenant-scoped tools for LLM agents.

    Exit codes: 0 ok, 1 the command reports a failure, 2 usage error, 3 no index, 4 an optional extra or
    engine is not available, 130 interrupted, 141 stdout closed (see the docs, "Exit codes")."""


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``scopegate`` with ``argv`` (default: the process's arguments) and return its exit code."""
    return run(cli, argv, prog_name="scopegate")
