"""Serve the dashboard on the loopback interface (``scopegate dashboard LOG``).

The call log holds tenant ids and users' queries, so the page is only ever bound to 127.0.0.1, and a
request whose ``Host`` header names anything but the loopback address or ``localhost`` is refused
(421), so another web site cannot read it through DNS rebinding. Each request re-reads the log
files: the page shows what was logged up to that moment. Routes: ``/`` the page, ``/data.json`` the
same numbers as JSON, ``/healthz``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from scopegate.dashboard.data import DEFAULT_BUCKETS, DEFAULT_TOP, Dashboard, dashboard_from_log
from scopegate.dashboard.page import CSP, render_page

HOST = "127.0.0.1"
ALLOWED_HOSTS = frozenset({"127.0.0.1", "localhost"})


class DashboardServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, port: int, build: Callable[[], Dashboard], *, source: str, refresh_s: int | None) -> None:
        super().__init__((HOST, port), _Handler)
        self.build = build
        self.source = source
        self.refresh_s = refresh_s

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.server_address[1]}/"


def _host_allowed(header: str | None) -> bool:
    if not header or header.startswith("["):  # no Host, or an IPv6 literal: the server is not bound there
        return False
    return header.rsplit(":", 1)[0].lower() in ALLOWED_HOSTS


class _Handler(BaseHTTPRequestHandler):
    server: DashboardServer
    server_version = "scopegate-dashboard"

    def log_message(self, format: str, *args: Any) -> None:
        return None  # quiet: the command's stderr carries only its own lines

    def _send(self, status: HTTPStatus, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Content-Security-Policy", CSP)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_GET(self) -> None:
        if not _host_allowed(self.headers.get("Host")):
            self._send(HTTPStatus.MISDIRECTED_REQUEST, b"this page is served on 127.0.0.1 only\n", "text/plain")
            return
        path = self.path.split("?", 1)[0]
        if path == "/healthz":
            self._send(HTTPStatus.OK, b"ok\n", "text/plain")
            return
        if path not in ("/", "/data.json"):
            self._send(HTTPStatus.NOT_FOUND, b"not found\n", "text/plain")
            return
        try:
            dashboard = self.server.build()
        except Exception as exc:  # a log file removed or unreadable meanwhile: say so on the page
            self._send(HTTPStatus.SERVICE_UNAVAILABLE, f"cannot read the call log: {exc}\n".encode(), "text/plain")
            return
        if path == "/data.json":
            body = json.dumps(dashboard.as_dict(), ensure_ascii=False, allow_nan=False).encode()
            self._send(HTTPStatus.OK, body, "application/json")
            return
        page = render_page(dashboard, source=self.server.source, refresh_s=self.server.refresh_s)
        self._send(HTTPStatus.OK, page.encode(), "text/html; charset=utf-8")

    do_HEAD = do_GET


def make_server(
    paths: Sequence[str | Path],
    *,
    port: int = 0,
    window: timedelta | None = None,
    until: datetime | None = None,
    buckets: int = DEFAULT_BUCKETS,
    top: int = DEFAULT_TOP,
    refresh_s: int | None = 30,
) -> DashboardServer:
    """A server (not yet serving) for the dashboard of ``paths``; ``port`` 0 picks a free one."""
    files = list(paths)

    def build() -> Dashboard:
        return dashboard_from_log(files, window=window, until=until, buckets=buckets, top=top)

    return DashboardServer(port, unless_unchanged(files, build), source=", ".join(str(p) for p in files),
                           refresh_s=refresh_s)  # fmt: skip


def unless_unchanged(paths: Sequence[str | Path], build: Callable[[], Dashboard]) -> Callable[[], Dashboard]:
    """``build``, re-run only when a file's size or modification time changed since the last run (a page
    that reloads itself every 30 s costs nothing while the log is idle; 100k records take ~2 s to read)."""
    lock = threading.Lock()
    last: list[tuple[tuple[tuple[int, int], ...] | None, Dashboard]] = []

    def stamp() -> tuple[tuple[int, int], ...] | None:
        try:
            stats = [Path(p).stat() for p in paths]
        except OSError:  # gone or unreadable: build() says what is wrong
            return None
        return tuple((st.st_size, st.st_mtime_ns) for st in stats)

    def cached() -> Dashboard:
        with lock:
            now = stamp()
            if now is not None and last and last[0][0] == now:
                return last[0][1]
            dashboard = build()
            last[:] = [(now, dashboard)]
            return dashboard

    return cached


def serve_in_thread(server: DashboardServer) -> threading.Thread:
    """Serve on a daemon thread (tests, embedding); stop with ``server.shutdown()``."""
    thread = threading.Thread(target=server.serve_forever, name="scopegate-dashboard", daemon=True)
    thread.start()
    return thread
