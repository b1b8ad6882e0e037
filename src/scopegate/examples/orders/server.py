"""Run an example service on a free 127.0.0.1 port, in a background thread, and stop it.

Used by the integration tests, the demo and the benchmark::

    with running_orders_service() as svc:
        svc.base_url        # "http://127.0.0.1:54321"
        svc.state.hits("getOrder")
"""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import uvicorn

from scopegate.errors import EngineNodeError
from scopegate.examples.orders.app import ServiceState, create_app, create_counting_app
from scopegate.examples.orders.oidc import OidcSettings

START_TIMEOUT_S = 10.0


def bind_loopback(port: int = 0) -> socket.socket:
    """A listening TCP socket on 127.0.0.1 (port 0: the OS picks a free one)."""
    # IPPROTO_TCP explicitly: asyncio only sets TCP_NODELAY on accepted sockets whose proto says TCP.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


@dataclass
class RunningService:
    base_url: str
    port: int
    state: ServiceState
    server: uvicorn.Server
    thread: threading.Thread

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=START_TIMEOUT_S)


def start_in_thread(app: Any, state: ServiceState, port: int = 0) -> RunningService:
    """Serve ``app`` with uvicorn in a daemon thread; returns once it accepts connections."""
    sock = bind_loopback(port)
    bound = sock.getsockname()[1]
    config = uvicorn.Config(
        app, log_level="warning", access_log=False, lifespan="off", timeout_graceful_shutdown=1, loop="asyncio"
    )
    server = uvicorn.Server(config)
    errors: list[BaseException] = []

    def run() -> None:
        try:
            asyncio.run(server.serve(sockets=[sock]))
        except BaseException as exc:  # surfaced by the waiting caller
            errors.append(exc)
        finally:
            sock.close()

    thread = threading.Thread(target=run, name=f"example-service-{bound}", daemon=True)
    thread.start()
    deadline = threading.Event()
    waited = 0.0
    while not server.started and thread.is_alive() and waited < START_TIMEOUT_S:
        deadline.wait(0.01)
        waited += 0.01
    if not server.started:
        server.should_exit = True
        raise EngineNodeError(f"example service did not start: {errors[0] if errors else 'timeout'}")
    return RunningService(f"http://127.0.0.1:{bound}", bound, state, server, thread)


@contextmanager
def running_orders_service(port: int = 0, *, oidc: OidcSettings | None = None) -> Iterator[RunningService]:
    """The orders API on 127.0.0.1 for the duration of the ``with`` block (``oidc``: provider JWTs too)."""
    state = ServiceState()
    svc = start_in_thread(create_app(state, oidc=oidc), state, port)
    try:
        yield svc
    finally:
        svc.stop()


@contextmanager
def running_counting_service(port: int = 0) -> Iterator[RunningService]:
    """A catch-all service that counts every request it receives (the SSRF "attacker")."""
    app, state = create_counting_app()
    svc = start_in_thread(app, state, port)
    try:
        yield svc
    finally:
        svc.stop()
