"""Fixtures for the OpenAPI unit tests: synthetic specs in ./specs, real ones in ../shared/data/openapi."""

from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
SPECS = HERE / "specs"
SNAPSHOTS = HERE / "snapshots"
REPO = HERE.parents[2]
SHARED_OPENAPI = REPO.parent / "shared" / "data" / "openapi"


@pytest.fixture(scope="session")
def tickets_path() -> Path:
    return SPECS / "tickets.yaml"


@pytest.fixture(scope="session")
def petstore2_path() -> Path:
    return SPECS / "petstore2.json"


@pytest.fixture(scope="session")
def shared_openapi() -> Path:
    if not SHARED_OPENAPI.is_dir():
        pytest.skip(f"shared OpenAPI specs not found at {SHARED_OPENAPI} (../shared/data/openapi)")
    return SHARED_OPENAPI
