"""``scopegate check --profile``: the config's declarations as each model API takes them, linted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scopegate.cli import main


def test_check_renders_and_lints_each_profile(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "scopegate.yaml"
    config.write_text(
        "version: 1\nbackends: {local: {type: embedded, path: ./data}}\n"
        "search_tools:\n  - {backend: local, name: search_notes, description: Notes., text_fields: [body],\n"
        "     filters: [{name: status, allowed: [open, closed]}]}\n"
    )
    assert main(["check", str(config), "--profile", "openai", "--profile", "gemini", "--profile", "mcp"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report.get("problems", []) == []
    openai = {d["function"]["name"]: d["function"] for d in report["profiles"]["openai"]}
    assert set(openai) == {t["name"] for t in report["tools"]} and "search_notes" in openai
    strict = openai["search_notes"]
    assert strict["strict"] is True and strict["parameters"]["additionalProperties"] is False
    # OpenAI strict: every property required, the optional ones nullable.
    assert set(strict["parameters"]["required"]) == set(strict["parameters"]["properties"])
    gemini = {d["name"]: d for d in report["profiles"]["gemini"]}
    assert gemini["search_notes"]["parameters"]["type"] == "OBJECT"
    assert {d["name"] for d in report["profiles"]["mcp"]} == set(openai)
    assert "anthropic" not in report["profiles"]


def test_an_unknown_profile_is_a_usage_error(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text("version: 1\n")
    assert main(["check", str(config), "--profile", "klingon"]) == 2
