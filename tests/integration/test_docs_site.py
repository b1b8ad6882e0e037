"""The docs site builds with ``mkdocs build --strict``: no broken link or anchor, no page missing from the nav,
every generated section present (the committed reference pages; tests/unit/test_reference_pages.py checks them
against the code)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_site_builds_strict(tmp_path: Path) -> None:
    site = tmp_path / "site"
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=REPO, capture_output=True, text=True, timeout=300, check=False,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    config = (site / "reference" / "config.html").read_text("utf-8")
    for anchor in ("guards-cap", "search-tools-filters", "backends-name", "openapi-policies-name", "auth-jwt"):
        assert f'id="{anchor}"' in config, anchor
    # The pages own their text: nothing is included from the README at build time any more.
    assert not [p.name for p in site.rglob("*.html") if "<!-- include" in p.read_text("utf-8")]
    figures = (site / "figures.html").read_text("utf-8")
    assert "bench_shaping.py" in figures and "Guard layer" in figures
    cli = (site / "reference" / "cli.html").read_text("utf-8")
    assert "scopegate dashboard" in cli and "usage: scopegate ingest" in cli
    codes = (site / "reference" / "exit-codes.html").read_text("utf-8")
    assert all(re.search(rf"<td>{code}</td>", codes) for code in (0, 1, 2, 3, 4, 130, 141))
    assert (site / "assets" / "dashboard.png").stat().st_size > 10_000
