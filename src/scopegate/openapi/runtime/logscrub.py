"""Keep scopegate's secrets out of the HTTP libraries' logs, for scopegate's own requests only.

httpx logs every request URL at INFO (an API key may be in the query) and
httpcore logs response headers at DEBUG (an upstream may echo the bearer
token). Changing those loggers' levels or filtering every record would change
logging for every other user of httpx in the process. Instead, a request of
scopegate runs inside :func:`scrubbing`, which puts that call's
:class:`~.credentials.Redactor` into a context variable; a filter on the
library loggers rewrites a record only while that variable is set, that is,
only for records emitted by the task that is sending a scopegate request. Any
other record passes through untouched, and the filter never drops one.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from scopegate.openapi.runtime.credentials import Redactor

# Every logger of the HTTP stack that can see a URL, a header or a body.
LIBRARY_LOGGERS = (
    "httpx",
    "httpcore.connection",
    "httpcore.http11",
    "httpcore.http2",
    "httpcore.proxy",
    "httpcore.socks",
    "hpack.hpack",
    "hpack.table",
    "h2.connection",
)

_ACTIVE: ContextVar[Redactor | None] = ContextVar("scopegate_log_redactor", default=None)


class _ScopedRedaction(logging.Filter):
    """Redacts the active call's secrets from a record; a no-op outside a scopegate request."""

    def filter(self, record: logging.LogRecord) -> bool:
        redactor = _ACTIVE.get()
        if redactor is None or not redactor.active:
            return True
        try:
            message = record.getMessage()
        except Exception:  # a broken record is the logging module's business, not ours
            return True
        cleaned = redactor.text(message)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        return True


_FILTER = _ScopedRedaction()


def install() -> None:
    """Add the scoped filter (once) to each library logger. It changes nothing outside scopegate calls."""
    for name in LIBRARY_LOGGERS:
        lib_logger = logging.getLogger(name)
        if _FILTER not in lib_logger.filters:
            lib_logger.addFilter(_FILTER)


@contextmanager
def scrubbing(redactor: Redactor) -> Iterator[None]:
    """Within the block, library log records of this task have ``redactor``'s secrets removed."""
    token = _ACTIVE.set(redactor)
    try:
        yield
    finally:
        _ACTIVE.reset(token)
