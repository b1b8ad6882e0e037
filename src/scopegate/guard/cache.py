"""A result cache that can never hand one scope's results to another.

* The key is the tool name, the full scope (tenant, sorted groups, user) and
  the normalised arguments (keywords with case and whitespace folded, filters
  sorted, page), encoded as canonical JSON of a list and hashed with SHA-256.
  JSON string escaping makes the encoding injective, so two different
  (tool, scope, arguments) triples only share a key through a SHA-256
  collision; the entry also stores its scope, which is checked on every read.
* Every entry carries the backend generation it was computed at; a lookup at
  another generation drops it (ingest, alias switch). Entries are a header line
  ``[scope, generation]`` and the result JSON: both are checked before the
  result is decoded.
* TTL plus LRU in memory by default; :class:`RedisStore` for several processes.
* Only successful results of read-only tools in the cached families are stored.
* A broken store is a cache miss, never a failed call.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from scopegate.errors import ConfigError
from scopegate.scope import Scope
from scopegate.search.normalise import normalise_keywords, search_cache_args
from scopegate.tools import Cacheable, LogFields, ScopedTool, ToolOutcome

__all__ = [
    "CacheStore",
    "GenerationTracker",
    "MemoryStore",
    "RedisStore",
    "TieredStore",
    "ToolCache",
    "cache_args",
    "cache_key",
    "normalise_keywords",
    "scope_part",
    "search_cache_args",
]

CACHE_KEY_VERSION = "scopegate-cache-v2"
KEY_PREFIX = "sgc2:"
DEFAULT_TTL_S = 300.0
DEFAULT_MAX_ENTRIES = 10_000
DEFAULT_MAX_VALUE_CHARS = 256_000


def scope_part(scope: Scope) -> list[Any]:
    """Tenant, sorted distinct groups, user (``None`` stays ``None``)."""
    return [scope.tenant_id, sorted(set(scope.group_ids)), scope.user_id]


def _canonical(value: Any) -> str:
    return json.dumps(value, ensure_ascii=True, sort_keys=True, separators=(",", ":"), allow_nan=False)


def cache_args(tool: ScopedTool, args: Mapping[str, Any]) -> Any:
    """What the key encodes of ``args``: a :class:`Cacheable` tool's own normalisation,
    the arguments verbatim otherwise."""
    if isinstance(tool, Cacheable):
        return tool.cache_args(args)
    return {str(k): v for k, v in args.items()}


def cache_key(tool_name: str, scope: Scope, normalised_args: Any) -> str:
    """``sgc2:`` + SHA-256 of canonical JSON ``[version, tool, scope, args]``. Raises on non-JSON args."""
    payload = _canonical([CACHE_KEY_VERSION, tool_name, scope_part(scope), normalised_args])
    return KEY_PREFIX + hashlib.sha256(payload.encode("ascii")).hexdigest()


# -- stores -------------------------------------------------------------------
@runtime_checkable
class CacheStore(Protocol):
    """Where encoded entries live. Implementations may raise; :class:`ToolCache` absorbs it."""

    async def get(self, key: str) -> str | None: ...

    async def set(self, key: str, value: str, ttl_s: float) -> None: ...

    async def delete(self, key: str) -> None: ...

    async def clear(self) -> None: ...

    async def close(self) -> None: ...


class MemoryStore:
    """TTL + LRU in this process. Thread-safe; at most ``max_entries`` entries."""

    def __init__(self, max_entries: int = DEFAULT_MAX_ENTRIES, *, clock: Callable[[], float] = time.monotonic) -> None:
        if max_entries < 1:
            raise ConfigError("max_entries must be at least 1")
        self.max_entries = max_entries
        self._clock = clock
        self._data: OrderedDict[str, tuple[float, str]] = OrderedDict()
        self._lock = threading.Lock()

    async def get(self, key: str) -> str | None:
        now = self._clock()
        with self._lock:
            item = self._data.get(key)
            if item is None:
                return None
            expires, value = item
            if expires <= now:
                del self._data[key]
                return None
            self._data.move_to_end(key)
            return value

    async def set(self, key: str, value: str, ttl_s: float) -> None:
        expires = self._clock() + ttl_s
        with self._lock:
            self._data[key] = (expires, value)
            self._data.move_to_end(key)
            while len(self._data) > self.max_entries:
                self._data.popitem(last=False)

    async def delete(self, key: str) -> None:
        with self._lock:
            self._data.pop(key, None)

    async def clear(self) -> None:
        with self._lock:
            self._data.clear()

    async def close(self) -> None:
        await self.clear()

    def __len__(self) -> int:
        with self._lock:
            return len(self._data)

    def keys(self) -> list[str]:
        with self._lock:
            return list(self._data)


class RedisStore:
    """Entries in Redis (``redis.asyncio``), shared by several server processes.

    TTL is Redis' own expiry (``SET ... PX``); for LRU, configure the server with
    ``maxmemory`` and ``maxmemory-policy allkeys-lru``. Every operation has a
    client-side timeout.
    """

    def __init__(
        self,
        client: Any = None,
        *,
        url: str | None = None,
        namespace: str = "scopegate:cache:",
        timeout_s: float = 0.25,
    ) -> None:
        if client is None:
            if url is None:
                raise ConfigError("RedisStore needs a client or a url")
            import redis.asyncio as aioredis  # optional dependency: scopegate[redis]

            client = aioredis.Redis.from_url(
                url, socket_timeout=timeout_s, socket_connect_timeout=timeout_s, decode_responses=False
            )
        self.client = client
        self.namespace = namespace
        self.timeout_s = timeout_s

    async def get(self, key: str) -> str | None:
        raw = await asyncio.wait_for(self.client.get(self.namespace + key), self.timeout_s)
        if raw is None:
            return None
        return raw.decode("utf-8") if isinstance(raw, bytes) else str(raw)

    async def set(self, key: str, value: str, ttl_s: float) -> None:
        await asyncio.wait_for(
            self.client.set(self.namespace + key, value.encode("utf-8"), px=max(1, int(ttl_s * 1000))), self.timeout_s
        )

    async def delete(self, key: str) -> None:
        await asyncio.wait_for(self.client.delete(self.namespace + key), self.timeout_s)

    async def clear(self) -> None:
        """Delete this namespace's keys (SCAN + UNLINK; never FLUSHDB)."""
        batch: list[Any] = []
        async for name in self.client.scan_iter(match=self.namespace + "*", count=500):
            batch.append(name)
            if len(batch) >= 500:
                await self.client.unlink(*batch)
                batch = []
        if batch:
            await self.client.unlink(*batch)

    async def close(self) -> None:
        await self.client.aclose()


class TieredStore:
    """A small in-process store in front of a shared one (e.g. Redis).

    Reads try the local tier first; a shared-tier hit is copied locally for at
    most ``local_ttl_s``. Writes, deletes and clears go to both. Entries carry
    their scope and generation, so a local copy is checked exactly like a
    shared one; only the TTL can stretch, by at most ``local_ttl_s``.
    """

    def __init__(self, local: CacheStore, shared: CacheStore, *, local_ttl_s: float = 5.0) -> None:
        if not local_ttl_s > 0:
            raise ConfigError("local_ttl_s must be positive")
        self.local = local
        self.shared = shared
        self.local_ttl_s = local_ttl_s

    async def get(self, key: str) -> str | None:
        value = await self.local.get(key)
        if value is not None:
            return value
        value = await self.shared.get(key)
        if value is not None:
            await self.local.set(key, value, self.local_ttl_s)
        return value

    async def set(self, key: str, value: str, ttl_s: float) -> None:
        await self.local.set(key, value, min(ttl_s, self.local_ttl_s))
        await self.shared.set(key, value, ttl_s)

    async def delete(self, key: str) -> None:
        await self.local.delete(key)
        await self.shared.delete(key)

    async def clear(self) -> None:
        await self.local.clear()
        await self.shared.clear()

    async def close(self) -> None:
        try:
            await self.local.close()
        finally:
            await self.shared.close()


# -- the cache the guard uses ---------------------------------------------------
@dataclass
class CacheStats:
    hits: int = 0
    misses: int = 0
    stale: int = 0
    stores: int = 0
    errors: int = 0
    scope_mismatches: int = 0

    def as_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


class ToolCache:
    """Scope-keyed, generation-checked cache of successful read-only results."""

    def __init__(
        self,
        store: CacheStore | None = None,
        *,
        ttl_s: float = DEFAULT_TTL_S,
        families: Iterable[str] = ("search", "fetch"),
        max_value_chars: int = DEFAULT_MAX_VALUE_CHARS,
    ) -> None:
        if not ttl_s > 0:
            raise ConfigError("ttl_s must be positive")
        self.store: CacheStore = store if store is not None else MemoryStore()
        self.ttl_s = float(ttl_s)
        self.families = frozenset(families)
        self.max_value_chars = max_value_chars
        self.stats = CacheStats()

    def cacheable(self, tool: ScopedTool) -> bool:
        return bool(tool.read_only) and tool.family in self.families

    def key_for(self, tool: ScopedTool, scope: Scope, args: Mapping[str, Any]) -> str | None:
        """The key, or ``None`` when the arguments cannot be encoded (then nothing is cached)."""
        try:
            return cache_key(tool.name, scope, cache_args(tool, args))
        except (TypeError, ValueError, AttributeError):
            return None

    async def lookup(self, key: str, scope: Scope, generation: str) -> ToolOutcome | None:
        try:
            raw = await self.store.get(key)
        except Exception:  # a broken cache is a miss
            self.stats.errors += 1
            self.stats.misses += 1
            return None
        if raw is None:
            self.stats.misses += 1
            return None
        header, sep, body = raw.partition("\n")
        try:
            entry_scope, entry_generation = json.loads(header)
        except (ValueError, TypeError):
            entry_scope = entry_generation = None
            sep = ""
        if not sep:
            await self._forget(key)
            self.stats.errors += 1
            self.stats.misses += 1
            return None
        if entry_scope != scope_part(scope):
            # Only a hash collision or a tampered store gets here: never serve it.
            self.stats.scope_mismatches += 1
            self.stats.misses += 1
            return None
        if entry_generation != generation:
            await self._forget(key)
            self.stats.stale += 1
            self.stats.misses += 1
            return None
        try:
            value = json.loads(body)
        except ValueError:
            value = None
        if not (isinstance(value, dict) and isinstance(value.get("r"), dict) and isinstance(value.get("l"), dict)):
            await self._forget(key)
            self.stats.errors += 1
            self.stats.misses += 1
            return None
        self.stats.hits += 1
        return ToolOutcome(value["r"], value["l"])

    async def put(
        self, key: str, scope: Scope, generation: str, result: Mapping[str, Any], log: LogFields | None = None
    ) -> bool:
        """Store a successful, complete result and its call-log fields; returns whether it was stored.

        A ``partial`` result (the engine stopped early, e.g. on its time budget)
        is not stored: the next call may well get the whole answer.
        """
        if result.get("status") != "ok" or result.get("partial"):
            return False
        try:
            # Header line (scope, generation), then the result as the tool ordered it and its log fields.
            # JSON escapes newlines inside strings, so the first newline is the separator.
            raw = (
                _canonical([scope_part(scope), generation])
                + "\n"
                + json.dumps(
                    {"r": result, "l": dict(log or {})}, ensure_ascii=False, separators=(",", ":"), allow_nan=False
                )
            )
        except (TypeError, ValueError):
            return False
        if len(raw) > self.max_value_chars:
            return False
        try:
            await self.store.set(key, raw, self.ttl_s)
        except Exception:
            self.stats.errors += 1
            return False
        self.stats.stores += 1
        return True

    async def _forget(self, key: str) -> None:
        try:
            await self.store.delete(key)
        except Exception:
            self.stats.errors += 1

    async def clear(self) -> None:
        await self.store.clear()

    async def close(self) -> None:
        try:
            await self.store.close()
        except Exception:
            self.stats.errors += 1


class GenerationTracker:
    """Reads generations, trusting each source's last answer for ``ttl_s`` seconds (0: always ask)."""

    def __init__(self, ttl_s: float = 0.0, *, clock: Callable[[], float] = time.monotonic) -> None:
        if ttl_s < 0:
            raise ConfigError("generation ttl must be >= 0")
        self.ttl_s = ttl_s
        self._clock = clock
        # id(source owner) -> (owner, read at, generation); the owner is kept to rule out id reuse.
        self._memo: dict[int, tuple[Any, float, str]] = {}

    def forget(self) -> None:
        """Drop remembered generations (e.g. right after an ingest in this process)."""
        self._memo.clear()

    async def current(self, tool: ScopedTool, *, fresh: bool = False) -> str | None:
        """The generation string; ``""`` for a tool that is not :class:`Cacheable` (TTL only);
        ``None`` when reading it failed (then the cache is skipped)."""
        if not isinstance(tool, Cacheable):
            return ""
        owner: object = tool
        ident = id(owner)
        if self.ttl_s > 0 and not fresh:
            memo = self._memo.get(ident)
            if memo is not None and memo[0] is owner and self._clock() - memo[1] < self.ttl_s:
                return memo[2]
        # Trusted from when it was asked for, not from when the answer came: the engine sampled it at some
        # moment after this, so a memo is never older than ttl_s however long the read (or this process) stalled.
        asked = self._clock()
        try:
            text = str(await tool.generation())
        except Exception:
            return None
        if self.ttl_s > 0:
            if len(self._memo) > 1024:
                self._memo.clear()
            self._memo[ident] = (owner, asked, text)
        return text
