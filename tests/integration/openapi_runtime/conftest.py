"""Fixtures: the real orders service and an "attacker" service on 127.0.0.1, and toolsets over them."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator

import pytest
from rt_helpers import delegated_settings, staff_settings

from scopegate.examples.orders.server import RunningService, running_counting_service, running_orders_service
from scopegate.openapi.runtime import OperationToolset, ToolsetSettings


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
