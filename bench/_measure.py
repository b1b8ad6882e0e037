"""Measurement helpers for the workload benchmarks: phases with peak RSS, cache eviction, spreads.

- ``PeakRss``: peak resident memory of one phase of this process (Linux resets
  the high-water mark when ``5`` is written to ``/proc/self/clear_refs``).
- ``evict(paths)``: drop the page-cache pages of an index's files only
  (``posix_fadvise(DONTNEED)`` after ``fsync``), so a cold run reads from disk
  without flushing the caches of everyone else on a shared machine;
  ``drop_all_caches()`` is the global ``echo 3 > /proc/sys/vm/drop_caches``
  (root only) and says whether it was permitted.
- ``resident_fraction(paths)``: how much of the files is still cached (``mincore``
  through ``fincore`` when available), to check that eviction worked.
- ``spread(values)``: median, min and max over runs: every figure comes with it.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any


class PeakRss:
    """``with PeakRss() as rss: ...`` then ``rss.mb``: the peak RSS reached inside the block."""

    def __init__(self) -> None:
        self.mb = 0.0
        self.resettable = False

    def __enter__(self) -> PeakRss:
        try:
            Path("/proc/self/clear_refs").write_text("5")
            self.resettable = True
        except OSError:
            self.resettable = False  # then the figure is the process's peak so far
        return self

    def __exit__(self, *exc: object) -> None:
        self.mb = peak_rss_mb()


def peak_rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return round(int(line.split()[1]) / 1024, 1)
    import resource

    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def index_files(path: str | Path) -> list[Path]:
    return [p for p in Path(path).rglob("*") if p.is_file()]


def evict(paths: Iterable[Path]) -> int:
    """Drop the cached pages of ``paths``; returns how many files were evicted."""
    count = 0
    for path in paths:
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError:
            continue
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            count += 1
        finally:
            os.close(fd)
    return count


def drop_all_caches() -> bool:
    """The global page-cache drop; False when not permitted (not root, or a container)."""
    try:
        os.sync()
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
        return True
    except OSError:
        return False


def resident_fraction(paths: Iterable[Path]) -> float | None:
    """Cached bytes / file bytes for ``paths`` (via ``fincore``), or None when unavailable."""
    files = [str(p) for p in paths]
    if not files:
        return None
    try:
        out = subprocess.run(
            ["fincore", "--bytes", "--noheadings", "--output", "RES,SIZE", *files],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    resident = size = 0
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 2:
            resident += int(parts[0])
            size += int(parts[1])
    return round(resident / size, 4) if size else None


def percentiles(samples_ms: list[float]) -> dict[str, float]:
    s = sorted(samples_ms)
    if not s:
        return {}

    def q(p: float) -> float:
        return round(s[min(len(s) - 1, int(p * len(s)))], 4)

    return {"p50": q(0.50), "p95": q(0.95), "p99": q(0.99), "mean": round(statistics.fmean(s), 4), "n": len(s)}


def spread(values: list[float]) -> dict[str, float]:
    """Median over runs, with the lowest and highest run."""
    if not values:
        return {}
    return {
        "median": round(statistics.median(values), 4),
        "min": round(min(values), 4),
        "max": round(max(values), 4),
        "runs": len(values),
    }


def spread_of(runs: list[dict[str, Any]], *path: str) -> dict[str, float]:
    """``spread`` of the value at ``path`` in each run's result dict."""
    values = []
    for run in runs:
        value: Any = run
        for key in path:
            value = value[key]
        values.append(float(value))
    return spread(values)


def fmt(s: dict[str, float], digits: int = 2) -> str:
    """``median (min–max)`` for a Markdown table."""
    if not s:
        return "–"
    if s["runs"] == 1:
        return f"{s['median']:.{digits}f}"
    return f"{s['median']:.{digits}f} ({s['min']:.{digits}f}–{s['max']:.{digits}f})"


def fmt_int(s: dict[str, float]) -> str:
    if not s:
        return "–"
    if s["runs"] == 1:
        return f"{s['median']:,.0f}"
    return f"{s['median']:,.0f} ({s['min']:,.0f}–{s['max']:,.0f})"


def load_average() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
