"""The HTTP client and one bounded exchange: timeouts, byte limit, redirect policy.

* ``httpx.AsyncClient`` with connect/read/write/pool timeouts, ``trust_env=False``
  (no proxy or ``.netrc`` from the environment), never following redirects by
  itself.
* :func:`exchange` sends one request under a total deadline, follows a redirect
  only to the same origin (and under the pinned base path) or not at all, and
  reads the body with a byte limit through httpx streaming, so a huge response
  never reaches memory whole. It asks for ``identity`` encoding, reads the raw
  bytes and decodes any ``Content-Encoding`` itself (:mod:`.decoding`, in a
  worker thread), so the limit holds for the *decoded* bytes of every layer.
* Records the HTTP libraries log while a scopegate request is on its way have
  that call's secrets removed (:mod:`.logscrub`); nothing else is touched.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal
from urllib.parse import urljoin, urlsplit

import httpx

from scopegate.errors import ResponseUnreadable
from scopegate.openapi.runtime import logscrub
from scopegate.openapi.runtime.credentials import Redactor
from scopegate.openapi.runtime.decoding import BodyDecoder
from scopegate.openapi.runtime.request import BuiltRequest, origin

RedirectPolicy = Literal["same-origin", "none"]
Failure = Literal["timeout", "connect", "network", "redirect", "protocol", "encoding", "decode"]
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
MAX_ERROR_BODY = 64 * 1024
KEPT_HEADERS = ("content-type", "retry-after", "x-request-id", "request-id", "content-length")


@dataclass(frozen=True)
class Timeouts:
    connect: float = 3.0
    read: float = 10.0
    write: float = 10.0
    pool: float = 3.0
    total: float = 20.0


def make_client(timeouts: Timeouts | None = None, *, max_connections: int = 20) -> httpx.AsyncClient:
    t = timeouts or Timeouts()
    logscrub.install()
    return httpx.AsyncClient(
        timeout=httpx.Timeout(connect=t.connect, read=t.read, write=t.write, pool=t.pool),
        follow_redirects=False,
        trust_env=False,
        limits=httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_connections),
        headers={"Accept-Encoding": "identity", "User-Agent": "scopegate-openapi"},
    )


@dataclass(frozen=True)
class HttpOutcome:
    """What came back (never shown to a model as is)."""

    status: int | None
    headers: Mapping[str, str] = field(default_factory=dict)
    body: bytes = b""
    too_large: bool = False
    failure: Failure | None = None
    redirects: int = 0


def _follow_target(current: str, location: str, base_url: str) -> str | None:
    """The absolute redirect target if it stays on the base URL's origin and path prefix, else None."""
    target = urljoin(current, location)
    if origin(target) != origin(base_url):
        return None
    base_path = urlsplit(base_url).path.rstrip("/")
    path = urlsplit(target).path
    if base_path and not (path == base_path or path.startswith(base_path + "/")):
        return None
    return target


async def _read_limited(response: httpx.Response, max_bytes: int, *, prefix: bool = False) -> tuple[bytes, bool]:
    """At most ``max_bytes`` of the decoded body; ``(data, too_large)``. With ``prefix`` an overflow keeps the start.

    Raises :class:`ResponseUnreadable` for a body it cannot decode.
    """
    declared = response.headers.get("content-length")
    if not prefix and declared is not None and declared.isdigit() and int(declared) > max_bytes:
        return b"", True
    decoder = BodyDecoder(response.headers.get("content-encoding"), max_bytes)
    chunks: list[bytes] = []
    async for raw in response.aiter_raw():
        # Decompressors release the GIL: in a thread, a bomb costs the loop nothing.
        chunks.extend(await asyncio.to_thread(decoder.feed, raw) if decoder.layers else decoder.feed(raw))
        if decoder.over_limit:
            return (b"".join(chunks)[:max_bytes] if prefix else b""), True
    return b"".join(chunks), False


async def exchange(
    client: httpx.AsyncClient,
    request: BuiltRequest,
    *,
    max_bytes: int,
    timeout: float,
    redirects: RedirectPolicy = "same-origin",
    max_redirects: int = 3,
    redactor: Redactor | None = None,
) -> HttpOutcome:
    """One request (plus same-origin redirects) within ``timeout`` seconds. Never raises for I/O.

    ``redactor`` holds the call's secrets: they are removed from what the HTTP libraries log meanwhile.
    """
    try:
        with logscrub.scrubbing(redactor or Redactor()):
            async with asyncio.timeout(max(0.001, timeout)):
                return await _exchange(client, request, max_bytes, redirects, max_redirects)
    except ResponseUnreadable as exc:
        return HttpOutcome(None, failure="encoding" if exc.reason == "encoding" else "decode")
    except TimeoutError:
        return HttpOutcome(None, failure="timeout")
    except httpx.TimeoutException:
        return HttpOutcome(None, failure="timeout")
    except httpx.ConnectError:
        return HttpOutcome(None, failure="connect")
    except (httpx.NetworkError, httpx.RemoteProtocolError):
        return HttpOutcome(None, failure="network")
    except httpx.HTTPError:
        return HttpOutcome(None, failure="protocol")


async def _exchange(
    client: httpx.AsyncClient, request: BuiltRequest, max_bytes: int, redirects: RedirectPolicy, max_redirects: int
) -> HttpOutcome:
    method, url, body = request.method, request.url, request.body
    headers = request.header_list()
    hops = 0
    while True:
        async with client.stream(method, url, headers=headers, content=body) as response:
            status = response.status_code
            kept = {k: response.headers[k] for k in KEPT_HEADERS if k in response.headers}
            location = response.headers.get("location")
            if status in REDIRECT_STATUSES and location is not None:
                if redirects == "none":
                    return HttpOutcome(status, kept, redirects=hops)
                target = _follow_target(url, location, request.base_url)
                if target is None:
                    return HttpOutcome(status, kept, failure="redirect", redirects=hops)
                if hops >= max_redirects:
                    return HttpOutcome(status, kept, failure="redirect", redirects=hops)
            else:
                if method == "HEAD":
                    return HttpOutcome(status, kept, redirects=hops)
                if 200 <= status < 300:
                    data, too_large = await _read_limited(response, max_bytes)
                    return HttpOutcome(status, kept, data, too_large=too_large, redirects=hops)
                # An error body is only read for its message: a small prefix is enough, none if unreadable.
                try:
                    data, _ = await _read_limited(response, min(max_bytes, MAX_ERROR_BODY), prefix=True)
                except ResponseUnreadable:
                    data = b""
                return HttpOutcome(status, kept, data, redirects=hops)
        hops += 1
        url = target
        if status == 303 or (status in (301, 302) and method not in ("GET", "HEAD")):
            method, body = "GET", None
            headers = [(k, v) for k, v in headers if k.lower() != "content-type"]
