"""Fixtures every integration folder may use: a real redis-server, a small embedded index. This folder is
importable from the engine folders (``engine_multiproc``: the tests shared by OpenSearch and Elasticsearch)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _ping(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as s:
            s.sendall(b"PING\r\n")
            return s.recv(16).startswith(b"+PONG")
    except OSError:
        return False


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    """A throwaway redis-server on 127.0.0.1 (no persistence), stopped after the session."""
    binary = shutil.which("redis-server")
    if binary is None:
        reason = "redis-server is not installed (Debian: apt-get install -y redis-server)"
        if os.environ.get("CI"):
            pytest.fail(reason + "; CI must provide it")
        print(f"SKIP: {reason}")
        pytest.skip(reason)
    port = _free_port()
    proc = subprocess.Popen(
        [
            binary,
            "--port", str(port),
            "--bind", "127.0.0.1",
            "--save", "",
            "--appendonly", "no",
            "--maxmemory", "64mb",
            "--maxmemory-policy", "allkeys-lru",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 15
        while not _ping(port):
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"redis-server did not start on port {port} (exit code {proc.poll()})")
            time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


@pytest.fixture
def index(tmp_path: Path) -> Path:
    """An embedded index folder of demo tickets (acme and globex, 40 each), closed, without lock files
    (as if copied from elsewhere: nothing to lean on)."""
    from scopegate.backends.embedded import EmbeddedBackend
    from scopegate.demo.corpus import generate_tickets, ticket_spec

    path = tmp_path / "index"
    backend = EmbeddedBackend(ticket_spec(), path)
    backend.ingest_sync(generate_tickets(per_tenant=40, tenants=("acme", "globex")))
    backend.close_sync()
    for lock in path.glob(".tantivy-*.lock"):
        lock.unlink()
    return path
