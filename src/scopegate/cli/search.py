"""``scopegate demo|ingest|search|get|count|spec``: the tools from the command line (embedded folders, or any
configured backend with ``--config``)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from scopegate.cli.core import (
    Command,
    ExitCode,
    echo_json,
    existing_dir,
    existing_file,
    exit_code_for_result,
    key_value_pairs,
    usage_errors,
)
from scopegate.errors import IngestError, ScopeNotCarried
from scopegate.scope import Scope, ScopeMissing, canonical_id
from scopegate.search.local import ToolKind
from scopegate.search.spec import SearchSpec

if TYPE_CHECKING:
    from scopegate.config.run_tool import ConfigToolKind

SPEC_HELP = (
    "Search spec file: JSON, YAML or TOML with the keys of one search_tools entry of a config, without backend "
    "(`scopegate check --schema` documents them); default: the demo ticket spec."
)
INGEST_SPEC_HELP = (
    "Search spec file: JSON, YAML or TOML with the keys of one search_tools entry of a config, without backend; "
    "default: the spec stored with INDEX, else the demo ticket spec."
)


def _demo_spec() -> SearchSpec:
    from scopegate.demo.corpus import ticket_spec

    return ticket_spec()


def _spec(path: str | None) -> SearchSpec:
    if path is None:
        from scopegate.demo.corpus import ticket_spec

        return ticket_spec()
    from scopegate.search.spec_file import load_spec_file

    with usage_errors("--spec"):
        return load_spec_file(path)


@click.command(cls=Command, short_help="Run the worked example on the embedded engine.")
@click.option(
    "--workdir",
    type=click.Path(file_okay=False),
    help="Folder for the corpus and index, kept afterwards (default: a temporary folder, removed at the end).",
)
def demo(workdir: str | None) -> int:
    """Generate a multi-tenant ticket corpus, index it and run the scripted ADK agent (what `make demo` runs)."""
    from scopegate.demo.__main__ import run_demo

    return ExitCode.OK if run_demo(workdir) == 0 else ExitCode.FAILURE


@click.command(cls=Command, short_help="Ingest JSONL or CSV into an embedded index.")
@click.argument("paths", nargs=-1, required=True, metavar="[INDEX] FILE")
@click.option("--spec", "spec_path", type=existing_file(), help=INGEST_SPEC_HELP)
@click.option(
    "--config",
    "config_path",
    type=existing_file(),
    help="Take the spec (and, for an embedded backend, the index folder) from this config file, the one "
    "`scopegate serve` reads.",
)
@click.option("--tool", help="The search tool of --config to ingest for (needed when it has several).")
@click.option(
    "--map",
    "pairs",
    multiple=True,
    metavar="FIELD=COLUMN",
    help="Map a spec field to a source column; id=, tenant= and groups= name the id, tenant and group columns "
    "(repeatable); id=@row numbers the records.",
)
@click.option(
    "--tenant",
    "tenant_value",
    metavar="TENANT",
    help="Give every record this tenant (for a source without a tenant column).",
)
@click.option(
    "--unlisted",
    type=click.Choice(["warn", "refuse"]),
    default="warn",
    help="Values outside a filter's allowed list (no filter can match them): warn and ingest (default), or "
    "refuse the whole file before anything is written.",
)
@click.option("--format", "fmt", type=click.Choice(["jsonl", "csv"]), help="Input format (default: from the suffix).")
@click.option("--batch-size", type=click.IntRange(min=1), default=10_000, help="Documents per commit (default 10000).")
@click.option("--allow-errors", is_flag=True, help="Exit 0 even when some records were rejected.")
@click.option("--quiet", is_flag=True, help="No progress bar.")
def ingest(
    paths: tuple[str, ...],
    spec_path: str | None,
    config_path: str | None,
    tool: str | None,
    pairs: tuple[str, ...],
    tenant_value: str | None,
    unlisted: str,
    fmt: str | None,
    batch_size: int,
    allow_errors: bool,
    quiet: bool,
) -> int:
    """Upsert the records of FILE (JSONL or CSV) by id into the embedded (tantivy) index folder INDEX
    (created if missing), in batched atomic commits. Usage: [INDEX] FILE; INDEX may be left out with --config
    (its embedded backend names the folder).

    The spec comes from --config FILE --tool NAME, or --spec FILE, or else the spec stored with the index
    (a re-ingest keeps it); a new folder without either gets the demo ticket spec. Before writing, the mapped
    id and tenant columns (and every column named by --map) must exist, and values outside each filter's
    allowed list are counted (--unlisted). Prints a JSON report; exits 1 if records were rejected."""
    from scopegate.ingest.mapping import FieldMapping
    from scopegate.ingest.precheck import is_stream, precheck, precheck_stream
    from scopegate.ingest.run import ingest_into_index, ingest_stream_into_index, report_summary
    from scopegate.ingest.target import resolve_target

    if len(paths) > 2:
        raise click.UsageError(f"expected [INDEX] FILE, got {len(paths)} arguments")
    index, file = (None, paths[0]) if len(paths) == 1 else paths
    stream = is_stream(file)  # a pipe or /dev/stdin: read once, checked as it is ingested
    if not stream and not os.path.isfile(file):
        raise click.BadParameter(f"file {file!r} does not exist", param_hint="'FILE'")
    if stream and unlisted == "refuse":
        raise click.UsageError(
            f"--unlisted refuse reads the source before writing, and {file} can be read only once: "
            "give a regular file, or --unlisted warn"
        )
    with usage_errors("--spec/--config/--tool"):
        target = resolve_target(index, spec_file=spec_path, config=config_path, tool=tool, default_spec=_demo_spec())
    with usage_errors("--map/--tenant"):
        mapping = FieldMapping.parse(pairs, tenant_value=tenant_value)
        mapping.check(target.spec)
    if target.origin == "demo":
        click.echo(f"scopegate ingest: note: {target.index} is a new index and no --spec/--config was given: "
                   "using the demo ticket spec (scopegate spec prints it)", err=True)  # fmt: skip
    if stream:
        checked, records = precheck_stream(target.spec, mapping, file, fmt)
        report = asyncio.run(
            ingest_stream_into_index(
                target.index,
                records,
                target.spec,
                batch_size=batch_size,
                progress=not quiet,
                label=os.path.basename(file),
            )
        )
        warning = checked.unlisted_message(target.spec)
        if warning:
            click.echo(f"scopegate ingest: warning: {warning} (ingested)", err=True)
    else:
        checked = precheck(target.spec, mapping, file, fmt)
        warning = checked.unlisted_message(target.spec)
        if warning and unlisted == "refuse":
            raise IngestError(f"{warning}; nothing was written (--unlisted warn ingests them anyway)")
        if warning:
            click.echo(f"scopegate ingest: warning: {warning}", err=True)
        report = asyncio.run(
            ingest_into_index(
                target.index, file, target.spec, mapping, fmt=fmt, batch_size=batch_size, progress=not quiet,
                total=checked.records or None,
            )
        )  # fmt: skip
    summary = report_summary(report)
    summary.update(index=str(target.index), spec=target.origin, unlisted=checked.unlisted_summary())
    echo_json(summary)
    return ExitCode.OK if report.failed == 0 or allow_errors else ExitCode.FAILURE


def _scope_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """--tenant, --group/--groups and --user: the session's scope, the operator's choice."""
    for option in reversed(
        (
            click.option(
                "--tenant", required=True, help="Tenant id of the session (the operator's choice, never the model's)."
            ),
            click.option(
                "--group",
                "group",
                multiple=True,
                metavar="GROUP",
                help="A group id of the session (repeatable); for indexes whose spec has a groups scope key.",
            ),
            click.option("--groups", metavar="G1,G2", help="Comma-separated group ids of the session."),
            click.option("--user", help="User id of the session; for indexes whose spec has a user scope key."),
        )
    ):
        command = option(command)
    return command


def _scope(tenant: str, group: tuple[str, ...], groups: str | None, user: str | None) -> Scope:
    """The operator's scope, checked with the identity rule every entry point uses (a bad id is exit 2)."""
    with usage_errors("--tenant/--group/--user", ScopeMissing):
        return Scope(
            tenant_id=canonical_id(tenant, "--tenant"),
            group_ids=tuple(canonical_id(g, "group") for g in (*group, *(groups.split(",") if groups else ()))),
            user_id=canonical_id(user, "--user") if user is not None else None,
        )


def _call(index: str, kind: ToolKind, args: dict[str, Any], scope: Scope) -> int:
    from scopegate.search.local import run_index_tool

    with usage_errors("--group/--user", ScopeNotCarried):
        result = asyncio.run(run_index_tool(index, kind, args, scope))
    echo_json(result)
    return exit_code_for_result(result)


def _call_config(config: str, tool: str | None, kind: ConfigToolKind, args: dict[str, Any], scope: Scope) -> int:
    from scopegate.config.run_tool import run_config_tool
    from scopegate.errors import UnknownNameError

    with usage_errors("--tool/--group/--user", ScopeNotCarried, UnknownNameError):
        result = asyncio.run(run_config_tool(config, tool, kind, args, scope))
    echo_json(result)
    return exit_code_for_result(result)


def _target(args: tuple[str, ...], config: str | None, tool: str | None, rest: str) -> tuple[str | None, list[str]]:
    """(INDEX folder or None with --config, the remaining arguments), checked like click would."""
    wanted = len(rest.split())
    if config is None:
        if tool is not None:
            raise click.UsageError("--tool needs --config")
        if len(args) != wanted + 1:
            raise click.UsageError(f"expected INDEX {rest}".rstrip() + f", got {len(args)} argument(s)")
        if not os.path.isdir(args[0]):
            raise click.BadParameter(f"folder {args[0]!r} does not exist", param_hint="'INDEX'")
        return args[0], list(args[1:])
    if len(args) != wanted:
        raise click.UsageError(f"with --config, expected {rest or 'no arguments'}, got {len(args)} argument(s)")
    return None, list(args)


def _config_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """--config FILE and --tool NAME: call a configured tool on its own backend (any engine)."""
    command = click.option(
        "--tool", help="With --config: the search tool (or its fetch tool) to call; needed when it has several."
    )(command)
    return click.option(
        "--config",
        "config_path",
        type=existing_file(),
        help="Call the tool of this config file (the one `scopegate serve` reads) on its own backend: embedded, "
        "OpenSearch or Elasticsearch; INDEX is then left out.",
    )(command)


def _run_tool(
    index: str | None, config_path: str | None, tool: str | None, kind: ToolKind, args: dict[str, Any], scope: Scope
) -> int:
    """Call a tool on the embedded folder ``index``, or on ``--config``'s tool when no folder was given."""
    if index is None:
        assert config_path is not None
        return _call_config(config_path, tool, kind, args, scope)
    return _call(index, kind, args, scope)


@click.command(cls=Command, short_help="Run the search tool against an index (embedded folder or --config).")
@click.argument("paths", nargs=-1, required=True, metavar="[INDEX] QUERY")
@click.option(
    "--filter",
    "filters",
    multiple=True,
    metavar="NAME=VALUE",
    callback=key_value_pairs,
    help="An enumerated filter (repeatable).",
)
@click.option("--page", type=int, default=1, help="Result page (default 1).")
@_config_options
@_scope_options
def search(
    paths: tuple[str, ...],
    filters: dict[str, str],
    page: int,
    config_path: str | None,
    tool: str | None,
    tenant: str,
    group: tuple[str, ...],
    groups: str | None,
    user: str | None,
) -> int:
    """Call the search tool with the keywords QUERY, as a model would, inside one session's scope, and print
    the shaped result: on the embedded index folder INDEX (scope written under its spec's scope_keys), or with
    --config FILE --tool NAME on the tool's configured backend (OpenSearch, Elasticsearch or embedded).
    Usage: [INDEX] QUERY. An error envelope is printed too (exit 2 when the tool refused the request)."""
    index, rest = _target(paths, config_path, tool, "QUERY")
    args = {"query": rest[0], "page": page, **filters}
    scope = _scope(tenant, group, groups, user)
    return _run_tool(index, config_path, tool, "search", args, scope)


@click.command(cls=Command, short_help="Fetch one document by id inside a tenant's scope.")
@click.argument("paths", nargs=-1, required=True, metavar="[INDEX] ID")
@_config_options
@_scope_options
def get(
    paths: tuple[str, ...],
    config_path: str | None,
    tool: str | None,
    tenant: str,
    group: tuple[str, ...],
    groups: str | None,
    user: str | None,
) -> int:
    """Call the fetch-by-id tool for the document ID, on the embedded index folder INDEX or with --config FILE
    --tool NAME on the tool's configured backend. Usage: [INDEX] ID. An out-of-scope id and an absent one both
    give NOT_FOUND (exit 2)."""
    index, rest = _target(paths, config_path, tool, "ID")
    scope = _scope(tenant, group, groups, user)
    return _run_tool(index, config_path, tool, "fetch", {"id": rest[0]}, scope)


@click.command(cls=Command, short_help="Count the documents a tenant's scope sees.")
@click.argument("paths", nargs=-1, metavar="[INDEX]")
@_config_options
@_scope_options
def count(
    paths: tuple[str, ...],
    config_path: str | None,
    tool: str | None,
    tenant: str,
    group: tuple[str, ...],
    groups: str | None,
    user: str | None,
) -> int:
    """Print how many documents one session's scope sees (the scope filter alone, inside the engine): in the
    embedded index folder INDEX, or with --config FILE --tool NAME in the tool's configured index.
    Usage: [INDEX]."""
    index, _ = _target(paths, config_path, tool, "")
    scope = _scope(tenant, group, groups, user)
    if index is None:
        assert config_path is not None
        return _call_config(config_path, tool, "count", {}, scope)
    from scopegate.backends.embedded import EmbeddedBackend

    backend = EmbeddedBackend.open(index)
    try:
        echo_json({"status": "ok", "tool": backend.spec.name, "count": backend.count_sync(scope)})
    finally:
        asyncio.run(backend.close())
    return ExitCode.OK


@click.command(cls=Command, short_help="Print the declarations a search spec produces.")
@click.option("--spec", "spec_path", type=existing_file(), help=SPEC_HELP)
def spec(spec_path: str | None) -> None:
    """Print the JSON schemas the model sees for the search and fetch tools, and the normalised spec."""
    from scopegate.search.spec_file import spec_declarations

    echo_json(spec_declarations(_spec(spec_path)))


@click.command(cls=Command, short_help="Re-embed every document of an embedded index with its spec's encoder.")
@click.argument("index", type=existing_dir())
@click.option("--quiet", is_flag=True, help="No progress bar.")
def reembed(index: str, quiet: bool) -> int:
    """Rebuild the vectors of the embedded index INDEX (vector or hybrid retrieval) with the encoder its stored
    spec names, e.g. after the embedding model changed. The keyword index is untouched; prints a JSON report."""
    from scopegate.vector.reembed import reembed_index

    echo_json(reembed_index(index, progress=not quiet))
    return ExitCode.OK


@click.command(cls=Command, short_help="Move an index onto per-tenant document keys (older indexes).")
@click.argument("source", required=False, type=existing_dir())
@click.argument("dest", required=False, type=click.Path(file_okay=False))
@click.option("--config", "config_path", type=existing_file(), help="Config file naming an OpenSearch/ES tool.")
@click.option("--tool", help="With --config: the search tool whose engine index is reindexed.")
def migrate(source: str | None, dest: str | None, config_path: str | None, tool: str | None) -> int:
    """Indexes written before documents were keyed by (tenant, id) are searchable but refuse writes.
    Embedded: copy the index folder SOURCE into the new folder DEST with per-tenant keys (SOURCE is left as
    it was; point the config at DEST). OpenSearch/Elasticsearch: --config CONFIG --tool NAME reindexes the
    tool's alias into a new versioned index and swaps the alias atomically. Stop ingest jobs meanwhile."""
    if config_path is not None or tool is not None:
        if config_path is None or tool is None or source is not None:
            raise click.UsageError("give --config and --tool together (and no SOURCE/DEST), or SOURCE and DEST")
        from scopegate.ingest.migrate import migrate_tool

        echo_json(asyncio.run(migrate_tool(config_path, tool)))
        return ExitCode.OK
    if source is None or dest is None:
        raise click.UsageError("give SOURCE and DEST (embedded folders), or --config and --tool")
    from scopegate.ingest.migrate import migrate_folder
    from scopegate.ingest.run import report_summary

    report = migrate_folder(source, dest)
    echo_json({"source": source, "dest": dest, **report_summary(report)})
    return ExitCode.OK if report.failed == 0 else ExitCode.FAILURE


COMMANDS = (demo, ingest, search, get, count, spec, reembed, migrate)
