"""Call cap per invocation and family, and the per-tenant token bucket."""

from __future__ import annotations

import threading

import pytest

from scopegate.errors import CALL_LIMIT, RATE_LIMITED, ConfigError
from scopegate.guard.cap import CallCap, CapPolicy, RateLimiter


def admit(cap: CallCap, tool: str = "search_tickets", family: str = "search", inv: str | None = "i1", **kw: object):
    return cap.admit(tool=tool, family=family, invocation_id=inv, **kw)  # type: ignore[arg-type]


def test_default_policy_allows_four_searches_then_refuses() -> None:
    cap = CallCap()
    assert [admit(cap) for _ in range(4)] == [None] * 4
    refused = admit(cap)
    assert refused is not None
    assert refused["status"] == "error"
    assert refused["error_code"] == CALL_LIMIT
    assert refused["retryable"] is False
    assert refused["limit"] == 4
    message = refused["message"].lower()
    assert "answer" in message and "what you have" in message and "say" in message
    # refusals are not counted; the budget stays exhausted
    assert cap.used(family="search", invocation_id="i1") == 4
    assert admit(cap)["error_code"] == CALL_LIMIT  # type: ignore[index]


def test_fetch_has_its_own_budget_after_the_searches_are_used() -> None:
    # Issue 19: after 4 searches the fetch tool was refused too (one shared family), so the agent could not
    # open its best hit. The tools now declare their families, and each has a default budget.
    from scopegate.demo.corpus import ticket_spec
    from scopegate.search.tools import FetchTool, SearchTool

    spec = ticket_spec()
    search_family, fetch_family = SearchTool(spec, None).family, FetchTool(spec, None).family  # type: ignore[arg-type]
    assert (search_family, fetch_family) == ("search", "fetch")
    cap = CallCap()
    assert [admit(cap, tool="search_tickets", family=search_family) for _ in range(4)] == [None] * 4
    assert admit(cap, tool="search_tickets", family=search_family)["error_code"] == CALL_LIMIT  # type: ignore[index]
    assert [admit(cap, tool="get_ticket", family=fetch_family) for _ in range(4)] == [None] * 4
    refused = admit(cap, tool="get_ticket", family=fetch_family)
    assert refused is not None and refused["family"] == "fetch" and refused["limit"] == 4


def test_invocations_and_families_are_independent() -> None:
    cap = CallCap(CapPolicy(family_limits={"search": 2, "openapi": 1}))
    assert admit(cap, inv="a") is None and admit(cap, inv="a") is None
    assert admit(cap, inv="a") is not None
    assert admit(cap, inv="b") is None  # a new turn has a fresh budget
    assert admit(cap, tool="get_user", family="openapi", inv="a") is None
    assert admit(cap, tool="get_user", family="openapi", inv="a") is not None
    # a family without a limit (and no default) is not capped
    assert all(admit(cap, tool="x", family="other", inv="a") is None for _ in range(50))


def test_per_tool_limit_applies_inside_the_family_limit() -> None:
    cap = CallCap(CapPolicy(family_limits={"search": 4}, tool_limits={"get_ticket": 1}))
    assert admit(cap, tool="get_ticket") is None
    refused = admit(cap, tool="get_ticket")
    assert refused is not None and refused["error_code"] == CALL_LIMIT and refused["limit"] == 1
    assert "get_ticket" in refused["message"]
    assert [admit(cap, tool="search_tickets") for _ in range(3)] == [None] * 3
    assert admit(cap, tool="search_tickets") is not None


def test_default_limit_covers_unlisted_families_and_zero_blocks_all() -> None:
    cap = CallCap(CapPolicy(family_limits={"openapi": 0}, default_limit=1))
    assert admit(cap, tool="delete_repo", family="openapi") is not None
    assert admit(cap, tool="foo", family="misc") is None
    assert admit(cap, tool="bar", family="misc") is not None


def test_every_admission_counts() -> None:
    """No call identifier can make admission idempotent: the cap cannot be bypassed by reusing one."""
    cap = CallCap(CapPolicy(family_limits={"search": 2}))
    assert admit(cap) is None
    assert admit(cap) is None
    assert admit(cap) is not None
    assert cap.used(family="search", invocation_id="i1") == 2
    with pytest.raises(TypeError):
        admit(cap, call_id="fc-1")  # there is no such parameter any more


def test_session_fallback_and_unattributable_calls() -> None:
    cap = CallCap(CapPolicy(family_limits={"search": 1}))
    assert cap.admit(tool="t", family="search", invocation_id=None, session_id="s") is None
    assert cap.admit(tool="t", family="search", invocation_id=None, session_id="s") is not None
    # neither id: cannot be attributed to a turn, so not capped
    assert all(cap.admit(tool="t", family="search", invocation_id=None) is None for _ in range(10))


def test_end_forgets_and_tracking_is_bounded() -> None:
    cap = CallCap(CapPolicy(family_limits={"search": 1}), max_invocations=3)
    assert admit(cap, inv="a") is None
    cap.end("a")
    assert admit(cap, inv="a") is None
    for inv in ("b", "c", "d", "e"):
        admit(cap, inv=inv)
    assert cap.tracked() == 3


def test_concurrent_admission_never_exceeds_the_limit() -> None:
    cap = CallCap(CapPolicy(family_limits={"search": 4}))
    results: list[object] = []
    lock = threading.Lock()

    def worker() -> None:
        for _ in range(25):
            r = admit(cap)
            with lock:
                results.append(r)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(r is None for r in results) == 4
    assert len(results) == 200


@pytest.mark.parametrize(
    "policy",
    [
        {"family_limits": {"search": -1}},
        {"tool_limits": {"x": 1.5}},
        {"family_limits": {"search": True}},
        {"default_limit": -3},
    ],
)
def test_bad_policies_are_rejected(policy: dict[str, object]) -> None:
    with pytest.raises(ConfigError):
        CapPolicy(**policy)  # type: ignore[arg-type]


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_token_bucket_burst_refill_and_retry_after() -> None:
    clock = FakeClock()
    limiter = RateLimiter(rate=2.0, burst=3, clock=clock)
    assert [limiter.check("acme") for _ in range(3)] == [None] * 3
    refused = limiter.check("acme")
    assert refused is not None
    assert refused["error_code"] == RATE_LIMITED and refused["retryable"] is True
    assert refused["retry_after"] == pytest.approx(0.5)
    assert limiter.check("globex") is None  # another tenant has its own bucket
    clock.now += 0.5
    assert limiter.check("acme") is None
    assert limiter.check("acme") is not None
    clock.now += 100  # refill is capped at the burst
    assert [limiter.check("acme") for _ in range(3)] == [None] * 3
    assert limiter.check("acme") is not None


def test_clock_going_backwards_does_not_mint_tokens() -> None:
    clock = FakeClock()
    limiter = RateLimiter(rate=1.0, burst=1, clock=clock)
    assert limiter.acquire("t") is None
    clock.now -= 50
    assert limiter.acquire("t") is not None


@pytest.mark.parametrize(("rate", "burst"), [(0, 1), (-1, 1), (float("inf"), 1), (float("nan"), 1), (1, 0)])
def test_bad_rate_limits_are_rejected(rate: float, burst: int) -> None:
    with pytest.raises(ConfigError):
        RateLimiter(rate, burst)
