"""``scopegate replay`` and ``scopegate stats``: operate the guard from its call log."""

from __future__ import annotations

import argparse
import asyncio
import importlib
import inspect
import json
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from scopegate.errors import ConfigError, ScopegateError
from scopegate.guard.logfile import ReadStats, iter_records, parse_duration, parse_time, record_time
from scopegate.guard.replay import Thresholds, collect_searches, render_table, replay, sample_searches
from scopegate.guard.stats import bucketed, figures, render
from scopegate.tools import ScopedTool

EXIT_OK = 0
EXIT_THRESHOLD = 1
EXIT_USAGE = 2


def _optional_float(text: str) -> float | None:
    return None if text.lower() in {"none", "off", "-"} else float(text)


def _optional_int(text: str) -> int | None:
    return None if text.lower() in {"none", "off", "-"} else int(text)


# -- building the tool to replay against -----------------------------------------------
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


async def _tool_from_index(path: str) -> tuple[ScopedTool, Any]:
    from scopegate.backends.embedded import EmbeddedBackend
    from scopegate.search.tools import SearchTool

    backend = EmbeddedBackend.open(path)
    return SearchTool(backend.spec, backend), backend


async def _tool_from_config(path: str, tool_name: str | None) -> tuple[ScopedTool, Any]:
    """The named search tool (default: the first) of a scopegate config file, without its guard."""
    from scopegate.config import build_app, load_config

    config = load_config(path)
    if not config.search_tools:
        raise ConfigError(f"{path} defines no search tool")
    name = tool_name or config.search_tools[0].spec.name
    app = await build_app(config, guard=None)
    try:
        return app.tool(name), app
    except KeyError:
        await app.aclose()
        raise ConfigError(f"{path} has no tool named {name!r}") from None


# -- replay ------------------------------------------------------------------------------
def _thresholds(args: argparse.Namespace) -> Thresholds:
    return Thresholds(
        max_jaccard_drop=args.max_jaccard_drop,
        max_changed_share=args.max_changed_share,
        max_total_changed_share=args.max_total_changed_share,
        max_to_zero=args.max_to_zero,
        max_from_zero=args.max_from_zero,
        max_errors=args.max_errors,
        min_calls=args.min_calls,
    )


async def _replay(args: argparse.Namespace) -> int:
    since = parse_time(args.since) if args.since else None
    read = ReadStats()
    records = list(iter_records(args.log, since=since, stats=read))
    backend: Any = None  # whatever must be closed afterwards
    if args.factory:
        tool = await _tool_from_factory(args.factory)
    elif args.config:
        tool, backend = await _tool_from_config(args.config, args.tool)
    else:
        tool, backend = await _tool_from_index(args.index)
    try:
        tool_name = args.tool or tool.name
        calls, skipped = collect_searches(records, tool=tool_name)
        chosen = sample_searches(calls, args.sample, seed=args.seed)
        if tool_name != tool.name:
            raise ConfigError(f"--tool {tool_name!r} does not match the tool built ({tool.name!r})")
        report = await replay(
            tool,
            chosen,
            concurrency=args.concurrency,
            thresholds=_thresholds(args),
            logged=len(calls),
            skipped=skipped,
        )
    finally:
        if backend is not None:
            await (backend.aclose() if hasattr(backend, "aclose") else backend.close())
    if args.json:
        out = report.as_dict()
        out["log"] = {"lines": read.lines, "bad_lines": read.bad_lines, "records": read.records}
        print(json.dumps(out, indent=2, ensure_ascii=False))
    else:
        print(render_table(report, show=args.show))
        if read.bad_lines:
            print(f"({read.bad_lines} malformed log line(s) skipped)")
    return EXIT_OK if report.passed() else EXIT_THRESHOLD


def _cmd_replay(args: argparse.Namespace) -> int:
    if sum(bool(x) for x in (args.index, args.config, args.factory)) != 1:
        print("scopegate replay: give exactly one of --index, --config or --factory", file=sys.stderr)
        return EXIT_USAGE
    if args.sample is not None and args.sample < 1:
        print("scopegate replay: --sample must be at least 1", file=sys.stderr)
        return EXIT_USAGE
    try:
        return asyncio.run(_replay(args))
    except ScopegateError as exc:
        print(f"scopegate replay: {exc}", file=sys.stderr)
        return EXIT_USAGE


# -- stats --------------------------------------------------------------------------------
def stats_report(
    paths: Sequence[str], *, window: str | None, until: str | None, buckets: int
) -> tuple[dict[str, Any], list[Any], dict[str, Any]]:
    """(figures, time buckets, information about the window and the files)."""
    read = ReadStats()
    records = list(iter_records(paths, stats=read))
    times = [t for t in (record_time(r) for r in records) if t is not None]
    end = parse_time(until) if until else (max(times) if times else datetime.now(UTC))
    first = min(times) if times else None
    start = first
    if window and window.lower() != "all":
        start = end - parse_duration(window)
        if first is not None and first > start:
            start = first  # the log is shorter than the window: chart only the part that has data
    chosen = [r for r in records if (t := record_time(r)) is not None and (start is None or t >= start) and t <= end]
    total = figures(chosen)
    series = bucketed(chosen, start, end, buckets) if start is not None and chosen else []
    info = {
        "from": start.isoformat() if start else None,
        "until": end.isoformat(),
        "records": len(chosen),
        "lines": read.lines,
        "bad_lines": read.bad_lines,
    }
    return total, series, info


def _cmd_stats(args: argparse.Namespace) -> int:
    if args.buckets < 1 or args.buckets > 200:
        print("scopegate stats: --buckets must be from 1 to 200", file=sys.stderr)
        return EXIT_USAGE
    try:
        total, series, info = stats_report(args.log, window=args.window, until=args.until, buckets=args.buckets)
    except ScopegateError as exc:
        print(f"scopegate stats: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if args.json:
        out = {
            "window": info,
            "figures": total,
            "buckets": [{"from": b.start.isoformat(), "until": b.end.isoformat(), **b.figures} for b in series],
        }
        print(json.dumps(out, indent=2))
    else:
        title = f"{info['records']} record(s) from {info['from'] or '-'} to {info['until']}"
        if info["bad_lines"]:
            title += f" ({info['bad_lines']} malformed line(s) skipped)"
        print(render(total, series, title=title))
    return EXIT_OK


def add_commands(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = subparsers.add_parser(
        "replay",
        help="re-run logged searches against the current index and diff the results",
        description=(
            "Re-run a sample of logged search calls with the same scope, query, filters and page against the "
            "current index (no cache) and compare: Jaccard@5 and rank changes of the returned ids, total changes, "
            "zero-result flips both ways. Exits 1 past the thresholds (for CI gating of mapping, analyzer or boost "
            "changes), 2 on a usage error."
        ),
    )
    p.add_argument("log", nargs="+", help="call-log file(s) (JSON lines); list rotated files oldest first")
    p.add_argument("--sample", type=int, default=None, metavar="N", help="replay N distinct calls (default: all)")
    p.add_argument("--seed", type=int, default=0, help="random seed of the sample (default 0)")
    p.add_argument("--since", help="only calls logged after this time: ISO 8601, or a duration ago such as 2h or 7d")
    p.add_argument("--index", help="embedded index folder to replay against (its stored spec builds the search tool)")
    p.add_argument(
        "--config",
        help="scopegate config file: replay against its search tool (--tool picks one; default the first), "
        "on whatever backend it configures (embedded, OpenSearch, Elasticsearch)",
    )
    p.add_argument(
        "--factory",
        metavar="MODULE:FUNCTION",
        help="a function returning the ScopedTool to replay against (e.g. an OpenSearch-backed search tool)",
    )
    p.add_argument("--tool", help="replay calls of this tool name (default: the built tool's name)")
    p.add_argument("--concurrency", type=int, default=1, help="calls in flight at once (default 1)")
    p.add_argument("--json", action="store_true", help="print the full report as JSON instead of a table")
    p.add_argument("--show", type=int, default=50, help="table rows to print, most changed first (default 50)")
    p.add_argument(
        "--max-jaccard-drop",
        type=_optional_float,
        default=0.05,
        help="fail if 1 - mean Jaccard@5 exceeds this (default 0.05; 'none' to skip)",
    )
    p.add_argument(
        "--max-changed-share",
        type=_optional_float,
        default=None,
        help="fail if more than this share of calls changed their top 5 ids or order (default: not checked)",
    )
    p.add_argument(
        "--max-total-changed-share",
        type=_optional_float,
        default=None,
        help="fail if more than this share of calls changed their total (default: not checked)",
    )
    p.add_argument(
        "--max-to-zero",
        type=_optional_int,
        default=0,
        help="fail if more calls than this had results and now have none (default 0)",
    )
    p.add_argument(
        "--max-from-zero",
        type=_optional_int,
        default=None,
        help="fail if more calls than this had no results and now have some (default: not checked)",
    )
    p.add_argument(
        "--max-errors", type=_optional_int, default=0, help="fail if more calls than this now fail (default 0)"
    )
    p.add_argument(
        "--min-calls", type=int, default=1, help="fail if fewer calls than this could be replayed (default 1)"
    )
    p.set_defaults(func=_cmd_replay)

    p = subparsers.add_parser(
        "stats",
        help="health figures of the tool layer from a call log",
        description=(
            "Zero-result rate, searches per answered question, latency p50/p95/p99, error rate by code and cache "
            "hit rate from a call log, with a text chart of p95 latency and zero-result rate over time."
        ),
    )
    p.add_argument("log", nargs="+", help="call-log file(s) (JSON lines)")
    p.add_argument(
        "--window",
        default="1h",
        help="how far back from the newest record (or --until) to look: e.g. 15m, 1h, 7d, or 'all' (default 1h)",
    )
    p.add_argument("--until", help="end of the window: ISO 8601 or a duration ago (default: the newest record)")
    p.add_argument("--buckets", type=int, default=12, help="rows of the time chart (default 12)")
    p.add_argument("--json", action="store_true", help="print the figures as JSON")
    p.set_defaults(func=_cmd_stats)
