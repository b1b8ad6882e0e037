"""``scopegate check CONFIG`` and ``scopegate serve CONFIG``."""

from __future__ import annotations

import asyncio
import functools
import logging
import sys
from typing import Any

import click

from scopegate.cli.core import Command, ExitCode, echo_json, existing_file

CONFIG_FILE = existing_file()


@click.command(cls=Command, short_help="Validate a config file and print each tool's declaration.")
@click.argument("config", required=False, type=CONFIG_FILE)
@click.option("--schema", is_flag=True, help="Print the config's JSON Schema (draft 2020-12) and exit.")
@click.option(
    "--deep",
    is_flag=True,
    help="Also open every embedded index (read-only): count its documents and name how its stored spec differs "
    "from the config (mapping drift); and read the mapping of every OpenSearch/Elasticsearch index or alias: "
    "each field the spec needs must exist with the right type (one line per problem). A missing, empty or "
    "drifted index, or a mapping error, is a problem (exit 1); filter values no document has are warnings.",
)
@click.option(
    "--profile",
    "profiles",
    multiple=True,
    type=click.Choice(["gemini", "openai", "anthropic", "mcp"]),
    help="Also render the declarations as this model API takes them (Gemini, OpenAI strict, Anthropic, MCP) "
    "and check them against its rules; a rule broken is a problem (repeatable).",
)
def check(config: str | None, schema: bool, deep: bool, profiles: tuple[str, ...]) -> int:
    """Validate the scopegate config CONFIG (YAML, TOML or JSON) against its schema and cross-key rules,
    build its tools without opening any index, and print what each tool shows a model. Exits 1 listing every
    problem found."""
    if schema:
        from scopegate.config.schema import config_schema

        echo_json(config_schema())
        return ExitCode.OK
    if config is None:
        raise click.UsageError("give a CONFIG file (or --schema)")
    from scopegate.server.check import check_config

    report = asyncio.run(check_config(config, deep=deep, profiles=profiles))  # type: ignore[arg-type]
    echo_json(report)
    for warning in report.get("warnings") or []:
        click.echo(f"{config}: warning: {warning}", err=True)
    if report.get("problems"):
        click.echo(f"{config}: {len(report['problems'])} problem(s):", err=True)
        for problem in report["problems"]:
            click.echo(f"  {problem}", err=True)
        return ExitCode.FAILURE
    click.echo(f"{config}: ok, {len(report['tools'])} tool(s)", err=True)
    return ExitCode.OK


@click.command(cls=Command, short_help="Serve a config's tools over MCP (stdio or streamable HTTP).")
@click.argument("config", type=CONFIG_FILE)
@click.option(
    "--transport", type=click.Choice(["stdio", "http"]), default="stdio", help="MCP transport (default stdio)."
)
@click.option("--host", help="HTTP bind address (default: server.http.host, else 127.0.0.1).")
@click.option("--port", type=click.IntRange(0, 65535), help="HTTP port (default: server.http.port, else 8765).")
@click.option("--demo-data", is_flag=True, help="Fill empty embedded indexes with the generated demo ticket corpus.")
@click.option(
    "--allow-empty",
    is_flag=True,
    help="Serve even when an embedded index is missing or empty (by default serve refuses to start).",
)
@click.option(
    "--allow-index-problems",
    is_flag=True,
    help="Serve even when the live mapping check of an OpenSearch/Elasticsearch index finds errors (each is "
    "printed as a warning; by default serve refuses to start).",
)
@click.option(
    "--log-level",
    type=click.Choice(["debug", "info", "warning", "error"]),
    default="warning",
    help="Log level (logs go to stderr).",
)
def serve(
    config: str,
    transport: Any,
    host: str | None,
    port: int | None,
    demo_data: bool,
    allow_empty: bool,
    allow_index_problems: bool,
    log_level: str,
) -> int:
    """Serve the tools of the config file CONFIG as an MCP server. Over stdio the scope is fixed by the
    config's `stdio` section or SCOPEGATE_TENANT/SCOPEGATE_USER/SCOPEGATE_GROUPS; over HTTP it comes from each
    request's verified bearer token. A missing or empty embedded index, or one built with another mapping, is
    refused before start-up (exit 1; --allow-empty or --demo-data to serve anyway). Ctrl-C stops it (exit 0).
    Needs the mcp extra."""
    from scopegate.server.serve import load_serve_config, serve_config

    # Logs go to stderr: on stdio, stdout carries the protocol.
    logging.basicConfig(level=getattr(logging, log_level.upper()), stream=sys.stderr)
    cfg = load_serve_config(config, transport)
    say = functools.partial(click.echo, err=True)
    prepare = None
    if demo_data:
        from scopegate.demo.serve_data import ensure_demo_data

        prepare = functools.partial(ensure_demo_data, say=say)
    try:
        asyncio.run(
            serve_config(
                cfg, transport=transport, host=host, port=port, prepare=prepare, allow_empty=allow_empty,
                allow_index_problems=allow_index_problems, log_level=log_level, say=say,
            )
        )  # fmt: skip
    except KeyboardInterrupt:  # how a server is stopped
        return ExitCode.OK
    return ExitCode.OK


COMMANDS = (check, serve)
