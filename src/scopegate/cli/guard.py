"""``scopegate replay`` and ``scopegate stats``: operate the guard from its call log."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, TypeVar

import click

from scopegate.cli.core import (
    Command,
    ExitCode,
    echo_json,
    existing_dir,
    existing_file,
    float_or_off,
    int_or_off,
    parsed_by,
    time_or_ago,
    usage_errors,
    window_or_all,
)

OPTIONAL_FLOAT: dict[str, Any] = {"metavar": "FLOAT|none", "callback": parsed_by(float_or_off)}
OPTIONAL_INT: dict[str, Any] = {"metavar": "INT|none", "callback": parsed_by(int_or_off)}
TIME: dict[str, Any] = {"metavar": "TIME", "callback": parsed_by(time_or_ago)}

if TYPE_CHECKING:
    from scopegate.config.replay_run import LogReplay

F = TypeVar("F", bound=Callable[..., Any])
LOG_FILES = click.argument("log", nargs=-1, required=True, type=existing_file())
UNTIL = click.option(
    "--until", **TIME, help="End of the window: ISO 8601 or a duration ago (default: the newest record)."
)


def window_option(default: str) -> Callable[[F], F]:
    """``--window DURATION`` (or ``all``), back from the newest record or ``--until``."""
    return click.option(
        "--window",
        metavar="DURATION",
        callback=parsed_by(window_or_all),
        default=default,
        help="How far back from the newest record (or --until) to look: e.g. 15m, 1h, 7d, or 'all' "
        f"(default {default}).",
    )


@click.command(cls=Command, short_help="Re-run logged searches against the current index and diff the results.")
@LOG_FILES
@click.option("--sample", type=click.IntRange(min=1), metavar="N", help="Replay N distinct calls (default: all).")
@click.option("--seed", type=int, default=0, help="Random seed of the sample (default 0).")
@click.option(
    "--since", **TIME, help="Only calls logged after this time: ISO 8601, or a duration ago such as 2h or 7d."
)
@click.option(
    "--index",
    type=existing_dir(),
    help="Embedded index folder to replay against (its stored spec builds the search tool).",
)
@click.option(
    "--config",
    type=existing_file(),
    help="Scopegate config file: replay against its search tool (--tool picks one; default the first), "
    "on whatever backend it configures (embedded, OpenSearch, Elasticsearch).",
)
@click.option(
    "--factory",
    metavar="MODULE:FUNCTION",
    help="A function returning the ScopedTool to replay against (e.g. an OpenSearch-backed search tool).",
)
@click.option("--tool", "tool_name", help="Replay calls of this tool name (default: the built tool's name).")
@click.option("--concurrency", type=click.IntRange(min=1), default=1, help="Calls in flight at once (default 1).")
@click.option("--json", "as_json", is_flag=True, help="Print the full report as JSON instead of a table.")
@click.option("--show", type=int, default=50, help="Table rows to print, most changed first (default 50).")
@click.option(
    "--max-jaccard-drop",
    **OPTIONAL_FLOAT,
    default="0.05",
    help="Fail if 1 - mean Jaccard@5 exceeds this (default 0.05; 'none' to skip).",
)
@click.option(
    "--max-changed-share",
    **OPTIONAL_FLOAT,
    help="Fail if more than this share of calls changed their top 5 ids or order (default: not checked).",
)
@click.option(
    "--max-total-changed-share",
    **OPTIONAL_FLOAT,
    help="Fail if more than this share of calls changed their total (default: not checked).",
)
@click.option(
    "--max-to-zero",
    **OPTIONAL_INT,
    default="0",
    help="Fail if more calls than this had results and now have none (default 0).",
)
@click.option(
    "--max-from-zero",
    **OPTIONAL_INT,
    help="Fail if more calls than this had no results and now have some (default: not checked).",
)
@click.option("--max-errors", **OPTIONAL_INT, default="0", help="Fail if more calls than this now fail (default 0).")
@click.option("--min-calls", type=int, default=1, help="Fail if fewer calls than this could be replayed (default 1).")
def replay(
    log: tuple[str, ...],
    sample: int | None,
    seed: int,
    since: datetime | None,
    index: str | None,
    config: str | None,
    factory: str | None,
    tool_name: str | None,
    concurrency: int,
    as_json: bool,
    show: int,
    max_jaccard_drop: float | None,
    max_changed_share: float | None,
    max_total_changed_share: float | None,
    max_to_zero: int | None,
    max_from_zero: int | None,
    max_errors: int | None,
    min_calls: int,
) -> int:
    """Re-run a sample of the search calls logged in LOG (call-log files, JSON lines; rotated files oldest
    first) with the same scope, query, filters and page against the current index (no cache) and compare:
    Jaccard@5 and rank changes of the returned ids, total changes, zero-result flips both ways. Exits 1 past
    the thresholds (for CI gating of mapping, analyzer or boost changes), 2 on a usage error."""
    from scopegate.config.replay_run import replay_log, replay_target
    from scopegate.guard.replay import Thresholds

    if sum(x is not None for x in (index, config, factory)) != 1:
        raise click.UsageError("give exactly one of --index, --config or --factory")
    thresholds = Thresholds(
        max_jaccard_drop=max_jaccard_drop,
        max_changed_share=max_changed_share,
        max_total_changed_share=max_total_changed_share,
        max_to_zero=max_to_zero,
        max_from_zero=max_from_zero,
        max_errors=max_errors,
        min_calls=min_calls,
    )

    async def run() -> LogReplay:
        async with replay_target(index=index, config=config, factory=factory, tool_name=tool_name) as tool:
            return await replay_log(
                log, tool, tool_name=tool_name, since=since, sample=sample, seed=seed, concurrency=concurrency,
                thresholds=thresholds,
            )  # fmt: skip

    with usage_errors():  # a factory, config or tool name that does not load
        done = asyncio.run(run())
    if as_json:
        echo_json(done.as_dict())
    else:
        click.echo(done.render(show=show))
    return ExitCode.OK if done.report.passed() else ExitCode.FAILURE


@click.command(cls=Command, short_help="Health figures of the tool layer from a call log.")
@LOG_FILES
@window_option("1h")
@UNTIL
@click.option(
    "--buckets", type=click.IntRange(1, 200), default=12, help="Rows of the time chart, 1 to 200 (default 12)."
)
@click.option("--json", "as_json", is_flag=True, help="Print the figures as JSON.")
def stats(log: tuple[str, ...], window: timedelta | None, until: datetime | None, buckets: int, as_json: bool) -> None:
    """Zero-result rate, searches per answered question, latency p50/p95/p99, error rate by code and cache
    hit rate from the call-log files LOG (JSON lines), with a text chart of p95 latency and zero-result rate
    over time."""
    from scopegate.guard.stats import stats_from_log

    report = stats_from_log(log, window=window, until=until, buckets=buckets)
    if as_json:
        echo_json(report.as_dict())
    else:
        click.echo(report.render())


COMMANDS = (replay, stats)
