"""The committed reference pages (docs/reference/*.md) are what the code generates: the config model, the
search spec, the click tree and the exit codes. They are committed so they read on the repository host."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("docs_hooks", REPO / "scripts" / "docs_hooks.py")
assert _spec is not None and _spec.loader is not None
docs_hooks = importlib.util.module_from_spec(_spec)
sys.modules["docs_hooks"] = docs_hooks
_spec.loader.exec_module(docs_hooks)


def test_every_reference_page_is_generated() -> None:
    names = {p.name for p in docs_hooks.pages()}
    assert names == {"config.md", "spec.md", "cli.md", "exit-codes.md"}


def test_the_committed_reference_pages_match_the_code() -> None:
    stale = [str(p.relative_to(REPO)) for p in docs_hooks.drifted()]
    assert not stale, f"{', '.join(stale)} differ from the code; run: {docs_hooks.WRITE_COMMAND}"


def test_a_changed_page_is_reported_and_rewritten(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    page = tmp_path / "exit-codes.md"
    page.write_text((REPO / "docs" / "reference" / "exit-codes.md").read_text("utf-8").replace("| 3 |", "| 5 |"))
    monkeypatch.setattr(docs_hooks, "REFERENCE", tmp_path)
    monkeypatch.setattr(docs_hooks, "REPO", tmp_path)
    assert docs_hooks.drifted() == [page]
    assert docs_hooks.main(["--check"]) == 1
    assert docs_hooks.main(["--write"]) == 0
    assert docs_hooks.drifted() == [] and "| 3 | no index" in page.read_text("utf-8")


def test_every_exit_code_has_a_meaning() -> None:
    from scopegate.cli.core import EXIT_CODE_MEANINGS, ExitCode

    assert set(EXIT_CODE_MEANINGS) == set(ExitCode)
    assert all(f"| {int(code)} |" in docs_hooks.exit_codes() for code in ExitCode)


def test_cli_help_does_not_depend_on_the_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    wide = docs_hooks.cli_reference()
    monkeypatch.setenv("COLUMNS", "40")
    assert docs_hooks.cli_reference() == wide
    assert "## `scopegate ingest`" in wide and "usage: scopegate ingest" in wide
