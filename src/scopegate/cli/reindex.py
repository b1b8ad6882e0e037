"""``scopegate reindex``: the next index version with a new layout, verified against the live one, swapped in;
or ``--rollback``. Thin over :mod:`scopegate.config.reindex`."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import click

from scopegate.cli.core import Command, ExitCode, echo_json, existing_file, usage_errors
from scopegate.cli.guard import OPTIONAL_FLOAT, OPTIONAL_INT
from scopegate.cli.search import SPEC_HELP, _spec

if TYPE_CHECKING:
    from scopegate.backends.engine_common import EngineBackend


def _backend(
    config: str | None, tool_name: str | None, urls: tuple[str, ...], spec_path: str | None, options: dict[str, Any]
) -> EngineBackend[Any]:
    import dataclasses

    from scopegate.config.reindex import backend_from_config, backend_from_options

    if (config is None) == (not urls):
        raise click.UsageError("give either --config or --url")
    with usage_errors():
        if config is not None:
            return backend_from_config(config, tool_name)
        spec = _spec(spec_path)
        index = options.pop("index")
        if index:
            spec = dataclasses.replace(spec, index=index)
        split = [u.strip() for url in urls for u in url.split(",") if u.strip()]
        return backend_from_options(spec, split, **{k: v for k, v in options.items() if v is not None})


@click.command(cls=Command, short_help="Reindex into a new version, verify it against the live one, swap the aliases.")
@click.option("--config", type=existing_file(), help="Config file: the tool's backend entry is the NEW layout.")
@click.option("--tool", "tool_name", help="With --config: the search tool (default: the first).")
@click.option("--url", "urls", multiple=True, help="Without --config: engine URL(s), repeatable or comma-separated.")
@click.option("--engine", "kind", type=click.Choice(["opensearch", "elasticsearch"]), default="opensearch",
              help="Without --config: the engine (default opensearch).")  # fmt: skip
@click.option("--spec", "spec_path", type=existing_file(), help=SPEC_HELP)
@click.option("--index", help="Index base name (default: the spec's), e.g. tickets for tickets-read.")
@click.option("--analysis", type=click.Choice(["scopegate_en", "standard"]), help="Analysis of the new version.")
@click.option("--shards", type=click.IntRange(1, 1024), help="Primary shards of the new version (default 1).")
@click.option("--replicas", type=click.IntRange(0, 16), help="Replicas of the new version (default: the engine's).")
@click.option("--routing", type=click.Choice(["none", "tenant"]), help="Route documents by tenant (default none).")
@click.option("--server-major", type=click.IntRange(7, 9), help="Elasticsearch server major version, e.g. 8.")
@click.option("--log", "logs", multiple=True, type=existing_file(), help="Call-log file whose searches are replayed "
              "on both versions (repeatable; rotated files oldest first).")  # fmt: skip
@click.option("--sample", type=click.IntRange(min=1), help="Replay N distinct logged searches (default: all).")
@click.option("--seed", type=int, default=0, help="Random seed of the sample (default 0).")
@click.option("--max-jaccard-drop", **OPTIONAL_FLOAT, default="0.05", help="Default 0.05; 'none' to skip.")
@click.option("--max-total-changed-share", **OPTIONAL_FLOAT, help="Share of calls whose total may change.")
@click.option("--max-to-zero", **OPTIONAL_INT, default="0", help="Calls that may lose all results (default 0).")
@click.option("--max-errors", **OPTIONAL_INT, default="0", help="Calls that may fail on the new version (default 0).")
@click.option("--dry-run", is_flag=True, help="Build and verify, keep the new version, do not swap.")
@click.option("--delete-old", is_flag=True, help="Delete the previous version after the swap (no rollback then).")
@click.option("--keep-failed", is_flag=True, help="Keep the new version when verification fails.")
@click.option("--rollback", is_flag=True, help="Move the aliases back to the version the last swap left.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("--show", type=int, default=30, help="Diff rows to print, most changed first (default 30).")
def reindex(
    config: str | None,
    tool_name: str | None,
    urls: tuple[str, ...],
    kind: str,
    spec_path: str | None,
    index: str | None,
    analysis: str | None,
    shards: int | None,
    replicas: int | None,
    routing: str | None,
    server_major: int | None,
    logs: tuple[str, ...],
    sample: int | None,
    seed: int,
    max_jaccard_drop: float | None,
    max_total_changed_share: float | None,
    max_to_zero: int | None,
    max_errors: int | None,
    dry_run: bool,
    delete_old: bool,
    keep_failed: bool,
    rollback: bool,
    as_json: bool,
    show: int,
) -> int:
    """Create <index>-v<N+1> with the new layout (the config's backend entry, or --analysis, --shards,
    --replicas, --routing), copy the live index into it, compare documents per tenant and replay the logged
    searches against both versions (the diff is printed), then move the read alias and every agent alias in one
    atomic call; searches keep running on the old version until then. Exits 1 when verification fails
    (nothing is swapped). --rollback moves the aliases back to the version the last swap left."""
    from scopegate.config.reindex import reindex_verified
    from scopegate.config.reindex import rollback as roll_back
    from scopegate.guard.logfile import iter_records
    from scopegate.guard.replay import Thresholds, collect_searches, sample_searches

    options: dict[str, Any] = {"type": kind, "index": index, "analysis": analysis, "shards": shards,
                               "replicas": replicas, "routing": routing, "server_major": server_major}  # fmt: skip
    backend = _backend(config, tool_name, urls, spec_path, options)

    async def run() -> Any:
        try:
            if rollback:
                return await roll_back(backend)
            found, _skipped = collect_searches(iter_records(logs), tool=backend.spec.name) if logs else ([], 0)
            thresholds = Thresholds(
                max_jaccard_drop=max_jaccard_drop,
                max_total_changed_share=max_total_changed_share,
                max_to_zero=max_to_zero,
                max_errors=max_errors,
                min_calls=1 if logs else 0,
            )
            return await reindex_verified(
                backend,
                calls=sample_searches(found, sample, seed=seed),
                thresholds=thresholds,
                swap=not dry_run,
                delete_old=delete_old,
                keep_failed=keep_failed or dry_run,
            )
        finally:
            await backend.close()

    done = asyncio.run(run())
    if rollback:
        click.echo(f"rolled back: the read aliases moved from {done[0]} to {done[1]}")
        return ExitCode.OK
    if as_json:
        echo_json(done.as_dict())
    else:
        click.echo(done.render(show=show))
    return ExitCode.OK if done.passed() else ExitCode.FAILURE


COMMANDS = (reindex,)
