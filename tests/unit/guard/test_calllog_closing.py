"""Issue 19: a short script's call log reaches the file without an explicit ``aclose()``."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from guard_test_tools import ListSearchTool, ctx, docs

from scopegate.guard.calllog import CallLog
from scopegate.guard.guard import Guard


def _run_script(code: str, cwd: Path) -> None:
    subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=cwd, check=True, timeout=120)


def test_a_script_that_never_closes_the_log_still_writes_every_line(tmp_path: Path) -> None:
    # The README's pattern, without `await guard.aclose()`: the interpreter's exit closes the log.
    _run_script(
        """
        import asyncio
        from scopegate.guard import CallLog
        from scopegate.guard.guard import Guard

        guard = Guard(call_log=CallLog.to_file("calls.jsonl"))
        for i in range(3):
            guard.call_log.emit({"event": "call", "tool": "search_tickets", "n": i})
        """,
        tmp_path,
    )
    lines = (tmp_path / "calls.jsonl").read_text("utf-8").splitlines()
    assert [json.loads(line)["n"] for line in lines] == [0, 1, 2]


async def test_guard_as_async_context_manager_flushes_and_closes_on_exit(tmp_path: Path) -> None:
    path = tmp_path / "calls.jsonl"
    tool = ListSearchTool(docs())
    async with Guard(call_log=CallLog.to_file(path)) as guard:
        outcome = await guard.call(tool, {"query": "refund"}, ctx())
        assert outcome.ok
    # No sleep, no flush: leaving the block wrote the line and closed the log.
    records = [json.loads(line) for line in path.read_text("utf-8").splitlines()]
    assert [r["tool"] for r in records] == [tool.name]
    assert guard.call_log is not None and guard.call_log.stats()["queued"] == 0
    guard.call_log.emit({"event": "call"})  # after close: counted as dropped, never raises
    assert guard.call_log.stats()["dropped"] == 1


def test_call_log_is_a_context_manager(tmp_path: Path) -> None:
    path = tmp_path / "calls.jsonl"
    with CallLog.to_file(path) as log:
        log.emit({"event": "call", "n": 1})
    assert json.loads(path.read_text("utf-8"))["n"] == 1
