"""The call log: one JSON line per tool call, written off the call path.

``CallLog.emit`` only puts the record on a bounded queue; a background thread
encodes it and hands the line to every sink. A full queue drops the record, a
sink that raises is counted; neither ever blocks or fails the call.

Lines (schema ``v`` 1)::

    {"v":1,"event":"call","ts":"2025-01-01T12:00:00.123456+00:00","invocation_id":...,
     "session_id":...,"tool":"search_tickets","family":"search","tenant_id":"t1",
     "group_ids":[],"user_id":null,"query":"refund failed","filters":{},"page":1,
     "total":3,"total_relation":"eq","ids":["T-1","T-2","T-3"],"latency_ms":1.9,
     "cache_hit":false,"outcome":"ok","error_code":null}

plus ``operation_id`` / ``http_status`` (and any other field the tool's
``log_fields`` gives) for OpenAPI tools, and ``{"event":"answer",...}`` lines
when an invocation ended with a final answer.

Closing: ``close()`` (or ``with CallLog.to_file(...) as log:``, or ``async with Guard(...)``) writes
what is queued and closes the sinks. A log that is still open when the interpreter exits normally is
closed by an ``atexit`` hook, so a short script that never closes it still gets every line it
emitted (up to ``timeout_s`` of writing); a killed process loses at most what was queued.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import queue
import threading
import time
import weakref
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from scopegate.errors import ConfigError

SCHEMA_VERSION = 1
DEFAULT_QUEUE_SIZE = 10_000
DEFAULT_BATCH_DELAY_S = 0.05
MAX_BATCH = 1_000
DEFAULT_MAX_BYTES = 50 * 1024 * 1024
DEFAULT_BACKUPS = 5
MAX_LINE_CHARS = 64_000

# Fields the guard owns; a tool's log_fields cannot overwrite them.
GUARD_FIELDS = frozenset(
    {
        "v",
        "event",
        "ts",
        "invocation_id",
        "session_id",
        "tool",
        "family",
        "tenant_id",
        "group_ids",
        "user_id",
        "latency_ms",
        "cache_hit",
        "outcome",
    }
)


@runtime_checkable
class LogSink(Protocol):
    """Receives encoded JSON lines (without newline) on the writer thread. May raise."""

    def write(self, line: str) -> None: ...

    def flush(self) -> None: ...

    def close(self) -> None: ...


class RotatingFileSink:
    """Appends lines to ``path``; past ``max_bytes`` renames it to ``path.1`` (… ``path.N``)."""

    def __init__(self, path: str | Path, *, max_bytes: int = DEFAULT_MAX_BYTES, backups: int = DEFAULT_BACKUPS) -> None:
        if max_bytes < 1024:
            raise ConfigError("max_bytes must be at least 1024")
        if backups < 0:
            raise ConfigError("backups must be >= 0")
        self.path = Path(path)
        self.max_bytes = max_bytes
        self.backups = backups
        self._fh: Any = None
        self._size = 0

    def _open(self) -> Any:
        if self._fh is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fh = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - kept open across writes
            self._size = self._fh.tell()
        return self._fh

    def _rotate(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None
        if self.backups == 0:
            self.path.unlink(missing_ok=True)
            return
        for i in range(self.backups - 1, 0, -1):
            src = self.path.with_name(f"{self.path.name}.{i}")
            if src.exists():
                os.replace(src, self.path.with_name(f"{self.path.name}.{i + 1}"))
        if self.path.exists():
            os.replace(self.path, self.path.with_name(f"{self.path.name}.1"))

    def write(self, line: str) -> None:
        data = line + "\n"
        size = len(data.encode("utf-8"))
        fh = self._open()
        if self._size > 0 and self._size + size > self.max_bytes:
            self._rotate()
            fh = self._open()
        fh.write(data)
        self._size += size

    def flush(self) -> None:
        if self._fh is not None:
            self._fh.flush()

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None


class CallbackSink:
    """Sends each line to a function (a log shipper, a test list, ``print``)."""

    def __init__(self, fn: Callable[[str], Any]) -> None:
        self.fn = fn

    def write(self, line: str) -> None:
        self.fn(line)

    def flush(self) -> None:
        return None

    def close(self) -> None:
        return None


class MemorySink:
    """Keeps the last ``max_lines`` lines in memory (tests, small tools)."""

    def __init__(self, max_lines: int = 100_000) -> None:
        self.max_lines = max_lines
        self.lines: list[str] = []
        self._lock = threading.Lock()

    def write(self, line: str) -> None:
        with self._lock:
            self.lines.append(line)
            if len(self.lines) > self.max_lines:
                del self.lines[: len(self.lines) - self.max_lines]

    def records(self) -> list[dict[str, Any]]:
        with self._lock:
            return [json.loads(line) for line in self.lines]

    def flush(self) -> None:
        return None

    def close(self) -> None:
        return None


def utc_now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


def iso_from_epoch(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="microseconds")


def _default(value: Any) -> Any:
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    return repr(value)[:200]


# Characters ``str.splitlines`` (and some log shippers) treat as line breaks; JSON leaves them raw.
_LINE_BREAKS = {"\x85": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def _dumps(record: Mapping[str, Any]) -> str:
    line = json.dumps(record, ensure_ascii=False, separators=(",", ":"), default=_default, allow_nan=False)
    for raw, escaped in _LINE_BREAKS.items():
        if raw in line:
            line = line.replace(raw, escaped)
    return line


def encode_record(record: Mapping[str, Any]) -> str:
    """One line of JSON; records too long have their ``ids`` and ``query`` trimmed.

    A ``ts`` given as epoch seconds (what the guard queues, cheap on the call
    path) is written as an ISO 8601 UTC time.
    """
    ts = record.get("ts")
    if isinstance(ts, (int, float)) and not isinstance(ts, bool):
        record = {**record, "ts": iso_from_epoch(float(ts))}
    line = _dumps(record)
    if len(line) <= MAX_LINE_CHARS:
        return line
    trimmed = dict(record)
    if isinstance(trimmed.get("ids"), list):
        trimmed["ids"] = trimmed["ids"][:100]
    if isinstance(trimmed.get("query"), str):
        trimmed["query"] = trimmed["query"][:1000]
    trimmed["truncated"] = True
    line = _dumps(trimmed)
    if len(line) <= MAX_LINE_CHARS:
        return line
    keep = {k: trimmed[k] for k in GUARD_FIELDS | {"error_code", "total", "total_relation"} if k in trimmed}
    keep["truncated"] = True
    return _dumps(keep)


class CallLog:
    """A bounded queue and one daemon writer thread in front of the sinks."""

    def __init__(
        self, *sinks: LogSink, queue_size: int = DEFAULT_QUEUE_SIZE, batch_delay_s: float = DEFAULT_BATCH_DELAY_S
    ) -> None:
        self.sinks: list[LogSink] = list(sinks)
        self.batch_delay_s = max(0.0, batch_delay_s)
        self._queue: queue.Queue[dict[str, Any] | None] = queue.Queue(maxsize=max(1, queue_size))
        self.written = 0
        self.dropped = 0
        self.sink_errors = 0
        self.encode_errors = 0
        self._closed = False
        self._counter_lock = threading.Lock()
        self._listeners: list[Callable[[str], None]] = []
        self._thread = threading.Thread(target=self._drain, name="scopegate-calllog", daemon=True)
        self._thread.start()
        _OPEN_LOGS.add(self)

    @classmethod
    def to_file(
        cls, path: str | Path, *, max_bytes: int = DEFAULT_MAX_BYTES, backups: int = DEFAULT_BACKUPS
    ) -> CallLog:
        return cls(RotatingFileSink(path, max_bytes=max_bytes, backups=backups))

    def on_failure(self, fn: Callable[[str], None]) -> None:
        """Call ``fn(kind)`` (``"dropped"``, ``"sink_error"``, ``"encode_error"``) on each failure (metrics)."""
        self._listeners.append(fn)

    def _count(self, kind: str) -> None:
        with self._counter_lock:
            if kind == "dropped":
                self.dropped += 1
            elif kind == "sink_error":
                self.sink_errors += 1
            elif kind == "encode_error":
                self.encode_errors += 1
        for fn in self._listeners:
            with contextlib.suppress(Exception):
                fn(kind)

    def emit(self, record: Mapping[str, Any]) -> None:
        """Queue a record; never blocks, never raises."""
        if self._closed:
            self._count("dropped")
            return
        try:
            self._queue.put_nowait(dict(record))
        except queue.Full:
            self._count("dropped")
        except Exception:
            self._count("dropped")

    def _drain(self) -> None:
        """Writer thread: take what is queued in batches, one flush per batch.

        After the first record of a batch it waits ``batch_delay_s`` so records
        arriving meanwhile share the wake-up and the flush (lines reach the sinks
        at most that much later); it never holds more than ``MAX_BATCH`` records.
        """
        while True:
            first = self._queue.get()
            batch = [first]
            if first is not None and self.batch_delay_s > 0:
                time.sleep(self.batch_delay_s)
            while batch[-1] is not None and len(batch) < MAX_BATCH:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            try:
                self._write_batch([r for r in batch if r is not None])
                if batch[-1] is None:
                    return
            finally:
                for _ in batch:
                    self._queue.task_done()

    def _write_batch(self, records: list[dict[str, Any]]) -> None:
        written = 0
        for record in records:
            try:
                line = encode_record(record)
            except Exception:
                self._count("encode_error")
                continue
            for sink in self.sinks:
                try:
                    sink.write(line)
                except Exception:  # a broken sink is counted, not raised
                    self._count("sink_error")
            written += 1
        with self._counter_lock:
            self.written += written
        self._flush_sinks()

    def _flush_sinks(self) -> None:
        for sink in self.sinks:
            try:
                sink.flush()
            except Exception:
                self._count("sink_error")

    def flush(self, timeout_s: float = 5.0) -> bool:
        """Wait (blocking; not for the event loop) until queued records are written."""
        done = threading.Event()

        def waiter() -> None:
            self._queue.join()
            done.set()

        threading.Thread(target=waiter, daemon=True).start()
        return done.wait(timeout_s)

    def __enter__(self) -> CallLog:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def close(self, timeout_s: float = 5.0) -> None:
        """Write what is queued, then close the sinks. Blocking; call from sync code or a thread."""
        if self._closed:
            return
        self._closed = True
        _OPEN_LOGS.discard(self)
        with contextlib.suppress(queue.Full):
            self._queue.put(None, timeout=timeout_s)
        self._thread.join(timeout_s)
        for sink in self.sinks:
            try:
                sink.close()
            except Exception:
                self._count("sink_error")

    def stats(self) -> dict[str, int]:
        with self._counter_lock:
            return {
                "written": self.written,
                "dropped": self.dropped,
                "sink_errors": self.sink_errors,
                "encode_errors": self.encode_errors,
                "queued": self._queue.qsize(),
            }


# Logs not closed yet; closed (queued lines written) when the interpreter exits.
_OPEN_LOGS: weakref.WeakSet[CallLog] = weakref.WeakSet()


@atexit.register
def _close_open_logs() -> None:
    for call_log in list(_OPEN_LOGS):
        with contextlib.suppress(Exception):
            call_log.close()
