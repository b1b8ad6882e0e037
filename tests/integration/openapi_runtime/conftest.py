"""Fixtures: the real orders service and an "attacker" service on 127.0.0.1, and toolsets over them."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Iterator

import pytest
from rt_helpers import SECRETS, SENSITIVE_VALUES, delegated_settings, hostile_settings, staff_settings

from scopegate.examples.orders.server import RunningService, running_counting_service, running_orders_service
from scopegate.openapi.runtime import OperationToolset, ToolsetSettings
from scopegate_lab.hostile import RunningHostile, running_hostile_service


class _Everything(logging.Handler):
    """Keeps the formatted text of every record of every logger (with tracebacks)."""

    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.texts: list[str] = []
        self.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        self.texts.append(self.format(record))


@pytest.fixture(scope="module", autouse=True)
def debug_log_has_no_secret() -> Iterator[_Everything]:
    """Every module of these tests runs with all logging at DEBUG (httpx, httpcore, everything);
    no configured secret or sensitive value may appear in any record. Checked when the module
    ends: a leak anywhere in any test fails the run (at teardown).
    """
    root = logging.getLogger()
    handler, level = _Everything(), root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    try:
        yield handler
    finally:
        root.removeHandler(handler)
        root.setLevel(level)
    text = "\n".join(handler.texts)
    for secret in (*SECRETS, *SENSITIVE_VALUES):
        assert secret not in text, f"a configured secret reached a DEBUG log: {secret[:6]}…"


@pytest.fixture(scope="session")
def orders_service() -> Iterator[RunningService]:
    with running_orders_service() as svc:
        yield svc


@pytest.fixture(scope="session")
def attacker() -> Iterator[RunningService]:
    with running_counting_service() as svc:
        yield svc


@pytest.fixture(autouse=True)
def fresh_state(orders_service: RunningService, attacker: RunningService) -> None:
    orders_service.state.reset()
    orders_service.state.external_redirect = f"{attacker.base_url}/stolen"
    attacker.state.reset()


@pytest.fixture
async def staff_toolset(orders_service: RunningService) -> AsyncIterator[OperationToolset]:
    toolset = OperationToolset(staff_settings(orders_service.base_url))
    yield toolset
    await toolset.aclose()


@pytest.fixture
async def delegated_toolset(orders_service: RunningService) -> AsyncIterator[OperationToolset]:
    toolset = OperationToolset(delegated_settings(orders_service.base_url))
    yield toolset
    await toolset.aclose()


@pytest.fixture(params=["staff", "delegated"])
async def any_toolset(
    request: pytest.FixtureRequest, orders_service: RunningService
) -> AsyncIterator[OperationToolset]:
    make: Callable[..., ToolsetSettings] = staff_settings if request.param == "staff" else delegated_settings
    toolset = OperationToolset(make(orders_service.base_url))
    yield toolset
    await toolset.aclose()


@pytest.fixture(scope="session")
def hostile() -> Iterator[RunningHostile]:
    with running_hostile_service() as svc:
        yield svc


@pytest.fixture
async def hostile_toolset(hostile: RunningHostile) -> AsyncIterator[OperationToolset]:
    hostile.state.reset()
    toolset = OperationToolset(hostile_settings(hostile.base_url))
    yield toolset
    await toolset.aclose()
