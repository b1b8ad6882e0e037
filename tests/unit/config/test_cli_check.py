"""``scopegate check`` and ``scopegate serve`` from the command line (help, output, refusals)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from scopegate.cli import cli, main
from scopegate.cli.core import undocumented
from scopegate.config.schema import config_schema

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "scopegate.yaml"


def test_every_option_has_help() -> None:
    for name in ("check", "serve"):
        assert undocumented(cli.commands[name]) == []


def test_check_prints_declarations(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("SCOPEGATE_DATA", str(tmp_path / "nodata"))
    assert main(["check", str(EXAMPLE)]) == 0
    out, err = capsys.readouterr()
    report = json.loads(out)
    assert [t["name"] for t in report["tools"]] == ["search_tickets", "get_ticket", "count_tickets"]
    assert report["tools"][0]["parameters"]["properties"]["product"]["enum"] == [
        "payments",
        "payouts",
        "billing",
        "identity",
    ]
    assert any("token table with 3 token(s)" in n for n in report["notes"])
    assert "ok, 3 tool(s)" in err
    assert any("missing" in n for n in report["notes"])
    assert not (tmp_path / "nodata").exists()  # check never creates an index


def test_check_reports_every_problem(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data: dict[str, Any] = yaml.safe_load(EXAMPLE.read_text("utf-8"))
    data["search_tools"][0]["page_sise"] = 5
    data["search_tools"][0]["filters"][0]["allowed"] = []
    data["auth"]["token_table"] = "missing.yaml"
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(data), "utf-8")
    assert main(["check", str(path)]) == 1
    err = capsys.readouterr().err
    assert "search_tools[0]: unexpected key 'page_sise' (did you mean 'page_size'?)" in err
    assert "search_tools[0].filters[0].allowed" in err


def test_check_loads_the_token_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data: dict[str, Any] = yaml.safe_load(EXAMPLE.read_text("utf-8"))
    data["auth"]["token_table"] = str(tmp_path / "missing.yaml")
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(data), "utf-8")
    assert main(["check", str(path)]) == 1
    assert "cannot read" in capsys.readouterr().err


def test_check_schema(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--schema"]) == 0
    assert json.loads(capsys.readouterr().out) == config_schema()


def test_serve_http_needs_auth(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data: dict[str, Any] = yaml.safe_load(EXAMPLE.read_text("utf-8"))
    del data["auth"]
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(data), "utf-8")
    assert main(["serve", str(path), "--transport", "http", "--port", "0"]) == 1
    assert "HTTP needs auth" in capsys.readouterr().err
