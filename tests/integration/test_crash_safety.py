"""kill -9 in the middle of an ingest never loses or corrupts what was already committed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from scopegate.backends.embedded import EmbeddedBackend
from scopegate.scope import Scope

BATCH = 500

WRITER = textwrap.dedent(
    """
    import sys
    from scopegate.backends.embedded import EmbeddedBackend
    from scopegate.demo.corpus import ticket_spec

    path, start = sys.argv[1], int(sys.argv[2])
    backend = EmbeddedBackend(ticket_spec(), path)

    def docs():
        i = start
        while True:
            yield {"ticket_id": f"C-{i:07d}", "tenant_id": "t" + str(i % 3), "product": "payments",
                   "status": "open", "subject": f"crash test {i}", "body": "refund failed E4012 " * 20}
            i += 1

    def committed(n):
        print(f"COMMITTED {start + n}", flush=True)

    backend.ingest_sync(docs(), batch_size=BATCH_SIZE, on_commit=committed)
    """
).replace("BATCH_SIZE", str(BATCH))


def run_and_kill(path: Path, start: int, commits_before_kill: int, writer: str = WRITER) -> int:
    """Run ``writer`` (a script printing ``COMMITTED <n>``) and SIGKILL it after that many commits."""
    proc = subprocess.Popen(
        [sys.executable, "-c", writer, str(path), str(start)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert proc.stdout is not None
    last = start
    seen = 0
    for line in proc.stdout:
        if line.startswith("COMMITTED"):
            last = int(line.split()[1])
            seen += 1
            if seen >= commits_before_kill:
                # The writer is already adding the next batch: kill it mid-batch.
                os.kill(proc.pid, signal.SIGKILL)
                break
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    return last


@pytest.mark.parametrize("round_count", [4])
def test_kill_9_mid_ingest_keeps_committed_data(tmp_path: Path, round_count: int) -> None:
    from scopegate.demo.corpus import ticket_spec

    path = tmp_path / "index"
    committed = 0
    for round_number in range(round_count):
        committed = run_and_kill(path, committed, commits_before_kill=2 + round_number)
        backend = EmbeddedBackend(ticket_spec(), path)
        total = backend.count_sync()
        # Everything reported committed is there; an uncommitted batch may or may not have landed whole.
        assert total >= committed, (round_number, total, committed)
        assert total % BATCH == 0, total
        assert backend.get_sync(f"C-{committed - 1:07d}", Scope(f"t{(committed - 1) % 3}")) is not None
        committed = total
    # The index is still writable and searchable after every crash.
    backend = EmbeddedBackend(ticket_spec(), path)
    report = backend.ingest_sync([{"ticket_id": "after", "tenant_id": "t0", "body": "after crash"}])
    assert report.indexed == 1
    assert backend.count_sync() == committed + 1
