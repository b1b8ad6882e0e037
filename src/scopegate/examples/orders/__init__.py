"""The example orders REST API: FastAPI app, pinned OpenAPI spec and a loopback runner."""

from __future__ import annotations

from pathlib import Path

SPEC_PATH = Path(__file__).with_name("openapi.json")

__all__ = ["SPEC_PATH"]
