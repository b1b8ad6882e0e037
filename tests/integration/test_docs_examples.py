"""The docs site's examples run as written: each page's blocks, in order, in an empty folder.

What runs (the convention for writing pages):

* a fenced block with ``title="NAME"`` is a file the reader creates: it is written to NAME;
* a ``bash`` block is run with ``bash -euo pipefail`` (``sh``, ``console`` and ``text`` blocks are
  only shown);
* a ``python`` block is run in one namespace per page, like the README's;
* ``<!-- docs-test: skip REASON -->`` on the line before a block leaves it out (fragments that
  need the reader's own objects).

``scopegate`` is the one installed beside this interpreter; ``SCOPEGATE_SHARED_DATA`` points at
../shared/data (pages that use it are skipped, with the reason, when it is absent).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
SHARED = REPO.parent / "shared" / "data"
FENCE = re.compile(
    r"^(?P<skip><!-- docs-test: skip[^>]*-->\n)?```(?P<lang>[\w-]*)(?P<attrs>[^\n]*)\n(?P<code>.*?)^```\s*$",
    re.M | re.S,
)
TITLE = re.compile(r'title="([^"]+)"')


@dataclass(frozen=True)
class Block:
    lang: str
    code: str
    title: str | None
    skipped: bool
    line: int


def blocks(text: str) -> list[Block]:
    out = []
    for m in FENCE.finditer(text):
        title = TITLE.search(m.group("attrs"))
        line = text.count("\n", 0, m.start("lang")) + 1
        out.append(
            Block(m.group("lang"), m.group("code"), title.group(1) if title else None, bool(m.group("skip")), line)
        )
    return out


def runnable(block: Block) -> bool:
    return not block.skipped and (block.title is not None or block.lang in ("bash", "python"))


PAGES = sorted(p for p in DOCS.rglob("*.md") if any(runnable(b) for b in blocks(p.read_text("utf-8"))))


def test_the_walkthrough_is_among_the_pages() -> None:
    names = {p.name for p in PAGES}
    assert {"bring-your-own-data.md", "openapi.md", "getting-started.md", "dashboard.md", "adk.md", "mcp.md"} <= names


def test_fences_are_parsed() -> None:
    text = '<!-- docs-test: skip fragment -->\n```python\nx = 1\n```\n\n```yaml title="a.yaml"\nk: v\n```\n'
    assert blocks(text) == [
        Block("python", "x = 1\n", None, True, 2),
        Block("yaml", "k: v\n", "a.yaml", False, 6),
    ]


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(DOCS)) for p in PAGES])
def test_page_examples_run(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = page.read_text("utf-8")
    if "SCOPEGATE_SHARED_DATA" in text and not SHARED.is_dir():
        pytest.skip(f"shared data not available: {SHARED} is missing (CI provides ../shared/data)")
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "SCOPEGATE_SHARED_DATA": str(SHARED),
    }
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "docs_example"}
    for block in blocks(text):
        if not runnable(block):
            continue
        where = f"{page.relative_to(REPO)}:{block.line}"
        if block.title is not None:
            target = tmp_path / block.title
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(block.code, "utf-8")
        elif block.lang == "bash":
            done = subprocess.run(
                ["bash", "-euo", "pipefail", "-c", block.code],
                cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False,
            )  # fmt: skip
            assert done.returncode == 0, (
                f"{where} exited {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
            )
        else:
            exec(compile(block.code, where, "exec"), namespace)
