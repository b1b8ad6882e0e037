"""Cache keys (scope isolation, normalisation), TTL/LRU, generations, broken stores."""

from __future__ import annotations

import json
from typing import Any

import pytest
from guard_test_tools import ListSearchTool, WriteTool, docs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scopegate.errors import ConfigError
from scopegate.guard.cache import (
    GenerationTracker,
    MemoryStore,
    ToolCache,
    cache_key,
    normalise_keywords,
    search_cache_args,
)
from scopegate.scope import Scope
from scopegate.tools import ToolOutcome

OK = {"status": "ok", "total": 1, "total_relation": "eq", "results": [{"id": "acme-1"}]}


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def key(tool: str, tenant: str, args: dict[str, Any], groups: tuple[str, ...] = (), user: str | None = None) -> str:
    return cache_key(tool, Scope(tenant, groups, user), search_cache_args(args))


def _result(outcome: ToolOutcome | None) -> dict[str, Any] | None:
    return None if outcome is None else outcome.result


# -- keys ------------------------------------------------------------------------
def test_keywords_are_case_and_whitespace_folded() -> None:
    assert normalise_keywords("  Refund\tFAILED \n now ") == "refund failed now"
    assert key("s", "acme", {"query": "Refund  failed"}) == key("s", "acme", {"query": "refund failed", "page": 1})
    assert key("s", "acme", {"query": "x", "page": 2.0}) == key("s", "acme", {"query": "x", "page": 2})
    assert key("s", "acme", {"query": "x", "status": None}) == key("s", "acme", {"query": "x"})


def test_group_order_and_duplicates_do_not_matter() -> None:
    assert key("s", "t", {"query": "x"}, ("b", "a", "a")) == key("s", "t", {"query": "x"}, ("a", "b"))


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (("s", "acme", {"query": "x"}, (), None), ("s", "globex", {"query": "x"}, (), None)),
        (("s", "acme", {"query": "x"}, ("g1",), None), ("s", "acme", {"query": "x"}, ("g2",), None)),
        (("s", "acme", {"query": "x"}, (), None), ("s", "acme", {"query": "x"}, ("g1",), None)),
        (("s", "acme", {"query": "x"}, (), "u1"), ("s", "acme", {"query": "x"}, (), "u2")),
        (("s", "acme", {"query": "x"}, (), None), ("s", "acme", {"query": "x"}, (), "u1")),
        (("s", "acme", {"query": "x"}, (), None), ("other", "acme", {"query": "x"}, (), None)),
        (("s", "acme", {"query": "x"}, (), None), ("s", "acme", {"query": "x", "page": 2}, (), None)),
        (("s", "acme", {"query": "x"}, (), None), ("s", "acme", {"query": "x", "status": "open"}, (), None)),
        (
            ("s", "acme", {"query": "x", "status": "open"}, (), None),
            ("s", "acme", {"query": "x", "product": "open"}, (), None),
        ),
        (("s", "acme", {"query": "x", "page": 1}, (), None), ("s", "acme", {"query": "x", "page": True}, (), None)),
        (("s", "acme", {"query": "x", "page": 2}, (), None), ("s", "acme", {"query": "x", "page": "2"}, (), None)),
        # separators inside ids cannot shift a boundary
        (("s", "a,b", {"query": "x"}, (), None), ("s", "a", {"query": "x"}, ("b",), None)),
        (("s", 'a","b', {"query": "x"}, (), None), ("s", "a", {"query": "x"}, ("b",), None)),
        (("s", "acme", {"query": "x y"}, (), None), ("s", "acme x", {"query": "y"}, (), None)),
    ],
)
def test_anything_that_changes_results_changes_the_key(a: tuple[Any, ...], b: tuple[Any, ...]) -> None:
    assert key(*a) != key(*b)


def test_only_the_query_is_folded_for_search_and_nothing_for_other_families() -> None:
    search = ListSearchTool(docs())
    cache = ToolCache()
    scope = Scope("acme")
    assert cache.key_for(search, scope, {"query": "X", "status": "Open"}) != cache.key_for(
        search, scope, {"query": "x", "status": "open"}
    )
    api = WriteTool(docs())
    assert cache.key_for(api, scope, {"user": "Alice"}) != cache.key_for(api, scope, {"user": "alice"})


def test_unencodable_arguments_give_no_key() -> None:
    cache = ToolCache()
    tool = ListSearchTool(docs())
    assert cache.key_for(tool, Scope("acme"), {"query": "x", "page": float("nan")}) is None
    assert cache.key_for(tool, Scope("acme"), {"query": "x", "blob": object()}) is None


ids = st.text(min_size=1, max_size=12)
scopes = st.builds(
    Scope,
    tenant_id=ids,
    group_ids=st.lists(ids, max_size=3).map(tuple),
    user_id=st.none() | ids,
)
argsets = st.fixed_dictionaries(
    {"query": st.text(max_size=20)},
    optional={
        "page": st.integers(min_value=1, max_value=5) | st.floats(allow_nan=False, allow_infinity=False),
        "status": st.none() | st.sampled_from(["open", "closed", "Open"]),
        "product": st.text(max_size=8),
    },
)
tools = st.sampled_from(["search_tickets", "get_ticket", "search_tickets ", "Search_tickets"])


def _same_scope(a: Scope, b: Scope) -> bool:
    return a.cache_key() == b.cache_key()


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tool_a=tools, scope_a=scopes, args_a=argsets, tool_b=tools, scope_b=scopes, args_b=argsets)
def test_no_key_collision_across_scopes(
    tool_a: str, scope_a: Scope, args_a: dict[str, Any], tool_b: str, scope_b: Scope, args_b: dict[str, Any]
) -> None:
    """Two calls share a key only if tool, scope and normalised arguments are all equal."""
    ka = cache_key(tool_a, scope_a, search_cache_args(args_a))
    kb = cache_key(tool_b, scope_b, search_cache_args(args_b))
    if not _same_scope(scope_a, scope_b) or tool_a != tool_b:
        assert ka != kb
    same_args = json.dumps(search_cache_args(args_a), sort_keys=True) == json.dumps(
        search_cache_args(args_b), sort_keys=True
    )
    assert (ka == kb) == (tool_a == tool_b and _same_scope(scope_a, scope_b) and same_args)


@settings(max_examples=200, deadline=None)
@given(scope_a=scopes, scope_b=scopes, args_a=argsets, args_b=argsets)
async def test_an_entry_stored_for_one_scope_is_never_served_to_another(
    scope_a: Scope, scope_b: Scope, args_a: dict[str, Any], args_b: dict[str, Any]
) -> None:
    tool = ListSearchTool(docs())
    cache = ToolCache(MemoryStore())
    key_a = cache.key_for(tool, scope_a, args_a)
    assert key_a is not None
    marker = {"status": "ok", "owner": list(scope_a.cache_key())}
    assert await cache.put(key_a, scope_a, "g1", marker)
    key_b = cache.key_for(tool, scope_b, args_b)
    assert key_b is not None
    got = await cache.lookup(key_b, scope_b, "g1")
    if not _same_scope(scope_a, scope_b):
        assert got is None
    # even a store that hands back A's entry under B's key is refused (scope stored in the entry)
    raw = await cache.store.get(key_a)
    assert raw is not None
    await cache.store.set(key_b, raw, 60)
    got = await cache.lookup(key_b, scope_b, "g1")
    assert (got is not None) == _same_scope(scope_a, scope_b)


async def test_tampered_entry_is_counted_as_a_scope_mismatch() -> None:
    cache = ToolCache(MemoryStore())
    tool = ListSearchTool(docs())
    ka = cache.key_for(tool, Scope("acme"), {"query": "x"})
    kb = cache.key_for(tool, Scope("globex"), {"query": "x"})
    assert ka and kb
    await cache.put(ka, Scope("acme"), "g", OK)
    await cache.store.set(kb, (await cache.store.get(ka)) or "", 60)
    assert await cache.lookup(kb, Scope("globex"), "g") is None
    assert cache.stats.scope_mismatches == 1


# -- what is stored ------------------------------------------------------------------
async def test_only_successes_of_read_only_tools_in_cached_families() -> None:
    cache = ToolCache()
    assert cache.cacheable(ListSearchTool(docs()))
    assert not cache.cacheable(WriteTool(docs()))
    assert not await cache.put("k", Scope("a"), "g", {"status": "error", "error_code": "BAD_QUERY"})
    assert not await cache.put("k", Scope("a"), "g", {"total": 3})
    assert not await cache.put("k", Scope("a"), "g", {**OK, "partial": True})
    assert await cache.put("k", Scope("a"), "g", OK)
    small = ToolCache(max_value_chars=50)
    assert not await small.put("k", Scope("a"), "g", {"status": "ok", "blob": "x" * 100})


async def test_hits_are_copies_not_shared_objects() -> None:
    cache = ToolCache()
    await cache.put("k", Scope("a"), "g", OK)
    first = _result(await cache.lookup("k", Scope("a"), "g"))
    assert first == OK
    assert list(first) == list(OK)  # the tool's key order is kept (status first), not sorted
    first["results"].append("mutated")
    assert _result(await cache.lookup("k", Scope("a"), "g")) == OK


async def test_generation_change_drops_the_entry() -> None:
    cache = ToolCache()
    await cache.put("k", Scope("a"), "g1", OK)
    assert await cache.lookup("k", Scope("a"), "g2") is None
    assert cache.stats.stale == 1
    assert await cache.lookup("k", Scope("a"), "g1") is None  # dropped, not just hidden
    assert len(cache.store) == 0  # type: ignore[arg-type]


# -- TTL and LRU -------------------------------------------------------------------------
async def test_memory_store_ttl() -> None:
    clock = FakeClock()
    cache = ToolCache(MemoryStore(clock=clock), ttl_s=10)
    await cache.put("k", Scope("a"), "g", OK)
    clock.now = 9.99
    assert _result(await cache.lookup("k", Scope("a"), "g")) == OK
    clock.now = 10.0
    assert await cache.lookup("k", Scope("a"), "g") is None


async def test_memory_store_lru_evicts_least_recently_used() -> None:
    store = MemoryStore(max_entries=3)
    for k in ("a", "b", "c"):
        await store.set(k, k, 60)
    assert await store.get("a") == "a"  # a is now the most recent
    await store.set("d", "d", 60)
    assert store.keys() == ["c", "a", "d"]
    assert await store.get("b") is None


class BrokenStore:
    async def get(self, key: str) -> str | None:
        raise ConnectionError("redis down at 10.0.0.5:6379 password=hunter2")

    async def set(self, key: str, value: str, ttl_s: float) -> None:
        raise ConnectionError("down")

    async def delete(self, key: str) -> None:
        raise ConnectionError("down")

    async def clear(self) -> None:
        raise ConnectionError("down")

    async def close(self) -> None:
        raise ConnectionError("down")


async def test_broken_store_is_a_miss_and_counted() -> None:
    cache = ToolCache(BrokenStore())
    assert await cache.lookup("k", Scope("a"), "g") is None
    assert not await cache.put("k", Scope("a"), "g", OK)
    await cache.close()
    assert cache.stats.errors == 3 and cache.stats.misses == 1


async def test_corrupt_entry_is_dropped() -> None:
    cache = ToolCache()
    await cache.store.set("k", "{not json", 60)
    assert await cache.lookup("k", Scope("a"), "g") is None
    assert await cache.store.get("k") is None


def test_bad_cache_config() -> None:
    with pytest.raises(ConfigError):
        ToolCache(ttl_s=0)
    with pytest.raises(ConfigError):
        MemoryStore(max_entries=0)
    with pytest.raises(ConfigError):
        GenerationTracker(-1)


# -- generations ------------------------------------------------------------------------
async def test_generation_tracker_memo_and_fresh_reads() -> None:
    clock = FakeClock()
    tool = ListSearchTool(docs())
    tracker = GenerationTracker(1.0, clock=clock)
    assert await tracker.current(tool) == "g0"
    tool.bump()
    assert await tracker.current(tool) == "g0"  # trusted for 1 s
    assert await tracker.current(tool, fresh=True) == "g1"
    tool.bump()
    clock.now = 1.5
    assert await tracker.current(tool) == "g2"
    exact = GenerationTracker(0.0)
    tool.bump()
    assert await exact.current(tool) == "g3"


async def test_a_generation_is_trusted_from_when_it_was_asked_for() -> None:
    """The memo's age counts from before the read: a read that took 0.8 s of a 1 s TTL leaves 0.2 s, so a
    cached answer is never older than the TTL (wave 2 counted from the answer: up to TTL + read time)."""
    clock = FakeClock()
    tool = ListSearchTool(docs())
    slow = tool.generation

    async def generation_read_taking_800ms() -> str:
        clock.now += 0.8
        return await slow()

    tool.generation = generation_read_taking_800ms  # type: ignore[method-assign]
    tracker = GenerationTracker(1.0, clock=clock)
    assert await tracker.current(tool) == "g0"  # asked at 0, answered at 0.8
    tool.bump()
    clock.now = 0.9
    assert await tracker.current(tool) == "g0"  # 0.9 s after asking: still trusted
    clock.now = 1.0
    assert await tracker.current(tool) == "g1"  # 1 s after asking: read again, although answered 0.2 s ago


async def test_generation_sources() -> None:
    class NoSource:
        name = "x"

    class Failing:
        def cache_args(self, args: Any) -> Any:
            return args

        async def generation(self) -> str:
            raise OSError("disk gone")

    class ViaBackend:
        """Only the declared Cacheable protocol counts: a backend attribute is not looked into."""

        def __init__(self) -> None:
            self.backend = Failing()

    tracker = GenerationTracker()
    assert await tracker.current(NoSource()) == ""  # type: ignore[arg-type]
    assert await tracker.current(Failing()) is None  # type: ignore[arg-type]
    assert await tracker.current(ViaBackend()) == ""  # type: ignore[arg-type]


async def test_tiered_store_reads_local_first_and_bounds_local_copies() -> None:
    from scopegate.guard.cache import TieredStore

    clock = FakeClock()
    local, shared = MemoryStore(clock=clock), MemoryStore(clock=clock)
    tiered = TieredStore(local, shared, local_ttl_s=5)
    await shared.set("k", "from another process", 300)
    assert await tiered.get("k") == "from another process"
    assert await local.get("k") == "from another process"  # copied locally
    await shared.delete("k")
    assert await tiered.get("k") == "from another process"  # served locally ...
    clock.now = 5.0
    assert await tiered.get("k") is None  # ... for at most local_ttl_s
    await tiered.set("j", "v", 300)
    assert await local.get("j") == await shared.get("j") == "v"
    await tiered.delete("j")
    assert await local.get("j") is None and await shared.get("j") is None
    cache = ToolCache(TieredStore(MemoryStore(), MemoryStore()))
    await cache.put("k", Scope("a"), "g1", OK)
    assert _result(await cache.lookup("k", Scope("a"), "g1")) == OK
    assert await cache.lookup("k", Scope("b"), "g1") is None
    assert await cache.lookup("k", Scope("a"), "g2") is None  # stale: dropped from both tiers
    assert await cache.lookup("k", Scope("a"), "g1") is None
    with pytest.raises(ConfigError):
        TieredStore(MemoryStore(), MemoryStore(), local_ttl_s=0)
