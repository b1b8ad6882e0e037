"""The HTTP client and one bounded exchange: timeouts, byte limit, redirect policy.

* ``httpx.AsyncClient`` with connect/read/write/pool timeouts, ``trust_env=False``
  (no proxy or ``.netrc`` from the environment), never following redirects by
  itself.
* :func:`exchange` sends one request under a total deadline, follows a redirect
  only to the same origin (and under the pinned base path) or not at all, and
  reads the body with a byte limit through httpx streaming, so a huge response
  never reaches memory whole. It asks for ``identity`` encoding so the limit is
  on real bytes, not on a compressed stream.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal
from urllib.parse import urljoin, urlsplit

import httpx

from scopegate.openapi.runtime.request import BuiltRequest, origin

RedirectPolicy = Literal["same-origin", "none"]
Failure = Literal["timeout", "connect", "network", "redirect", "protocol"]
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


class _HideQueryFilter(logging.Filter):
    """httpx logs every request URL at INFO; an API key may sit in the query string. Hide queries."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple) and any(isinstance(a, httpx.URL) for a in record.args):
            record.args = tuple(
                a.copy_with(query=b"hidden") if isinstance(a, httpx.URL) and a.query else a for a in record.args
            )
        return True


_QUERY_FILTER = _HideQueryFilter()


def hide_query_strings_in_httpx_logs() -> None:
    """Install (once) a filter on the ``httpx`` logger that replaces URL query strings with ``hidden``."""
    httpx_logger = logging.getLogger("httpx")
    if _QUERY_FILTER not in httpx_logger.filters:
        httpx_logger.addFilter(_QUERY_FILTER)


def make_client(timeouts: Timeouts | None = None, *, max_connections: int = 20) -> httpx.AsyncClient:
    t = timeouts or Timeouts()
    hide_query_strings_in_httpx_logs()
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
    """At most ``max_bytes`` of the body; ``(data, too_large)``. With ``prefix`` an overflow keeps the start."""
    declared = response.headers.get("content-length")
    if not prefix and declared is not None and declared.isdigit() and int(declared) > max_bytes:
        return b"", True
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        chunks.append(chunk)
        if size > max_bytes:
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
) -> HttpOutcome:
    """One request (plus same-origin redirects) within ``timeout`` seconds. Never raises for I/O."""
    try:
        async with asyncio.timeout(max(0.001, timeout)):
            return await _exchange(client, request, max_bytes, redirects, max_redirects)
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
                # An error body is only read for its message: a small prefix is enough.
                data, _ = await _read_limited(response, min(max_bytes, MAX_ERROR_BODY), prefix=True)
                return HttpOutcome(status, kept, data, redirects=hops)
        hops += 1
        url = target
        if status == 303 or (status in (301, 302) and method not in ("GET", "HEAD")):
            method, body = "GET", None
            headers = [(k, v) for k, v in headers if k.lower() != "content-type"]
