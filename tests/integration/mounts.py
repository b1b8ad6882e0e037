"""Real read-only and full file systems for tests (root: mounts; otherwise chmod, which binds a non-root user).

Root ignores file modes, so as root the read-only folder is a read-only bind mount and the full disk a
size-limited ``tmpfs``; where mounting is impossible the test is skipped, saying why.
"""

from __future__ import annotations

import contextlib
import os
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = os.geteuid() == 0


@contextlib.contextmanager
def read_only(folder: Path, tmp_path: Path) -> Iterator[Path]:
    """``folder`` seen through a read-only mount (root) or made unwritable (non-root); yields the path to read."""
    if ROOT:
        view = tmp_path / "ro-mount"
        view.mkdir()
        done = subprocess.run(["mount", "--bind", str(folder), str(view)], capture_output=True, text=True)
        if done.returncode != 0:
            pytest.skip(f"cannot bind-mount as root here: {done.stderr.strip()}")
        try:
            subprocess.run(["mount", "-o", "remount,ro,bind", str(view)], check=True, capture_output=True)
            with pytest.raises(OSError):
                (view / "probe").write_text("x")  # really read-only
            yield view
        finally:
            subprocess.run(["umount", "-l", str(view)], check=True)  # lazily: mmaps of closed readers linger
    else:
        paths = [folder, *folder.rglob("*")]
        modes = {p: p.stat().st_mode for p in paths}
        for p in reversed(paths):  # children first: a closed folder would hide them
            p.chmod(stat.S_IMODE(modes[p]) & ~0o222)
        try:
            yield folder
        finally:
            for p, mode in modes.items():
                p.chmod(stat.S_IMODE(mode))


@contextlib.contextmanager
def small_disk(folder: Path, size: str) -> Iterator[Path]:
    """A tmpfs of ``size`` mounted at ``folder`` (root only), unmounted afterwards."""
    folder.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)], capture_output=True, text=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)
