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
from collections import Counter
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


class _LinesLost(OSError):
    """The file sink's ``flush`` stored only part of what it was handed: ``lost`` lines (the last ones)
    are gone. Any other exception from a sink's ``flush`` means every line handed over since its last
    successful flush is gone; one from ``write`` means that line is."""

    def __init__(self, lost: int, cause: BaseException) -> None:
        super().__init__(f"{lost} call-log line(s) lost: {cause}")
        self.lost = lost


class _ShortWrite(Exception):
    def __init__(self, stored: int, cause: OSError) -> None:
        super().__init__(str(cause))
        self.stored = stored
        self.cause = cause


class RotatingFileSink:
    """Appends lines to ``path``; past ``max_bytes`` renames it to ``path.1`` (… ``path.N``).

    ``write`` only queues a line; ``flush`` writes the queued lines. A write the disk refuses
    (full, read-only) is cut back to the last whole line and the lines it did not keep are reported
    lost: the file never keeps a partial line, and the count is exact.
    """

    def __init__(self, path: str | Path, *, max_bytes: int = DEFAULT_MAX_BYTES, backups: int = DEFAULT_BACKUPS) -> None:
        if max_bytes < 1024:
            raise ConfigError("max_bytes must be at least 1024")
        if backups < 0:
            raise ConfigError("backups must be >= 0")
        self.path = Path(path)
        self.max_bytes = max_bytes
        self.backups = backups
        self._fd: int | None = None
        self._size = 0
        self._pending: list[bytes] = []

    def _open(self) -> int:
        if self._fd is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            self._size = os.fstat(self._fd).st_size
        return self._fd

    def _close_fd(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)

    def _rotate(self) -> None:
        self._close_fd()
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
        self._pending.append((line + "\n").encode("utf-8"))

    def flush(self) -> None:
        pending, self._pending = self._pending, []
        stored = 0
        try:
            chunk: list[bytes] = []
            size = 0  # bytes in chunk
            fd = self._open()
            for data in pending:
                if self._size + size > 0 and self._size + size + len(data) > self.max_bytes:
                    stored += self._append(fd, chunk)
                    chunk, size = [], 0
                    self._rotate()
                    fd = self._open()
                chunk.append(data)
                size += len(data)
            stored += self._append(fd, chunk)
        except _ShortWrite as exc:
            raise _LinesLost(len(pending) - stored - exc.stored, exc.cause) from exc.cause
        except OSError as exc:
            raise _LinesLost(len(pending) - stored, exc) from exc

    def _append(self, fd: int, chunk: list[bytes]) -> int:
        """Write ``chunk``; returns its line count. A refused write keeps the whole lines that reached
        the file, cuts off a partial one, and raises :class:`_ShortWrite` saying how many were kept."""
        data = memoryview(b"".join(chunk))
        start = self._size
        try:
            while data:
                data = data[os.write(fd, data) :]
        except OSError as exc:
            kept, end = 0, start
            with contextlib.suppress(OSError):
                reached = os.fstat(fd).st_size
                while kept < len(chunk) and end + len(chunk[kept]) <= reached:
                    end += len(chunk[kept])
                    kept += 1
                if reached > end:
                    os.ftruncate(fd, end)
            self._size = end
            raise _ShortWrite(kept, exc) from exc
        self._size = start + sum(len(c) for c in chunk)
        return len(chunk)

    def close(self) -> None:
        try:
            if self._pending:
                self.flush()
        finally:
            self._close_fd()


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
        self.records_lost: dict[str, int] = {}  # reason -> records that did not reach every sink
        self._closed = False
        self._counter_lock = threading.Lock()
        self._listeners: list[Callable[[str], None]] = []
        self._lost_listeners: list[Callable[[str, int], None]] = []
        self._thread = threading.Thread(target=self._drain, name="scopegate-calllog", daemon=True)
        self._thread.start()
        _OPEN_LOGS.add(self)

    @classmethod
    def to_file(
        cls, path: str | Path, *, max_bytes: int = DEFAULT_MAX_BYTES, backups: int = DEFAULT_BACKUPS
    ) -> CallLog:
        return cls(RotatingFileSink(path, max_bytes=max_bytes, backups=backups))

    def on_failure(self, fn: Callable[[str], None]) -> None:
        """Call ``fn(kind)`` (``"dropped"``, ``"sink_error"``, ``"encode_error"``) on each failure event (a
        failed flush is one event however many records it held; see :meth:`on_records_lost`)."""
        self._listeners.append(fn)

    def on_records_lost(self, fn: Callable[[str, int], None]) -> None:
        """Call ``fn(reason, n)`` when ``n`` records are lost: ``"dropped"`` (queue full or log closed),
        ``"encode_error"`` (not encodable), ``"sink_error"`` (a sink failed to store them)."""
        self._lost_listeners.append(fn)

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

    def _lose(self, reason: str, n: int) -> None:
        if n <= 0:
            return
        with self._counter_lock:
            self.records_lost[reason] = self.records_lost.get(reason, 0) + n
        for fn in self._lost_listeners:
            with contextlib.suppress(Exception):
                fn(reason, n)

    def emit(self, record: Mapping[str, Any]) -> None:
        """Queue a record; never blocks, never raises."""
        if self._closed:
            self._count("dropped")
            self._lose("dropped", 1)
            return
        try:
            self._queue.put_nowait(dict(record))
        except Exception:  # queue.Full, or a record that cannot be copied
            self._count("dropped")
            self._lose("dropped", 1)

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
        """Encode and hand every record to every sink, then flush each; what a sink lost is counted in
        records (a flush that fails loses what it held, not one line)."""
        misses: Counter[int] = Counter()  # position -> sinks that did not store it
        handed: list[list[int]] = [[] for _ in self.sinks]  # per sink: positions handed over
        encoded: list[int] = []
        for pos, record in enumerate(records):
            try:
                line = encode_record(record)
            except Exception:
                self._count("encode_error")
                self._lose("encode_error", 1)
                continue
            encoded.append(pos)
            for i, sink in enumerate(self.sinks):
                try:
                    sink.write(line)
                    handed[i].append(pos)
                except Exception:  # a broken sink is counted, not raised
                    self._count("sink_error")
                    misses[pos] += 1
        for i, sink in enumerate(self.sinks):
            try:
                sink.flush()
            except _LinesLost as exc:  # the last exc.lost lines handed over
                self._count("sink_error")
                misses.update(handed[i][max(0, len(handed[i]) - exc.lost) :] if exc.lost > 0 else [])
            except Exception:  # everything handed over since the last flush
                self._count("sink_error")
                misses.update(handed[i])
        nowhere = sum(1 for pos in encoded if misses[pos] >= len(self.sinks) > 0)
        with self._counter_lock:
            self.written += len(encoded) - nowhere  # stored by at least one sink
        self._lose("sink_error", len(misses))  # missing from at least one sink

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
            except Exception as exc:
                self._count("sink_error")
                self._lose("sink_error", exc.lost if isinstance(exc, _LinesLost) else 0)

    def stats(self) -> dict[str, int]:
        """``written``: records a sink stored; ``records_lost``: records that did not reach every sink
        (dropped, not encodable, or refused by a sink), each counted once; ``dropped``,
        ``sink_errors``, ``encode_errors``: failure events (a failed flush is one event)."""
        with self._counter_lock:
            return {
                "written": self.written,
                "records_lost": sum(self.records_lost.values()),
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
