"""A hostile upstream on 127.0.0.1: raw asyncio HTTP/1.1, so it can lie about framing.

It serves the operations of the ``openapi.json`` next to it:

* ``GET /bomb/{name}``: a body of the :data:`~.bombs.CATALOGUE`, framed as the
  bomb says (an honest or lying ``Content-Length``, or chunked);
* ``POST /servers``: creates a "server" and, carelessly, echoes its
  ``root_pass`` in the body (or, for ``region: "bad"``, in a 400 error);
* every response echoes the request's ``Authorization`` header back in
  ``X-Echo-Authorization``, so a client that logs response headers leaks it.

Every request is recorded (:attr:`HostileState.requests`). ``running_hostile_service()``
runs it in a background thread, like the orders example.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scopegate.errors import EngineNodeError
from scopegate.examples.orders.server import bind_loopback
from scopegate_lab.hostile.bombs import CATALOGUE, Bomb

SPEC_PATH = Path(__file__).with_name("openapi.json")
TOKEN = "hostile-token-4d1f9e27b08c4a6d93e5"
MAX_REQUEST_BODY = 1 << 20
START_TIMEOUT_S = 10.0


@dataclass
class Recorded:
    method: str
    target: str
    headers: dict[str, str]
    body: bytes


@dataclass
class HostileState:
    requests: list[Recorded] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def recorded(self) -> list[Recorded]:
        with self.lock:
            return list(self.requests)

    def reset(self) -> None:
        with self.lock:
            self.requests.clear()


def _head(status: int, reason: str, headers: list[tuple[str, str]]) -> bytes:
    lines = [f"HTTP/1.1 {status} {reason}", *(f"{k}: {v}" for k, v in headers), "", ""]
    return "\r\n".join(lines).encode("latin-1")


async def _read_request(reader: asyncio.StreamReader) -> Recorded | None:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
        return None
    lines = head.decode("latin-1").split("\r\n")
    method, target, _ = [*lines[0].split(" ", 2), "", ""][:3]
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if ":" in line:
            k, v = line.split(":", 1)
            headers[k.strip().lower()] = v.strip()
    length = int(headers.get("content-length", "0") or 0)
    body = await reader.readexactly(min(length, MAX_REQUEST_BODY)) if length else b""
    return Recorded(method, target, headers, body)


class HostileServer:
    def __init__(self, state: HostileState) -> None:
        self.state = state

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request = await _read_request(reader)
            if request is None:
                return
            with self.state.lock:
                self.state.requests.append(request)
                del self.state.requests[:-500]
            echo = [("X-Echo-Authorization", request.headers.get("authorization", "")), ("Connection", "close")]
            path = request.target.split("?", 1)[0]
            if request.method == "GET" and path.startswith("/bomb/") and path[6:] in CATALOGUE:
                await self._bomb(writer, CATALOGUE[path[6:]], echo)
            elif request.method == "POST" and path == "/servers":
                await self._create_server(writer, request, echo)
            else:
                await self._json(writer, 404, {"detail": "not found"}, echo)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass  # the client hung up: the usual end of a bomb
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    @staticmethod
    async def _json(writer: asyncio.StreamWriter, status: int, data: Any, extra: list[tuple[str, str]]) -> None:
        body = json.dumps(data).encode()
        reason = {200: "OK", 201: "Created", 400: "Bad Request", 404: "Not Found"}.get(status, "Status")
        headers = [("Content-Type", "application/json"), ("Content-Length", str(len(body))), *extra]
        writer.write(_head(status, reason, headers) + body)
        await writer.drain()

    async def _create_server(
        self, writer: asyncio.StreamWriter, request: Recorded, extra: list[tuple[str, str]]
    ) -> None:
        try:
            data = json.loads(request.body or b"{}")
        except ValueError:
            data = {}
        if not isinstance(data, dict):
            data = {}
        if data.get("region") == "bad":
            detail = f"Invalid root_pass {data.get('root_pass')!r} for region 'bad'"
            await self._json(
                writer, 400, {"detail": detail}, [("X-Echo-Root-Pass", str(data.get("root_pass"))), *extra]
            )
            return
        created = {
            "id": "srv_1",
            "name": data.get("name"),
            "region": data.get("region"),
            "root_pass": data.get("root_pass"),
        }
        await self._json(writer, 201, created, [("X-Echo-Root-Pass", str(data.get("root_pass"))), *extra])

    @staticmethod
    async def _bomb(writer: asyncio.StreamWriter, bomb: Bomb, extra: list[tuple[str, str]]) -> None:
        headers = [("Content-Type", bomb.content_type), *extra]
        if bomb.encoding:
            headers.append(("Content-Encoding", bomb.encoding))
        if bomb.framing == "length":
            body = b"".join([piece async for piece in bomb.body()])
            writer.write(_head(200, "OK", [*headers, ("Content-Length", str(len(body)))]))
            for i in range(0, len(body), 64 * 1024):
                writer.write(body[i : i + 64 * 1024])
                await writer.drain()
            return
        if bomb.framing in ("lie-short", "lie-long") and bomb.declared_length is not None:
            writer.write(_head(200, "OK", [*headers, ("Content-Length", str(bomb.declared_length()))]))
            async for piece in bomb.body():
                writer.write(piece)
                await writer.drain()
            return
        writer.write(_head(200, "OK", [*headers, ("Transfer-Encoding", "chunked")]))
        async for piece in bomb.body():
            writer.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            await writer.drain()
        writer.write(b"0\r\n\r\n")
        await writer.drain()


@dataclass
class RunningHostile:
    base_url: str
    state: HostileState
    loop: asyncio.AbstractEventLoop
    stop_event: asyncio.Event
    thread: threading.Thread

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.stop_event.set)
        self.thread.join(timeout=START_TIMEOUT_S)


def start_hostile(port: int = 0) -> RunningHostile:
    sock = bind_loopback(port)
    bound = sock.getsockname()[1]
    state = HostileState()
    ready = threading.Event()
    holder: dict[str, Any] = {}

    async def main() -> None:
        stop = asyncio.Event()
        holder["loop"], holder["stop"] = asyncio.get_running_loop(), stop
        server = await asyncio.start_server(HostileServer(state).handle, sock=sock)
        ready.set()
        async with server:
            await stop.wait()

    thread = threading.Thread(target=lambda: asyncio.run(main()), name=f"hostile-{bound}", daemon=True)
    thread.start()
    if not ready.wait(START_TIMEOUT_S):
        raise EngineNodeError("the hostile example service did not start")
    return RunningHostile(f"http://127.0.0.1:{bound}", state, holder["loop"], holder["stop"], thread)


@contextlib.contextmanager
def running_hostile_service(port: int = 0) -> Iterator[RunningHostile]:
    svc = start_hostile(port)
    try:
        yield svc
    finally:
        svc.stop()


async def _prebuild() -> None:
    for bomb in CATALOGUE.values():
        if bomb.framing == "length":
            async for _ in bomb.body():
                break


def serve_forever(port: int, *, prebuild: bool = False) -> None:
    """Run in the foreground (``python -m scopegate_lab.hostile --port N``) until interrupted.

    ``prebuild`` makes every fixed-size bomb before it accepts connections (for timing).
    """
    if prebuild:
        asyncio.run(_prebuild())
    svc = start_hostile(port)
    print(f"hostile service on {svc.base_url}", flush=True)
    try:
        svc.thread.join()
    except KeyboardInterrupt:
        svc.stop()
