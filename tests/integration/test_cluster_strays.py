"""LocalCluster.stop leaves no JVM of its folder running, even one whose pid file is lost.

Real processes (a Python interpreter started with ``argv[0] == "java"`` and a
member's home path among its arguments, as a member's JVM has), no cluster.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from scopegate_lab.cluster import ClusterConfig, LocalCluster


def _exec_done(proc: subprocess.Popen[bytes], argv0: str) -> subprocess.Popen[bytes]:
    """Wait until the child has exec'd: until then /proc shows the forking parent's command line."""
    deadline = time.monotonic() + 30
    cmdline = Path(f"/proc/{proc.pid}/cmdline")
    while cmdline.read_bytes().split(b"\0", 1)[0] != argv0.encode() and time.monotonic() < deadline:
        time.sleep(0.01)
    return proc


def fake_jvm(home: Path) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(["java", "-c", "import time; time.sleep(120)", str(home)], executable=sys.executable)
    return _exec_done(proc, "java")


@pytest.fixture
def procs() -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for proc in started:
        proc.kill()
        proc.wait(timeout=10)


def test_stop_kills_a_member_jvm_without_pid_file(tmp_path: Path, procs: list[subprocess.Popen[bytes]]) -> None:
    cluster = LocalCluster(ClusterConfig(state_dir=tmp_path / "cl"))
    elsewhere = LocalCluster(ClusterConfig(state_dir=tmp_path / "cl-other"))  # a prefix of no member path
    ours = fake_jvm(tmp_path / "cl" / "data-1" / "home")
    theirs = fake_jvm(tmp_path / "cl-other" / "data-1" / "home")
    not_a_jvm = _exec_done(
        subprocess.Popen(  # e.g. someone's `tail -f .../node.log`
            ["python3", "-c", "import time; time.sleep(120)", str(tmp_path / "cl" / "data-1" / "home")],
            executable=sys.executable,
        ),
        "python3",
    )
    procs.extend([ours, theirs, not_a_jvm])

    assert cluster.stray_pids() == [ours.pid]
    assert elsewhere.stray_pids() == [theirs.pid]
    assert cluster.stop() is True  # nothing planned, but a stray was running
    assert ours.wait(timeout=10) == -9
    assert cluster.stray_pids() == []
    assert theirs.poll() is None and not_a_jvm.poll() is None  # another folder's JVM, a non-JVM: untouched
    assert cluster.stop() is False
