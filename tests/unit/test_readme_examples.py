"""The README's Python examples run as written."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text("utf-8"), flags=re.S)


@pytest.mark.parametrize("code", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_readme_python_block_runs(code: str, tmp_path: Path) -> None:
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        exec(compile(code, str(README), "exec"), {"__name__": "readme_example"})
    finally:
        os.chdir(cwd)


def test_readme_has_examples() -> None:
    assert BLOCKS, "the README lost its Python examples"
