"""Keep freed heap memory in the process instead of handing it back to the kernel after every call.

glibc's malloc gives the top of the heap back to the kernel as soon as more than
128 KiB of it is free (``M_TRIM_THRESHOLD``), and serves blocks over 128 KiB
straight from ``mmap`` (``M_MMAP_THRESHOLD``). A search over long bodies
allocates and frees a few hundred KB per call (five 30 KB bodies decoded by the
engine binding or the JSON parser, the response buffer), so with the defaults
every call trims the heap and the next one faults the same pages back in: work
that grows with the body and lands in the tool's overhead (issue 13:
bench/results/shaping.md measures both settings). Raising both thresholds keeps
up to ``limit`` freed bytes for the next call; memory beyond it is still returned.

Only glibc has these knobs; elsewhere (musl, macOS) :func:`retain_freed_memory`
changes nothing and says so. ``scopegate serve`` applies it at start-up
(``server.retain_freed_memory_mb``); an application that embeds the tools in
its own process decides for itself (call it, or set ``MALLOC_TRIM_THRESHOLD_``).
"""

from __future__ import annotations

import ctypes
import sys

from scopegate.config.model import MMAP_THRESHOLD_BYTES  # the config documents the same limit

# mallopt parameters (glibc's malloc.h).
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
# glibc's starting mmap threshold: a smaller limit never lowers it (0 would send every heap growth to mmap).
GLIBC_MMAP_THRESHOLD_BYTES = 128 * 1024


def retain_freed_memory(limit_bytes: int) -> bool:
    """Let glibc keep up to ``limit_bytes`` of freed heap; True when the allocator took both settings."""
    if limit_bytes < 0:
        raise ValueError(f"limit_bytes must be >= 0, not {limit_bytes}")
    if not sys.platform.startswith("linux"):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt  # the C library this process already runs on
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    limit = min(limit_bytes, 2**31 - 1)
    trimmed: bool = mallopt(M_TRIM_THRESHOLD, limit) == 1
    mmap_threshold = max(GLIBC_MMAP_THRESHOLD_BYTES, min(limit, MMAP_THRESHOLD_BYTES))
    mapped: bool = mallopt(M_MMAP_THRESHOLD, mmap_threshold) == 1
    return trimmed and mapped
