"""Retries: only where a repeat cannot do harm, capped, with backoff, jitter and Retry-After.

GET, HEAD, OPTIONS, PUT and DELETE are idempotent by definition. POST and
PATCH are retried only when the operation declares an ``Idempotency-Key``
header, which the tool then generates once per logical call (so every attempt
carries the same key).
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE"})
T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    max_attempts: int = 3
    base_delay: float = 0.1
    max_delay: float = 2.0
    # A Retry-After longer than this is not waited for: the error goes back to the model.
    max_retry_after: float = 5.0
    retry_statuses: frozenset[int] = frozenset({429, 502, 503, 504})


def may_retry(method: str, *, has_idempotency_key: bool) -> bool:
    method = method.upper()
    return method in IDEMPOTENT_METHODS or (method in ("POST", "PATCH") and has_idempotency_key)


def backoff(attempt: int, policy: RetryPolicy, rand: Callable[[], float] = random.random) -> float:
    """Full-jitter exponential backoff before attempt ``attempt + 1`` (``attempt`` counts from 1)."""
    cap = min(policy.max_delay, policy.base_delay * (2 ** max(0, attempt - 1)))
    return float(rand() * cap)


@dataclass(frozen=True)
class Verdict:
    """How one attempt went: ``retry`` if another attempt may help; ``retry_after`` from the server."""

    retry: bool
    retry_after: float | None = None


@dataclass(frozen=True)
class Attempts(Generic[T]):
    outcome: T
    attempts: int
    waited: float


async def with_retries(
    attempt: Callable[[int], Awaitable[T]],
    judge: Callable[[T], Verdict],
    *,
    policy: RetryPolicy,
    allowed: bool,
    deadline: float,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    rand: Callable[[], float] = random.random,
) -> Attempts[T]:
    """Run ``attempt(n)`` until it succeeds, is not retryable, or the budget is spent.

    ``deadline`` is a ``clock()`` time: no wait crosses it. A ``Retry-After``
    beyond ``policy.max_retry_after`` or the deadline ends the loop.
    """
    n, waited = 1, 0.0
    while True:
        outcome = await attempt(n)
        verdict = judge(outcome)
        if not (allowed and verdict.retry) or n >= policy.max_attempts:
            return Attempts(outcome, n, waited)
        if verdict.retry_after is not None:
            if verdict.retry_after > policy.max_retry_after:
                return Attempts(outcome, n, waited)
            delay = verdict.retry_after + rand() * policy.base_delay
        else:
            delay = backoff(n, policy, rand)
        if clock() + delay >= deadline:
            return Attempts(outcome, n, waited)
        await sleep(delay)
        waited += delay
        n += 1
