"""The declaration lint over every operation of every shared real spec, for all four profiles: 0 violations.

Multi-file specs (a folder with a root document and referenced files) are loaded
from their root with external references allowed. Writes
bench/results/declaration_lint.md (tools per spec, how many OpenAI declarations
are strict, violations per profile).
"""

from __future__ import annotations

import collections
from pathlib import Path
from typing import Any

import pytest

from scopegate.declarations import PROFILES, ToolDecl, lint_tools, render
from scopegate.openapi.loader import load_document
from scopegate.openapi.translate import translate

REPO = Path(__file__).resolve().parents[3]
SHARED_OPENAPI = REPO.parent / "shared" / "data" / "openapi"
READ_METHODS = {"get", "head", "options"}


def _roots() -> list[str]:
    if not SHARED_OPENAPI.is_dir():
        return []
    out = []
    for path in sorted(SHARED_OPENAPI.rglob("*")):
        if path.suffix not in (".json", ".yaml", ".yml"):
            continue
        depth = len(path.relative_to(SHARED_OPENAPI).parts)
        if depth == 1 or (depth == 2 and _is_root_document(path)):
            out.append(path.relative_to(SHARED_OPENAPI).as_posix())
    return out


def _is_root_document(path: Path) -> bool:
    head = path.read_text("utf-8", errors="replace")[:4000]
    return any(marker in head for marker in ('"openapi"', "openapi:", '"swagger"', "swagger:"))


SPECS = _roots()
_rows: dict[str, dict[str, Any]] = {}


@pytest.mark.skipif(not SPECS, reason=f"shared OpenAPI specs not found at {SHARED_OPENAPI}")
@pytest.mark.parametrize("name", SPECS)
def test_every_declaration_passes_every_profile(name: str) -> None:
    path = SHARED_OPENAPI / name
    doc = load_document(path, allow_external_refs="/" in name)
    result = translate(doc, strict=False)
    tools = [
        ToolDecl(t.name, t.description, t.parameters, read_only=t.operation.method.lower() in READ_METHODS,
                 family="openapi")
        for t in result.tools
    ]  # fmt: skip
    violations = lint_tools(tools)
    strict = sum(bool(render(t, "openai")["function"].get("strict")) for t in tools)
    by_profile = collections.Counter(v.profile for v in violations)
    _rows[name] = {"tools": len(tools), "strict": strict, **{p: by_profile.get(p, 0) for p in PROFILES}}
    _write_table()
    assert not violations, [str(v) for v in violations[:10]]


def _write_table() -> None:
    lines = [
        "# Declaration lint over the shared specs",
        "",
        "Every operation rendered for Gemini, OpenAI (strict where expressible), Anthropic and MCP, and checked",
        "against each profile's documented constraints (`tests/unit/declarations/test_lint_shared.py`).",
        "",
        "| spec | tools | OpenAI strict | gemini | openai | anthropic | mcp |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, row in sorted(_rows.items()):
        lines.append(
            f"| {name} | {row['tools']} | {row['strict']} | " + " | ".join(str(row[p]) for p in PROFILES) + " |"
        )
    out = REPO / "bench" / "results" / "declaration_lint.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n", "utf-8")
