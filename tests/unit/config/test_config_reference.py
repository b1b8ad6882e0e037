"""The generated config and spec reference (the docs site's reference pages) and the docs build hooks."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from scopegate.config.model import config_schema
from scopegate.config.reference import config_reference, reference_markdown, spec_reference
from scopegate.search.spec import SearchSpec
from scopegate.validation import json_schema

REPO = Path(__file__).resolve().parents[3]


def sections(markdown: str) -> dict[str, str]:
    """Section title (the model's title, or the heading) -> its text."""
    out: dict[str, str] = {}
    parts = re.split(r"^## ", markdown, flags=re.M)[1:]
    for part in parts:
        heading, _, body = part.partition("\n")
        intro = body.strip().split("\n", 1)[0]  # "What it is. (`Model`)" or "`Model`"
        title = re.search(r"`(\w+)`\)?$", intro) if not intro.startswith("|") else None
        out[title.group(1) if title else heading] = body
    return out


def object_defs(schema: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {name: d for name, d in schema["$defs"].items() if d.get("properties")}


@pytest.mark.parametrize(
    "schema,markdown", [(config_schema(), config_reference()), (json_schema(SearchSpec), spec_reference())]
)
def test_every_model_and_key_is_documented(schema: dict[str, Any], markdown: str) -> None:
    found = sections(markdown)
    for name, definition in object_defs(schema).items():
        assert name in found, f"no section for {name}"
        rows = re.findall(r"^\| `(\w+)` \|", found[name], flags=re.M)
        assert rows == list(definition["properties"]), name
    top = re.findall(r"^\| `(\w+)` \|", markdown.split("\n## ", 2)[0] + markdown.split("\n## ", 2)[1], flags=re.M)
    assert top[: len(schema["properties"])] == list(schema["properties"])


def test_descriptions_defaults_and_bounds_come_from_the_model() -> None:
    text = sections(config_reference())
    cap = text["CapConfig"]
    assert "MCP only: the per-session budget renews every window" in cap and "`60.0`" in cap and "≤ 86400" in cap
    search = text["SearchToolConfig"]
    assert re.search(r"\| `name` \| string \| \*\*required\*\* \| Tool name the model calls", search)
    assert "[KeywordFilter](#search-tools-filters)" in search
    top = config_reference().split("\n## ", 1)[0]
    assert "[EmbeddedBackendConfig](#backends-name) or [RemoteBackendConfig](#backends-name-remotebackendconfig)" in top


def test_anchors_are_unique_and_every_link_has_a_target() -> None:
    for markdown in (config_reference(), spec_reference()):
        anchors = re.findall(r"\{#([a-z0-9-]+)\}", markdown)
        assert len(anchors) == len(set(anchors))
        assert set(re.findall(r"\]\(#([a-z0-9-]+)\)", markdown)) <= set(anchors)


def test_a_new_key_appears_without_touching_the_docs() -> None:
    schema = {
        "type": "object",
        "properties": {"thing": {"$ref": "#/$defs/Thing"}},
        "$defs": {
            "Thing": {
                "title": "Thing",
                "type": "object",
                "description": "A ``thing`` | with a pipe.",
                "properties": {"size": {"type": "integer", "minimum": 1, "default": 3, "description": "How big."}},
                "required": [],
            }
        },
    }
    md = reference_markdown(schema, root_title="Top")
    assert "## `thing` {#thing}" in md and "A `thing` \\| with a pipe. (`Thing`)" in md
    assert "| `size` | integer | `3` | How big. (≥ 1) |" in md


def hooks() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_hooks", REPO / "scripts" / "docs_hooks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_generated_sections_by_kind() -> None:
    h = hooks()
    with pytest.raises(ValueError, match="unknown generated section"):
        h.generated("nothing")
    assert "usage: scopegate dashboard" in h.generated("cli-reference")
    assert "| 141 |" in h.generated("exit-codes")
    with pytest.raises(ValueError, match="marker"):
        h.render("# a page without a marker\n")


def test_the_cli_reference_leaves_the_command_tree_as_it_was() -> None:
    from scopegate.cli import main

    text = hooks().cli_reference()
    assert "usage: scopegate search" in text and "-h, --help" in text
    assert main(["search", "-h"]) == 0  # click caches each command's help option: -h must survive
