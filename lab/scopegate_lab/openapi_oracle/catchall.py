"""A loopback HTTP server that answers ``200 {}`` to everything and records each request exactly as it arrived."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

CORRELATION_HEADER = "X-Request-ID"


@dataclass(frozen=True)
class ArrivedRequest:
    method: str
    target: str  # raw request target: percent-encoded path + "?" + query, as sent
    headers: tuple[tuple[str, str], ...]
    body: bytes

    @property
    def path(self) -> str:
        return self.target.partition("?")[0]

    @property
    def query(self) -> str:
        return self.target.partition("?")[2]

    def header(self, name: str) -> str | None:
        low = name.lower()
        return next((v for k, v in self.headers if k.lower() == low), None)


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        return

    def _record(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        arrived = ArrivedRequest(self.command, self.path, tuple(self.headers.items()), body)
        key = self.headers.get(CORRELATION_HEADER) or ""
        with self.server.lock:
            self.server.requests[key] = arrived
        payload = b"" if self.command == "HEAD" else b"{}"
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "2" if self.command == "HEAD" else str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = do_TRACE = _record


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.lock = threading.Lock()
        self.requests: dict[str, ArrivedRequest] = {}


class CatchAll:
    """``with CatchAll() as server: server.base_url ... server.take(request_id)``."""

    def __init__(self) -> None:
        self._server = _Server()
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def take(self, request_id: str) -> ArrivedRequest | None:
        with self._server.lock:
            return self._server.requests.pop(request_id, None)

    def __enter__(self) -> CatchAll:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
