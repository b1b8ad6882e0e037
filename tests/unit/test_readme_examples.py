"""The README's examples run as written, in order, in an empty folder (the docs pages' conventions:
tests/integration/test_docs_examples.py).

* a fenced block with ``title="NAME"`` is a file the reader creates: it is written to NAME;
* a ``bash`` block is run with ``bash -euo pipefail`` (``sh`` blocks are only shown: ``make demo``,
  a server that runs until stopped);
* ``python`` blocks run in one namespace, and no deprecated scopegate name may be used.

tests/e2e/test_readme_quickstart.py then drives the README's agent and MCP server as a user would.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"
FENCE = re.compile(r"^```(?P<lang>[\w-]*)(?P<attrs>[^\n]*)\n(?P<code>.*?)^```\s*$", re.M | re.S)
TITLE = re.compile(r'title="([^"]+)"')
# What the deprecation shims of 0.2 say (scopegate/__init__.py, adapters/adk.py, config/builder.py, ...).
DEPRECATED = r".*deprecated and goes in 0\.3"
MAX_BYTES = 10_000


@dataclass(frozen=True)
class Block:
    lang: str
    code: str
    title: str | None


def readme_blocks(text: str | None = None) -> list[Block]:
    text = README.read_text("utf-8") if text is None else text
    out = []
    for m in FENCE.finditer(text):
        title = TITLE.search(m.group("attrs"))
        out.append(Block(m.group("lang"), m.group("code"), title.group(1) if title else None))
    return out


def run_readme(folder: Path) -> dict[str, Any]:
    """Every runnable README block in ``folder`` (the current directory meanwhile); the Python namespace."""
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    namespace: dict[str, Any] = {"__name__": "readme_example"}
    cwd = os.getcwd()
    os.chdir(folder)
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("error", message=DEPRECATED, category=DeprecationWarning)
            for block in readme_blocks():
                if block.title is not None:
                    (folder / block.title).write_text(block.code, "utf-8")
                elif block.lang == "bash":
                    done = subprocess.run(
                        ["bash", "-euo", "pipefail", "-c", block.code],
                        cwd=folder, env=env, capture_output=True, text=True, timeout=300, check=False,
                    )  # fmt: skip
                    assert done.returncode == 0, f"{block.code}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
                elif block.lang == "python":
                    exec(compile(block.code, str(README), "exec"), namespace)
    finally:
        os.chdir(cwd)
    return namespace


def test_readme_blocks_run(tmp_path: Path) -> None:
    namespace = run_readme(tmp_path)
    assert {"app", "agent", "tools", "mcp", "orders"} <= set(namespace)
    assert (tmp_path / "data" / "tickets").is_dir()  # the bash block ingested the CSV for the config


def test_readme_is_short_and_starts_with_the_two_commands() -> None:
    text = README.read_text("utf-8")
    assert len(text.encode("utf-8")) <= MAX_BYTES, "README.md is over 10 KB: move the detail into docs/"
    first = readme_blocks(text)[0]
    assert first.lang == "sh" and "make demo" in first.code and "make test" in first.code
    assert text.index("```") < text.index("## ")  # the two commands come before any section


def test_readme_has_examples() -> None:
    langs = [b.lang for b in readme_blocks()]
    assert langs.count("python") >= 3, "the README lost its Python examples"


def test_fences_are_parsed() -> None:
    text = '```sh\nmake demo\n```\n\n```csv title="t.csv"\na,b\n```\n'
    assert readme_blocks(text) == [Block("sh", "make demo\n", None), Block("csv", "a,b\n", "t.csv")]


@pytest.mark.parametrize("name", ["adk_tools", "adk_search_tools", "OpenApiToolset", "AdkTool", "build_app"])
def test_no_deprecated_entry_point_is_shown(name: str) -> None:
    docs = [README, *sorted((README.parent / "docs").rglob("*.md"))]
    # architecture.md names the deprecated shims to say they are deprecated; no example uses them.
    shown = [
        str(p.relative_to(README.parent))
        for p in docs
        if p.name != "architecture.md"
        and any(re.search(rf"\b{name}\b", b.code) for b in readme_blocks(p.read_text("utf-8")))
    ]
    assert not shown, f"{name} (deprecated) appears in code blocks of {shown}"


def test_readme_links_point_at_files_that_exist() -> None:
    targets = re.findall(r"\]\((?!https?://)([^)#]+)(?:#[^)]*)?\)", README.read_text("utf-8"))
    assert targets
    assert not [t for t in targets if not (README.parent / t).exists()]
