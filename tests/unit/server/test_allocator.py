"""The server keeps freed heap memory (glibc's trim and mmap thresholds) rather than faulting it in per call."""

from __future__ import annotations

import platform
import subprocess
import sys

import pytest

from scopegate.config.model import ServerConfig
from scopegate.server.allocator import retain_freed_memory

GLIBC = sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc"


# Run in a fresh interpreter: earlier tests leave the allocator's state (thresholds, free chunks) behind.
PROBE = """
import ctypes, resource, sys
from scopegate.server.allocator import retain_freed_memory

def faults(rounds):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(rounds):
        blocks = [ctypes.create_string_buffer(300_000) for _ in range(4)]
        del blocks
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before

limit = int(sys.argv[1])
ok = retain_freed_memory(limit)
faults(5)
print(ok, faults(200))
"""


def _probe(limit: int) -> tuple[bool, int]:
    """(settings taken, minor faults while allocating and freeing four 300 KB blocks 200 times)."""
    out = subprocess.run(
        [sys.executable, "-c", PROBE, str(limit)], capture_output=True, text=True, timeout=60, check=True
    )
    ok, faults = out.stdout.split()
    return ok == "True", int(faults)


@pytest.mark.skipif(not GLIBC, reason="the thresholds are glibc's")
def test_retained_memory_is_not_faulted_in_again() -> None:
    ok, faults = _probe(128 * 1024)  # glibc's starting thresholds
    assert ok and faults > 2_000  # mapped and returned every round: each page faulted in again
    ok, faults = _probe(64 * 1024 * 1024)
    assert ok and faults < 20  # the heap grows once, then the same pages serve every round


def test_a_negative_limit_is_refused() -> None:
    with pytest.raises(ValueError, match="limit_bytes"):
        retain_freed_memory(-1)


def test_the_server_setting_has_a_default_and_can_be_switched_off() -> None:
    assert ServerConfig().retain_freed_memory_mb == 64
    assert ServerConfig(retain_freed_memory_mb=None).retain_freed_memory_mb is None
    with pytest.raises(ValueError):
        ServerConfig(retain_freed_memory_mb=-1)
