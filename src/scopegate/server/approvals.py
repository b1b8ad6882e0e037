"""Approvals are single-use: a ledger of the confirmation answers already spent.

Under protocol 2026-07-28 the user's approval comes back inside the sealed
request state (see :mod:`.confirm`), which any replica sharing the keys opens
for its whole lifetime. Sealing stops an answer moving to other arguments or
another user; it does not stop the same answer being sent again. So each
question carries a random ``call_id``, and the first answer that *claims* it
runs the call; every later answer with that id (on this replica or another,
with the same token or another one of the same user) is refused before
anything is sent.

The ledger must be shared by every process that can open the state:

* one process with its own random key (no ``request_state_keys_env``): its
  memory (state minted here opens nowhere else);
* replicas on one host: a SQLite file they all reach (``server.http.approvals_path``;
  by default ``scopegate-approvals.sqlite`` beside the config file, which
  replicas started from one deployment's config share). SQLite's locks do not
  hold over network file systems, so replicas on several hosts use Redis
  (``approvals_redis_url``, else ``guards.cache.redis_url``).

A claim that cannot be recorded refuses the call (fail closed).
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import anyio

from scopegate.errors import ConfigError

DEFAULT_FILE = "scopegate-approvals.sqlite"
BUSY_TIMEOUT_S = 5.0
REDIS_TIMEOUT_S = 1.0
REDIS_NAMESPACE = "scopegate:approval:"


class ApprovalLedger(Protocol):
    async def claim(self, call_id: str, ttl_s: float) -> bool:
        """True for the first claim of ``call_id`` in ``ttl_s`` seconds, False for every later one."""
        ...

    async def aclose(self) -> None: ...


class MemoryLedger:
    """One process's memory: enough when the request state opens only in this process."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._until: dict[str, float] = {}
        self._lock = threading.Lock()

    async def claim(self, call_id: str, ttl_s: float) -> bool:
        now = self._clock()
        with self._lock:
            if len(self._until) > 1024:
                self._until = {k: v for k, v in self._until.items() if v > now}
            if self._until.get(call_id, 0.0) > now:
                return False
            self._until[call_id] = now + ttl_s
            return True

    async def aclose(self) -> None:
        return None


class SqliteLedger:
    """A SQLite file every replica reaches; the primary key makes the first insert win across processes."""

    def __init__(self, path: Path, clock: Callable[[], float] = time.time) -> None:
        self.path = path
        self._clock = clock
        self._lock = threading.Lock()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False)
            # WAL: one sync per claim instead of three (the replicas share one host, see the module docstring);
            # synchronous FULL keeps a claim that was answered on disk through a power loss.
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS used (call_id TEXT PRIMARY KEY, expires_at REAL NOT NULL) WITHOUT ROWID"
            )
            self._db.execute("CREATE INDEX IF NOT EXISTS used_expiry ON used (expires_at)")
        except (OSError, sqlite3.Error) as exc:
            raise ConfigError(
                f"the approvals ledger {path} cannot be opened ({exc}); set server.http.approvals_path to a "
                "writable file every replica reaches, or approvals_redis_url"
            ) from exc

    def _claim(self, call_id: str, ttl_s: float) -> bool:
        now = self._clock()
        with self._lock:
            # One write transaction (one sync to disk): forget expired answers, record this one.
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.execute("DELETE FROM used WHERE expires_at < ?", (now,))
                self._db.execute("INSERT INTO used (call_id, expires_at) VALUES (?, ?)", (call_id, now + ttl_s))
            except sqlite3.IntegrityError:
                self._db.execute("ROLLBACK")
                return False
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")
            return True

    async def claim(self, call_id: str, ttl_s: float) -> bool:
        return await anyio.to_thread.run_sync(self._claim, call_id, ttl_s)

    async def aclose(self) -> None:
        with self._lock:
            self._db.close()


class RedisLedger:
    """Redis ``SET NX PX``: the first writer wins; the key expires with the request state."""

    def __init__(self, url: str, *, namespace: str = REDIS_NAMESPACE, timeout_s: float = REDIS_TIMEOUT_S) -> None:
        try:
            import redis.asyncio as aioredis  # optional dependency: scopegate[redis]
        except ImportError as exc:
            raise ConfigError("a Redis approvals ledger needs the redis extra: pip install 'scopegate[redis]'") from exc
        self.client: Any = aioredis.Redis.from_url(url, socket_timeout=timeout_s, socket_connect_timeout=timeout_s)
        self.namespace = namespace
        self.timeout_s = timeout_s

    async def claim(self, call_id: str, ttl_s: float) -> bool:
        key = self.namespace + call_id
        done = await asyncio.wait_for(self.client.set(key, b"1", nx=True, px=max(1, int(ttl_s * 1000))), self.timeout_s)
        return bool(done)

    async def aclose(self) -> None:
        await self.client.aclose()


def build_ledger(
    *,
    shared_keys: bool,
    path: Path | None,
    redis_url: str | None,
    cache_redis_url: str | None,
    config_file: Path | None,
) -> ApprovalLedger:
    """The ledger a server uses: the configured one, else the default described in the module docstring."""
    if path is not None and redis_url is not None:
        raise ConfigError("set server.http.approvals_path or approvals_redis_url, not both")
    if path is not None:
        return SqliteLedger(path)
    if redis_url is not None:
        return RedisLedger(redis_url)
    if not shared_keys:
        return MemoryLedger()
    if cache_redis_url is not None:
        return RedisLedger(cache_redis_url)
    if config_file is None:
        raise ConfigError(
            "server.http.request_state_keys_env is set (replicas), so used approvals must be recorded where every "
            "replica sees them: set server.http.approvals_path or approvals_redis_url"
        )
    return SqliteLedger(config_file.parent / DEFAULT_FILE)
