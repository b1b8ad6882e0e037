"""Shared fixtures: the demo spec, a small generated corpus, an embedded index."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from scopegate.backends.embedded import EmbeddedBackend
from scopegate.demo.corpus import generate_tickets, ticket_spec
from scopegate.search.spec import SearchSpec

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO_ROOT.parent / "shared" / "data"


def shared_data(*parts: str) -> Path:
    """A path under ../shared/data; skips the test with the reason when it is absent."""
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"shared data not available: {path} is missing (CI provides ../shared/data)")
    return path


@pytest.fixture(scope="session")
def shared() -> Callable[..., Path]:
    """``shared("openapi", "x.json")``: a path under ../shared/data, or a skip naming what is missing."""
    return shared_data


@pytest.fixture(scope="session")
def spec() -> SearchSpec:
    return ticket_spec()


@pytest.fixture(scope="session")
def tickets() -> list[dict[str, Any]]:
    return list(generate_tickets(per_tenant=150))


@pytest.fixture(scope="session")
def embedded(
    spec: SearchSpec, tickets: list[dict[str, Any]], tmp_path_factory: pytest.TempPathFactory
) -> EmbeddedBackend:
    backend = EmbeddedBackend(spec, tmp_path_factory.mktemp("embedded") / "index")
    report = backend.ingest_sync(tickets, batch_size=200)
    assert report.indexed == len(tickets)
    return backend
