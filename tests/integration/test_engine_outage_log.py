"""Issue 36 (L8): an engine outage gives one log line per failed call, with its cause, and no traceback.

The client libraries logged every failed request with a traceback: 6,112 lines for 142 calls. Here
the engine is a closed loopback port (nothing listens), the calls go through the guard, and the log
is configured as ``scopegate serve`` configures it.
"""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

from scopegate.backends.outage import FailureLog

CALLS = 30
HELPER = Path(__file__).with_name("outage_calls.py")


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])  # closed again when the block ends: connections are refused


@pytest.mark.parametrize("engine", ["opensearch", "elasticsearch"])
def test_an_outage_logs_one_line_per_failed_call_with_its_cause(engine: str) -> None:
    port = closed_port()
    done = subprocess.run(
        [sys.executable, str(HELPER), engine, f"http://127.0.0.1:{port}", str(CALLS)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["SEARCH_UNAVAILABLE"] * CALLS  # every call a structured error
    lines = done.stderr.splitlines()
    assert "Traceback" not in done.stderr
    failed = [line for line in lines if "a call on tickets-read failed" in line]
    assert len(failed) == CALLS  # one per failed call...
    assert all("ConnectionRefusedError" in line and f"127.0.0.1:{port}" in line for line in failed)  # ...with the cause
    assert len(lines) <= CALLS + 2, "\n".join(lines[:40])  # and next to nothing else (was ~78 lines a call)


def test_the_summary_comes_at_most_once_a_window(caplog: pytest.LogCaptureFixture) -> None:
    now = [0.0]
    failures = FailureLog("opensearch", "127.0.0.1:9200", every_s=60, clock=lambda: now[0])
    cause = ConnectionRefusedError(111, "Connection refused")
    with caplog.at_level("WARNING", logger="scopegate.backends.outage"):
        for _ in range(3):  # three minutes of an outage, a failed call every second
            for _ in range(60):
                now[0] += 1
                failures.failed("tickets-read", RuntimeError("cannot reach OpenSearch"), cause)
    summaries = [r.getMessage() for r in caplog.records if "failed call(s) in the last" in r.getMessage()]
    assert len(summaries) == 3
    assert summaries[0].startswith("opensearch at 127.0.0.1:9200: 60 failed call(s) in the last 60 s (60 since start)")
    assert "ConnectionRefusedError: [Errno 111] Connection refused" in summaries[-1]
    assert len(caplog.records) == 180 + 3 and all(r.exc_info is None for r in caplog.records)
