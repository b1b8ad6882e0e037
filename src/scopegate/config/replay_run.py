"""Replay a call log against a tool built from an index, a config file or a factory (``scopegate replay``).

:func:`replay_target` builds (and afterwards closes) the tool to replay against;
:func:`replay_log` reads the log, samples the logged searches and replays them.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from scopegate.errors import ConfigError
from scopegate.guard.logfile import ReadStats, iter_records
from scopegate.guard.replay import ReplayReport, Thresholds, collect_searches, render_table, replay, sample_searches
from scopegate.tools import ScopedTool


async def _tool_from_factory(spec: str) -> ScopedTool:
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise ConfigError("--factory must look like package.module:function")
    try:
        factory = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"cannot load factory {spec!r}: {exc}") from exc
    tool = factory()
    if inspect.isawaitable(tool):
        tool = await tool
    if not isinstance(tool, ScopedTool):
        raise ConfigError(f"factory {spec!r} did not return a ScopedTool")
    return tool


@asynccontextmanager
async def replay_target(
    *, index: str | Path | None = None, config: str | Path | None = None, factory: str | None = None,
    tool_name: str | None = None,
) -> AsyncIterator[ScopedTool]:  # fmt: skip
    """The tool to replay against, from exactly one of: an embedded ``index`` folder (its stored spec), the
    search tool ``tool_name`` (default: the first) of a ``config`` file without its guard, or a ``factory``
    (``module:function`` returning a ScopedTool). Raises ConfigError when it cannot be built."""
    if sum(x is not None for x in (index, config, factory)) != 1:
        raise ConfigError("give exactly one of an index, a config file or a factory")
    if factory is not None:
        yield await _tool_from_factory(factory)
        return
    if index is not None:
        from scopegate.backends.embedded import EmbeddedBackend
        from scopegate.search.tools import SearchTool

        backend = EmbeddedBackend.open(index)
        try:
            yield SearchTool(backend.spec, backend)
        finally:
            await backend.close()
        return
    from scopegate.config.builder import build_app
    from scopegate.config.loader import load_config

    cfg = load_config(str(config))
    if not cfg.search_tools:
        raise ConfigError(f"{config} defines no search tool")
    name = tool_name or cfg.search_tools[0].spec.name
    app = await build_app(cfg, guard=None)
    try:
        try:
            tool = app.tool(name)
        except KeyError:
            raise ConfigError(f"{config} has no tool named {name!r}") from None
        yield tool
    finally:
        await app.aclose()


@dataclass(frozen=True)
class LogReplay:
    report: ReplayReport
    read: ReadStats

    def as_dict(self) -> dict[str, Any]:
        out = self.report.as_dict()
        out["log"] = {"lines": self.read.lines, "bad_lines": self.read.bad_lines, "records": self.read.records}
        return out

    def render(self, *, show: int = 50) -> str:
        text = render_table(self.report, show=show)
        if self.read.bad_lines:
            text += f"\n({self.read.bad_lines} malformed log line(s) skipped)"
        return text


async def replay_log(
    paths: Sequence[str | Path],
    tool: ScopedTool,
    *,
    tool_name: str | None = None,
    since: datetime | None = None,
    sample: int | None = None,
    seed: int = 0,
    concurrency: int = 1,
    thresholds: Thresholds | None = None,
) -> LogReplay:
    """Re-run the logged searches of ``tool_name`` (default: the tool's own name) against ``tool``."""
    read = ReadStats()
    records = list(iter_records(paths, since=since, stats=read))
    name = tool_name or tool.name
    if name != tool.name:
        raise ConfigError(f"tool {name!r} does not match the tool built ({tool.name!r})")
    calls, skipped = collect_searches(records, tool=name)
    chosen = sample_searches(calls, sample, seed=seed)
    report = await replay(
        tool, chosen, concurrency=concurrency, thresholds=thresholds or Thresholds(), logged=len(calls), skipped=skipped
    )
    return LogReplay(report, read)
