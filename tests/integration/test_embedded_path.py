"""An embedded index keeps the folder it was opened on, whatever the working directory becomes later."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from scopegate.backends.embedded import EmbeddedBackend
from scopegate.demo.corpus import ticket_spec


def test_relative_path_is_fixed_at_construction(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    backend = EmbeddedBackend(ticket_spec(), "idx", threads=1)
    assert backend.path == tmp_path / "idx"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.chdir(elsewhere)
    reopened = EmbeddedBackend.open(backend.path)
    assert reopened.path == tmp_path / "idx"
    assert not (elsewhere / "idx").exists()
