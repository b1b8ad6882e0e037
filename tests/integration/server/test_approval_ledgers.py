"""The approvals ledgers (issue 36, M1): the first claim of an answer wins, in every process of a deployment.

The SQLite ledger is claimed from several OS processes at once (the way replicas share a file);
the Redis one from two clients of a real ``redis-server`` (skipped where none is installed).
"""

from __future__ import annotations

import multiprocessing
from pathlib import Path
from typing import Any

import pytest

from scopegate.errors import ConfigError
from scopegate.server.approvals import DEFAULT_FILE, MemoryLedger, RedisLedger, SqliteLedger, build_ledger


def _claim_in_process(path: str, call_id: str) -> bool:
    import asyncio

    async def run() -> bool:
        ledger = SqliteLedger(Path(path))
        try:
            return await ledger.claim(call_id, 60.0)
        finally:
            await ledger.aclose()

    return asyncio.run(run())


def test_one_sqlite_claim_wins_among_processes(tmp_path: Path) -> None:
    path = tmp_path / "approvals.sqlite"
    with multiprocessing.get_context("spawn").Pool(4) as pool:
        won = pool.starmap(_claim_in_process, [(str(path), "call-1")] * 8)
        others = pool.starmap(_claim_in_process, [(str(path), f"call-{i}") for i in range(2, 6)])
    assert sorted(won) == [False] * 7 + [True]
    assert others == [True] * 4


async def test_sqlite_forgets_an_answer_only_after_its_lifetime(tmp_path: Path) -> None:
    now = [1000.0]
    ledger = SqliteLedger(tmp_path / "a.sqlite", clock=lambda: now[0])
    try:
        assert await ledger.claim("c", 420.0)
        now[0] += 419.0
        assert not await ledger.claim("c", 420.0)
        now[0] += 2.0  # the state it came from expired long ago: the record may go
        assert await ledger.claim("c", 420.0)
    finally:
        await ledger.aclose()


async def test_memory_ledger() -> None:
    now = [0.0]
    ledger = MemoryLedger(clock=lambda: now[0])
    assert await ledger.claim("c", 10.0) and not await ledger.claim("c", 10.0)
    now[0] = 11.0
    assert await ledger.claim("c", 10.0)


def test_which_ledger_a_deployment_gets(tmp_path: Path) -> None:
    config = tmp_path / "scopegate.yaml"
    common = {"redis_url": None, "cache_redis_url": None}
    assert isinstance(build_ledger(shared_keys=False, path=None, config_file=config, **common), MemoryLedger)
    shared = build_ledger(shared_keys=True, path=None, config_file=config, **common)
    assert isinstance(shared, SqliteLedger) and shared.path == tmp_path / DEFAULT_FILE
    with pytest.raises(ConfigError, match="approvals_path"):
        build_ledger(shared_keys=True, path=None, config_file=None, **common)
    with pytest.raises(ConfigError, match="not both"):
        build_ledger(
            shared_keys=True, path=tmp_path / "x", redis_url="redis://h", cache_redis_url=None, config_file=None
        )
    (tmp_path / "file").write_text("x", "utf-8")
    with pytest.raises(ConfigError, match="cannot be opened"):
        SqliteLedger(tmp_path / "file" / "under-a-file.sqlite")


async def test_one_redis_claim_wins(redis_url: str) -> None:
    first, second = RedisLedger(redis_url), RedisLedger(redis_url)
    try:
        assert await first.claim("r-1", 60.0)
        assert not await second.claim("r-1", 60.0)
        assert not await first.claim("r-1", 60.0)
        assert await second.claim("r-2", 60.0)
    finally:
        await first.aclose()
        await second.aclose()


async def test_a_redis_deployment_uses_the_shared_cache_redis(redis_url: str, tmp_path: Path) -> None:
    ledger = build_ledger(
        shared_keys=True, path=None, redis_url=None, cache_redis_url=redis_url, config_file=tmp_path / "c.yaml"
    )
    try:
        assert isinstance(ledger, RedisLedger)
        assert await ledger.claim("r-3", 60.0) and not await ledger.claim("r-3", 60.0)
    finally:
        await ledger.aclose()


class _Unreachable:
    async def claim(self, call_id: str, ttl_s: float) -> bool:
        raise TimeoutError

    async def aclose(self) -> None:
        return None


async def test_an_approval_that_cannot_be_recorded_is_not_acted_on() -> None:
    """Fail closed: a ledger that cannot answer refuses the call (retryable), it never lets it run."""
    from types import SimpleNamespace

    from scopegate.server.mcp_server import McpEvents, ScopegateMcpServer

    outcomes: list[str] = []

    class Events(McpEvents):
        def confirmation(self, outcome: str) -> None:
            outcomes.append(outcome)

    server: Any = SimpleNamespace(approvals=_Unreachable(), events=Events())
    refused = await ScopegateMcpServer._spend(server, "c-1")
    assert refused is not None and refused["error_code"] == "CONFIRMATION_UNAVAILABLE" and refused["retryable"]
    server.approvals = MemoryLedger()
    assert await ScopegateMcpServer._spend(server, "c-1") is None
    used = await ScopegateMcpServer._spend(server, "c-1")
    assert used is not None and used["error_code"] == "CONFIRMATION_USED"
    assert outcomes == ["unavailable", "replayed"]
