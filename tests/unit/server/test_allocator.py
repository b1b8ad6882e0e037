"""The server keeps freed heap memory (glibc's trim and mmap thresholds) rather than faulting it in per call."""

from __future__ import annotations

import ctypes
import platform
import resource
import sys

import pytest

from scopegate.config.model import ServerConfig
from scopegate.server.allocator import retain_freed_memory

GLIBC = sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc"


def _faults_over(rounds: int) -> int:
    """Minor page faults while allocating and freeing four 300 KB blocks, ``rounds`` times."""
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(rounds):
        blocks = [ctypes.create_string_buffer(300_000) for _ in range(4)]
        del blocks
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before


@pytest.mark.skipif(not GLIBC, reason="the thresholds are glibc's")
def test_retained_memory_is_not_faulted_in_again() -> None:
    try:
        assert retain_freed_memory(128 * 1024) is True  # glibc's starting thresholds
        _faults_over(5)
        assert _faults_over(200) > 2_000  # mapped and returned every round: each page faulted in again
        assert retain_freed_memory(64 * 1024 * 1024) is True
        _faults_over(5)  # the heap grows once
        assert _faults_over(200) < 20  # then the same pages serve every round
    finally:
        retain_freed_memory(128 * 1024)  # glibc's starting thresholds, for the rest of the session


def test_a_negative_limit_is_refused() -> None:
    with pytest.raises(ValueError, match="limit_bytes"):
        retain_freed_memory(-1)


def test_the_server_setting_has_a_default_and_can_be_switched_off() -> None:
    assert ServerConfig().retain_freed_memory_mb == 64
    assert ServerConfig(retain_freed_memory_mb=None).retain_freed_memory_mb is None
    with pytest.raises(ValueError):
        ServerConfig(retain_freed_memory_mb=-1)
