"""Engine failures in the log: one line per failed call with its cause, a rate-limited summary, and quiet
client libraries.

During an outage the client libraries log every failed request themselves, with a traceback
(opensearch-py: ~40 lines per request; elastic-transport: a line per node failure and retry): an
outage of 142 calls gave 6,112 lines. Their records below ERROR are kept only when their logger is
set to DEBUG, and their tracebacks likewise; scopegate says once per failed call what failed and why
(the root cause, no traceback) and, at most once a minute while failures go on, how many there were.
"""

from __future__ import annotations

import logging
import ssl
import threading
import time
from collections.abc import Callable, Sequence
from urllib.parse import urlsplit

log = logging.getLogger(__name__)

# The loggers the OpenSearch and Elasticsearch clients write per-request failures to. A logger's
# filter does not see its children's records, so each is named.
CLIENT_LOGGERS = (
    "opensearch",
    "elasticsearch",
    "elastic_transport.transport",
    "elastic_transport.node_pool",
    "elastic_transport.node",
)
SUMMARY_EVERY_S = 60.0
MAX_CAUSE_CHARS = 300


class _ClientNoise(logging.Filter):
    """Drops a client library's records below ERROR and its tracebacks unless its logger is at DEBUG."""

    def filter(self, record: logging.LogRecord) -> bool:
        if logging.getLogger(record.name).isEnabledFor(logging.DEBUG):
            return True
        if record.levelno < logging.ERROR:
            return False
        record.exc_info, record.exc_text, record.stack_info = None, None, None
        return True


_NOISE = _ClientNoise()
_quieted = False
_quiet_lock = threading.Lock()


def quiet_client_loggers() -> None:
    """Install the filter on the client libraries' loggers (once per process; safe to call again)."""
    global _quieted
    with _quiet_lock:
        if _quieted:
            return
        for name in CLIENT_LOGGERS:
            logging.getLogger(name).addFilter(_NOISE)
        _quieted = True


def host_list(urls: Sequence[str]) -> str:
    """``host:port`` of each URL, comma-separated: never the user, password or path a URL may carry."""
    hosts = []
    for url in urls:
        try:
            parts = urlsplit(url if "//" in url else f"//{url}")
            hosts.append(f"{parts.hostname}:{parts.port}" if parts.port else str(parts.hostname))
        except ValueError:
            hosts.append("?")
    return ",".join(hosts)


def root_cause(exc: BaseException) -> str:
    """``Type: message`` of the innermost exception ``exc`` was raised from (one line, bounded)."""
    seen: set[int] = set()
    inner = exc
    while id(inner) not in seen:
        seen.add(id(inner))
        nxt = inner.__cause__ or inner.__context__
        if nxt is None:
            break
        inner = nxt
    text = " ".join(f"{type(inner).__name__}: {inner}".split())
    return text[:MAX_CAUSE_CHARS]


def tls_failure(exc: BaseException) -> str | None:
    """The TLS library's reason when ``exc`` was raised from a failed TLS handshake (a certificate the
    other side refused, or one this side could not verify), else None. A handshake fails the same way on
    every retry: it is a configuration to fix, not an outage."""
    seen: set[int] = set()
    inner: BaseException | None = exc
    while inner is not None and id(inner) not in seen:
        seen.add(id(inner))
        if isinstance(inner, ssl.SSLCertVerificationError):  # aiohttp's wrapper is one too, without the fields
            found = getattr(inner, "reason", None) or getattr(inner, "verify_message", None)
            if found or inner.__cause__ is None:
                return str(found or "CERTIFICATE_VERIFY_FAILED")
        reason = str(getattr(inner, "reason", "") or "") if isinstance(inner, ssl.SSLError) else ""
        if "ALERT" in reason or "CERTIFICATE" in reason or reason == "WRONG_VERSION_NUMBER":
            return reason  # an alert the server sent (e.g. TLSV1_ALERT_UNKNOWN_CA), or https to a plain port
        inner = inner.__cause__ or inner.__context__
    return None


class FailureLog:
    """One engine's failed calls: a line each, and a summary at most every ``every_s`` seconds."""

    def __init__(
        self, engine: str, where: str, *, every_s: float = SUMMARY_EVERY_S, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.engine = engine
        self.where = where
        self.every_s = every_s
        self._clock = clock
        self._lock = threading.Lock()
        self._window_start = clock()
        self._in_window = 0
        self.total = 0

    def failed(self, target: str, error: BaseException, cause: BaseException | None) -> None:
        """Log one failed call on ``target``: ``error`` is what the caller gets, ``cause`` what the client raised."""
        reason = root_cause(cause) if cause is not None else str(error)
        log.warning("%s at %s: a call on %s failed: %s (%s)", self.engine, self.where, target, error, reason)
        now = self._clock()
        with self._lock:
            self.total += 1
            self._in_window += 1
            elapsed = now - self._window_start
            if elapsed < self.every_s:
                return
            count, self._in_window, self._window_start = self._in_window, 0, now
        log.warning(
            "%s at %s: %d failed call(s) in the last %.0f s (%d since start); last cause: %s",
            self.engine, self.where, count, elapsed, self.total, reason,
        )  # fmt: skip
