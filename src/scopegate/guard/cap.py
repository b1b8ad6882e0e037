"""Call budgets: a per-invocation call cap and a per-tenant rate limit.

Both are framework-neutral (no ADK import) and never raise: past a limit they
return a structured error envelope the model can act on, otherwise ``None``.

* :class:`CallCap` counts calls per invocation (one user turn of an agent) and
  per tool family, e.g. at most 4 ``search`` calls and 4 ``fetch`` calls (fetch-by-id
  has its own family, so the agent can still open its best hit after its searches).
  Limits can also be set per tool name; a call must pass both.
* :class:`RateLimiter` is a token bucket per tenant, for servers shared by many
  sessions.
"""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from scopegate.errors import CALL_LIMIT, RATE_LIMITED, ConfigError, tool_error

DEFAULT_FAMILY_LIMITS: Mapping[str, int] = {"search": 4, "fetch": 4}
MAX_TRACKED_INVOCATIONS = 10_000
MAX_TRACKED_TENANTS = 100_000


@dataclass(frozen=True)
class CapPolicy:
    """How many calls one invocation may make.

    ``family_limits`` caps a whole family (``{"search": 4}``); ``tool_limits``
    caps a single tool by name. A family or tool with no entry is unlimited
    unless ``default_limit`` is set.
    """

    family_limits: Mapping[str, int] = field(default_factory=lambda: dict(DEFAULT_FAMILY_LIMITS))
    tool_limits: Mapping[str, int] = field(default_factory=dict)
    default_limit: int | None = None

    def __post_init__(self) -> None:
        for label, limits in (("family", self.family_limits), ("tool", self.tool_limits)):
            for key, value in limits.items():
                if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                    raise ConfigError(f"{label} limit for {key!r} must be a non-negative integer")
        if self.default_limit is not None and (isinstance(self.default_limit, bool) or self.default_limit < 0):
            raise ConfigError("default_limit must be a non-negative integer or None")

    def family_limit(self, family: str) -> int | None:
        return self.family_limits.get(family, self.default_limit)

    def tool_limit(self, tool: str) -> int | None:
        return self.tool_limits.get(tool)


def call_limit_result(family: str, limit: int, tool: str) -> dict[str, Any]:
    """The envelope a model gets past the cap: stop calling, answer, say so."""
    what = f"{family} calls" if family else f"calls to {tool}"
    return tool_error(
        CALL_LIMIT,
        f"Limit reached: {limit} {what} are allowed per question and all have been used. "
        "Do not call this tool again now. Answer the user with what you have already found, "
        "and say that the search limit was reached, so the answer may be incomplete.",
        retryable=False,
        limit=limit,
        family=family,
    )


@dataclass(slots=True)
class _InvocationCounts:
    families: dict[str, int] = field(default_factory=dict)
    tools: dict[str, int] = field(default_factory=dict)


class CallCap:
    """Counts calls per invocation and family; thread-safe; memory bounded.

    Every ``admit`` counts: the cap never trusts an identifier of the call
    itself (an ADK function-call id is chosen by the model, and a model that
    repeats one must not get past the cap). Adapters make sure one call is
    admitted once (a guarded tool is not counted again by a framework callback).

    Calls without an invocation id are counted per session id; calls with
    neither cannot be attributed to a turn and are not capped (the rate limit
    still applies).
    """

    def __init__(self, policy: CapPolicy | None = None, *, max_invocations: int = MAX_TRACKED_INVOCATIONS) -> None:
        self.policy = policy or CapPolicy()
        self._max_invocations = max(1, max_invocations)
        self._counts: OrderedDict[str, _InvocationCounts] = OrderedDict()
        self._lock = threading.Lock()

    @staticmethod
    def turn_key(invocation_id: str | None, session_id: str | None) -> str | None:
        if invocation_id:
            return f"i:{invocation_id}"
        if session_id:
            return f"s:{session_id}"
        return None

    def admit(
        self,
        *,
        tool: str,
        family: str,
        invocation_id: str | None,
        session_id: str | None = None,
    ) -> dict[str, Any] | None:
        """Count one call, or return a ``CALL_LIMIT`` envelope (the call is then not counted)."""
        key = self.turn_key(invocation_id, session_id)
        if key is None:
            return None
        family_limit = self.policy.family_limit(family)
        tool_limit = self.policy.tool_limit(tool)
        with self._lock:
            counts = self._counts.get(key)
            if counts is None:
                counts = _InvocationCounts()
                self._counts[key] = counts
                while len(self._counts) > self._max_invocations:
                    self._counts.popitem(last=False)
            else:
                self._counts.move_to_end(key)
            used_family = counts.families.get(family, 0)
            used_tool = counts.tools.get(tool, 0)
            if family_limit is not None and used_family >= family_limit:
                return call_limit_result(family, family_limit, tool)
            if tool_limit is not None and used_tool >= tool_limit:
                return call_limit_result("", tool_limit, tool)
            counts.families[family] = used_family + 1
            counts.tools[tool] = used_tool + 1
        return None

    def used(self, *, family: str, invocation_id: str | None, session_id: str | None = None) -> int:
        key = self.turn_key(invocation_id, session_id)
        with self._lock:
            counts = self._counts.get(key) if key else None
            return counts.families.get(family, 0) if counts else 0

    def end(self, invocation_id: str | None, session_id: str | None = None) -> None:
        """Forget an invocation (its turn is over)."""
        key = self.turn_key(invocation_id, session_id)
        if key is None:
            return
        with self._lock:
            self._counts.pop(key, None)

    def tracked(self) -> int:
        with self._lock:
            return len(self._counts)


@dataclass(slots=True)
class _Bucket:
    tokens: float
    stamp: float


class RateLimiter:
    """A token bucket per tenant: ``rate`` calls per second on average, bursts of ``burst``.

    ``acquire`` returns ``None`` when a token was taken, otherwise the seconds
    until one will be available. Thread-safe; at most ``max_tenants`` buckets
    are kept (the least recently used are dropped, which only ever refills).
    """

    def __init__(
        self,
        rate: float,
        burst: int,
        *,
        clock: Callable[[], float] = time.monotonic,
        max_tenants: int = MAX_TRACKED_TENANTS,
    ) -> None:
        if not (rate > 0 and math.isfinite(rate)):
            raise ConfigError("rate must be a positive number of calls per second")
        if burst < 1:
            raise ConfigError("burst must be at least 1")
        self.rate = float(rate)
        self.burst = int(burst)
        self._clock = clock
        self._max_tenants = max(1, max_tenants)
        self._buckets: OrderedDict[str, _Bucket] = OrderedDict()
        self._lock = threading.Lock()

    def acquire(self, tenant: str) -> float | None:
        now = self._clock()
        with self._lock:
            bucket = self._buckets.get(tenant)
            if bucket is None:
                bucket = _Bucket(tokens=float(self.burst), stamp=now)
                self._buckets[tenant] = bucket
                while len(self._buckets) > self._max_tenants:
                    self._buckets.popitem(last=False)
            else:
                self._buckets.move_to_end(tenant)
                elapsed = max(0.0, now - bucket.stamp)
                bucket.tokens = min(float(self.burst), bucket.tokens + elapsed * self.rate)
                bucket.stamp = now
            if bucket.tokens >= 1.0:
                bucket.tokens -= 1.0
                return None
            return (1.0 - bucket.tokens) / self.rate

    def check(self, tenant: str) -> dict[str, Any] | None:
        """``None`` when allowed, else a ``RATE_LIMITED`` envelope with ``retry_after`` seconds."""
        wait = self.acquire(tenant)
        if wait is None:
            return None
        retry_after = math.ceil(wait * 10) / 10
        return tool_error(
            RATE_LIMITED,
            f"Too many calls for this account right now; try again in {retry_after:g} s, "
            "or answer with what you already have.",
            retryable=True,
            retry_after=retry_after,
        )
