"""Helpers for config tests: a minimal valid config and a writer for config files."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO_ROOT = Path(__file__).resolve().parents[3]
EXAMPLE_CONFIG = REPO_ROOT / "examples" / "scopegate.yaml"

BASE: dict[str, Any] = {
    "version": 1,
    "backends": {"local": {"type": "embedded", "path": "./data"}},
    "search_tools": [
        {
            "backend": "local",
            "name": "search_tickets",
            "description": "Search tickets.",
            "index": "tickets",
            "text_fields": ["subject^3", "body"],
            "filters": [{"name": "product", "allowed": ["payments", "billing"]}],
            "result_fields": ["subject", "product"],
        }
    ],
}


@pytest.fixture
def base() -> dict[str, Any]:
    """A fresh copy of a minimal valid config (change it freely)."""
    return copy.deepcopy(BASE)


@pytest.fixture
def write(tmp_path: Path) -> Callable[..., Path]:
    """``write(data, "name.yaml")``: a config file in tmp_path, in the format its suffix names."""

    def _write(data: Any, name: str = "scopegate.yaml") -> Path:
        path = tmp_path / name
        if isinstance(data, str):
            path.write_text(data, "utf-8")
        elif name.endswith(".json"):
            path.write_text(json.dumps(data), "utf-8")
        elif name.endswith(".toml"):
            path.write_text(to_toml(data), "utf-8")
        else:
            path.write_text(yaml.safe_dump(data, sort_keys=False), "utf-8")
        return path

    return _write


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k)} = {_toml_value(v)}" for k, v in value.items()) + "}"
    raise TypeError(type(value))


def to_toml(data: dict[str, Any]) -> str:
    """A tiny TOML writer (inline tables), enough for config tests; tomllib reads it back."""
    return "".join(f"{json.dumps(k)} = {_toml_value(v)}\n" for k, v in data.items())
