"""Shared fixtures: the demo spec, a small generated corpus, an embedded index."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from scopegate.backends.embedded import EmbeddedBackend
from scopegate.demo.corpus import generate_tickets, ticket_spec
from scopegate.search.spec import SearchSpec

if TYPE_CHECKING:
    from scopegate_lab.keycloak_realm import RealmInfo

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO_ROOT.parent / "shared" / "data"


def pytest_configure(config: pytest.Config) -> None:
    """Run with SIGINT at its default even when the launcher ignores it.

    A job started in the background of a non-interactive shell (or under nohup) inherits SIGINT ignored, and
    every child keeps it ignored across exec: the Ctrl-C tests would then send a signal nobody receives and
    time out. The commands are right to keep an ignored SIGINT ignored; the tests need one that is not.
    """
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


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


# -- the identity provider ---------------------------------------------------------------------
KEYCLOAK_URL_ENV = "SCOPEGATE_KEYCLOAK_URL"
KEYCLOAK_STARTER_ENV = "SCOPEGATE_KEYCLOAK_STARTER_PID"  # scripts/run-tests.sh starts it in the background
KEYCLOAK_STARTER_LOG = REPO_ROOT / ".cache" / "keycloak-start.log"  # that start's output


def _keycloak_unavailable(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"Keycloak is required in CI: {reason}")
    pytest.skip(f"Keycloak not available: {reason}")


def _starter_output() -> str:
    try:
        return "\n".join(KEYCLOAK_STARTER_LOG.read_text(errors="replace").strip().splitlines()[-20:])
    except OSError:
        return ""


@pytest.fixture(scope="session")
def keycloak() -> Iterator[RealmInfo]:
    """The local Keycloak with the test realm, for the whole session.

    ``SCOPEGATE_KEYCLOAK_URL`` names a running one (left running), as does a node
    already running in the state folder. Otherwise the node scripts/run-tests.sh
    started in the background is awaited, or this fixture starts one (fetching and
    building it first on a clean machine) and stops it at the end. Either way the
    wait is bounded by ``SCOPEGATE_KEYCLOAK_TIMEOUT`` (default 600 s); with ``CI=true``
    a provider that is not up by then fails the tests instead of skipping them.
    """
    from scopegate.engines._node import _pid_alive
    from scopegate.errors import EngineNodeError
    from scopegate_lab.keycloak_node import KeycloakNode, start_timeout
    from scopegate_lab.keycloak_realm import RealmInfo

    url = os.environ.get(KEYCLOAK_URL_ENV)
    node = KeycloakNode()
    owned = False
    try:
        budget = start_timeout()
    except EngineNodeError as exc:
        _keycloak_unavailable(str(exc))
    deadline = time.monotonic() + budget
    if not url:
        starter = os.environ.get(KEYCLOAK_STARTER_ENV)
        if starter:  # run-tests.sh's background start (bounded by the same timeout): wait for it to finish
            while _pid_alive(int(starter)) and time.monotonic() < deadline:
                time.sleep(0.5)
            if _pid_alive(int(starter)):
                _keycloak_unavailable(f"the background start did not finish within {budget:.0f}s")
            url = node.url() if node.pid() is not None else None
            if url is None:
                _keycloak_unavailable(
                    f"the background start failed:\n{_starter_output()}\n--- node log:\n{node.log_tail()}"
                )
        elif node.pid() is not None:  # one started by hand (scopegate engine keycloak start): keep it running
            url = node.url()
        else:
            owned = True
            try:
                url = node.start(clean=True, timeout_s=budget)
            except EngineNodeError as exc:
                node.stop()
                _keycloak_unavailable(str(exc))
    assert url is not None
    try:
        try:
            node.wait_green(url, timeout_s=max(deadline - time.monotonic(), 1.0))
        except EngineNodeError as exc:
            _keycloak_unavailable(str(exc))
        yield RealmInfo(url)
    finally:
        if owned:
            node.stop()
