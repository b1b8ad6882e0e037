"""Every test the security page names as holding a guarantee exists (docs/security.md)."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
REFERENCE = re.compile(r"`(tests/[\w/]+\.py)::(\w+)`")


def test_the_security_page_names_tests_that_exist() -> None:
    page = (REPO / "docs" / "security.md").read_text("utf-8")
    named = REFERENCE.findall(page)
    assert len(named) >= 10
    missing = [
        f"{path}::{name}"
        for path, name in named
        if not (REPO / path).is_file()
        or not re.search(rf"^(async )?def {name}\(", (REPO / path).read_text("utf-8"), flags=re.M)
    ]
    assert missing == []
