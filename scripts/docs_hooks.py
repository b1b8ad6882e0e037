"""The reference pages, generated from the code and committed; and the MkDocs hooks of the docs site.

Each page under ``docs/reference/`` is a hand-written introduction, a marker line, and what the code
generates below it:

* ``config-reference``: every key of the config file, from the pydantic model
  (:func:`scopegate.config.reference.config_reference`);
* ``spec-reference``: every key of a search spec file, from the same model;
* ``cli-reference``: every ``scopegate`` command's ``--help``, from the click tree;
* ``exit-codes``: the exit codes, from ``scopegate.cli.core.ExitCode`` and ``EXIT_CODE_MEANINGS``.

    python scripts/docs_hooks.py --write    # regenerate the committed pages after changing the code
    python scripts/docs_hooks.py --check    # exit 1 and name the pages that drifted (a unit test does this)

The pages are committed so they read on the repository host; ``tests/unit/test_reference_pages.py``
fails while one differs from the code, and the site build (``on_pre_build``) refuses a drifted page.
The dashboard screenshot (bench/results/dashboard.png) is added to the site as assets/dashboard.png.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
REFERENCE = REPO / "docs" / "reference"
WRITE_COMMAND = "python scripts/docs_hooks.py --write"
MARKER = re.compile(r"^<!-- generated: ([\w-]+) .*-->$", re.M)
ASSETS = {"assets/dashboard.png": REPO / "bench" / "results" / "dashboard.png"}
# Help text is wrapped at this width whatever the terminal, so the pages do not depend on who ran --write.
HELP_WIDTH = 100


def cli_reference() -> str:
    import click

    from scopegate.cli import cli

    out: list[str] = []

    def walk(command: click.Command, path: tuple[str, ...], parent: click.Context | None) -> None:
        # A context chain like a real run's, so the help options (-h) and widths are the command tree's own
        # (click caches a command's help option from the first context it sees).
        settings = {
            **command.context_settings,
            "info_name": path[-1] if path else "scopegate",
            "parent": parent,
            "terminal_width": HELP_WIDTH,
        }
        with command.context_class(command, **settings) as ctx:
            title = " ".join(("scopegate", *path))
            out.extend([f"## `{title}`", "", "```text", command.get_help(ctx), "```", ""])
            if isinstance(command, click.Group):
                # list_commands/get_command, not .commands: the root group imports its commands lazily.
                for name in sorted(command.list_commands(ctx)):
                    sub = command.get_command(ctx, name)
                    if sub is not None:
                        walk(sub, (*path, name), ctx)

    walk(cli, (), None)
    return "\n".join(out)


def exit_codes() -> str:
    from scopegate.cli.core import EXIT_CODE_MEANINGS, ExitCode

    missing = [code.name for code in ExitCode if code not in EXIT_CODE_MEANINGS]
    if missing:
        raise ValueError(f"scopegate.cli.core.EXIT_CODE_MEANINGS has no meaning for {', '.join(missing)}")
    rows = [f"| {int(code)} | {EXIT_CODE_MEANINGS[code]} |" for code in ExitCode]
    return "\n".join(["| code | meaning |", "|---|---|", *rows]) + "\n"


def makers() -> dict[str, Callable[[], str]]:
    from scopegate.config.reference import config_reference, spec_reference

    return {
        "config-reference": config_reference,
        "spec-reference": spec_reference,
        "cli-reference": cli_reference,
        "exit-codes": exit_codes,
    }


def generated(kind: str) -> str:
    known = makers()
    if kind not in known:
        raise ValueError(f"unknown generated section {kind!r}; known: {', '.join(sorted(known))}")
    return known[kind]()


def render(page: str) -> str:
    """The page as the code generates it: its introduction and marker line kept, the rest regenerated."""
    match = MARKER.search(page)
    if match is None:
        raise ValueError("no '<!-- generated: KIND ... -->' marker line")
    return page[: match.end()] + "\n\n" + generated(match.group(1)).strip("\n") + "\n"


def pages() -> list[Path]:
    return sorted(p for p in REFERENCE.glob("*.md") if MARKER.search(p.read_text("utf-8")))


def drifted() -> list[Path]:
    """The committed reference pages that differ from what the code generates now."""
    return [p for p in pages() if p.read_text("utf-8") != render(p.read_text("utf-8"))]


def write() -> list[Path]:
    changed = drifted()
    for path in changed:
        path.write_text(render(path.read_text("utf-8")), "utf-8")
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true", help="regenerate the committed reference pages")
    mode.add_argument("--check", action="store_true", help="exit 1 if a committed page differs from the code")
    args = parser.parse_args(argv)
    if args.write:
        for path in write():
            print(f"wrote {path.relative_to(REPO)}")
        return 0
    stale = drifted()
    for path in stale:
        print(f"{path.relative_to(REPO)} differs from the code; run: {WRITE_COMMAND}", file=sys.stderr)
    return 1 if stale else 0


# -- MkDocs events ---------------------------------------------------------------------------
def on_pre_build(config: Any, **_: Any) -> None:
    from mkdocs.exceptions import PluginError

    stale = drifted()
    if stale:
        names = ", ".join(str(p.relative_to(REPO)) for p in stale)
        raise PluginError(f"reference pages differ from the code ({names}); run: {WRITE_COMMAND}")


def on_files(files: Any, config: Any, **_: Any) -> Any:
    from mkdocs.structure.files import File

    for uri, source in ASSETS.items():
        files.append(File.generated(config, uri, abs_src_path=str(source)))
    return files


if __name__ == "__main__":
    sys.exit(main())
