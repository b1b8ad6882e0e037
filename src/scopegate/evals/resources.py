"""Resident memory of this process (the eval reports it per case, model included)."""

from __future__ import annotations

import resource
from pathlib import Path


def rss_mb() -> float:
    """Current resident set size in MB (Linux /proc), else the peak from getrusage."""
    try:
        for line in Path("/proc/self/status").read_text("ascii").splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except (OSError, ValueError, IndexError):
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
