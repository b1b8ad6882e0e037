"""MkDocs hooks of the docs site (mkdocs.yml): generated reference pages and README sections, one source each.

Markers in a page are replaced at build time:

* ``<!-- generate: config-reference -->``: every key of the config file, from the pydantic model
  (:func:`scopegate.config.reference.config_reference`);
* ``<!-- generate: spec-reference -->``: every key of a search spec file, from the same model;
* ``<!-- generate: cli-reference -->``: every ``scopegate`` command's ``--help``, from the click tree;
* ``<!-- include: README.md#section-slug -->``: a README section's body (links into the repository are
  rewritten for the site, links to other README sections become plain text).

The dashboard screenshot (bench/results/dashboard.png) is added to the site as assets/dashboard.png.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
MARKER = re.compile(r"<!--\s*(generate|include):\s*([^\s]+)\s*-->")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*$", re.M)
ASSETS = {"assets/dashboard.png": REPO / "bench" / "results" / "dashboard.png"}
DOCS_LINK = re.compile(r"\]\(docs/([^)]+)\)")
ANCHOR_LINK = re.compile(r"(?<!!)\[([^\]]+)\]\(#[^)]+\)")
REPO_LINK = re.compile(r"(?<!!)\[([^\]]+)\]\((?!https?://|#|docs/)([^)]+)\)")
IMAGE = re.compile(r"!\[([^\]]*)\]\(bench/results/([^)]+)\)")


def slug(text: str) -> str:
    """GitHub's heading anchors (what README links use)."""
    text = re.sub(r"[^\w\- ]", "", text.strip().lower())
    return text.replace(" ", "-")


def readme_section(name: str, readme: Path = REPO / "README.md", *, root: str = "") -> str:
    """The body of the README section whose heading slug is ``name``, rewritten for the site (``root``: the
    way from the page to the site's root, ``../`` for a page in a folder)."""
    text = readme.read_text("utf-8")
    headings = list(HEADING.finditer(text))
    for i, match in enumerate(headings):
        if slug(match.group(2)) != name:
            continue
        level = len(match.group(1))
        end = next((h.start() for h in headings[i + 1 :] if len(h.group(1)) <= level), len(text))
        body = text[match.end() : end].strip("\n")
        body = IMAGE.sub(lambda m: f"![{m.group(1)}]({root}assets/{m.group(2)})", body)
        body = ANCHOR_LINK.sub(lambda m: m.group(1), body)
        body = REPO_LINK.sub(lambda m: f"{m.group(1)} (`{m.group(2)}` in the repository)", body)
        body = DOCS_LINK.sub(lambda m: f"]({root}{m.group(1)})", body)
        return body + "\n"
    raise ValueError(f"README.md has no section {name!r}")


def cli_reference() -> str:
    import click

    from scopegate.cli import cli

    out: list[str] = []

    def walk(command: click.Command, path: tuple[str, ...], parent: click.Context | None) -> None:
        # A context chain like a real run's, so the help options (-h) and widths are the command tree's own
        # (click caches a command's help option from the first context it sees).
        settings = {**command.context_settings, "info_name": path[-1] if path else "scopegate", "parent": parent}
        with command.context_class(command, **settings) as ctx:
            title = " ".join(("scopegate", *path))
            out.extend([f"## `{title}`", "", "```text", command.get_help(ctx), "```", ""])
            if isinstance(command, click.Group):
                for name in sorted(command.commands):
                    walk(command.commands[name], (*path, name), ctx)

    walk(cli, (), None)
    return "\n".join(out)


def generated(kind: str) -> str:
    from scopegate.config.reference import config_reference, spec_reference

    makers = {"config-reference": config_reference, "spec-reference": spec_reference, "cli-reference": cli_reference}
    if kind not in makers:
        raise ValueError(f"unknown generated section {kind!r}; known: {', '.join(sorted(makers))}")
    return makers[kind]()


def expand(markdown: str, *, root: str = "") -> str:
    """The page with every marker replaced (``root`` as in :func:`readme_section`)."""

    def replace(match: re.Match[str]) -> str:
        what, arg = match.group(1), match.group(2)
        if what == "generate":
            return generated(arg)
        source, _, section = arg.partition("#")
        if source != "README.md":
            raise ValueError(f"can only include README.md sections, not {arg!r}")
        return readme_section(section, root=root)

    return MARKER.sub(replace, markdown)


# -- MkDocs events ---------------------------------------------------------------------------
def on_page_markdown(markdown: str, page: Any, **_: Any) -> str:
    return expand(markdown, root="../" * page.file.src_uri.count("/"))


def on_files(files: Any, config: Any, **_: Any) -> Any:
    from mkdocs.structure.files import File

    for uri, source in ASSETS.items():
        files.append(File.generated(config, uri, abs_src_path=str(source)))
    return files
