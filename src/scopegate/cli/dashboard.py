"""``scopegate dashboard``: the call log's figures as a web page on 127.0.0.1, or a static HTML report."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import click

from scopegate.cli.core import Command, ExitCode, echo_json, existing_file
from scopegate.cli.guard import UNTIL, window_option


@click.command(cls=Command, short_help="The call log's health figures as a local web page or an HTML report.")
@click.argument("log", nargs=-1, type=existing_file())
@click.option(
    "--html",
    "html_file",
    type=click.Path(dir_okay=False, writable=True),
    help="Write a static, self-contained HTML report to this file and exit (instead of serving).",
)
@click.option("--grafana", is_flag=True, help="Print the Grafana dashboard JSON for the Prometheus metrics and exit.")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=8766,
    help="Port on 127.0.0.1 to serve the page on (default 8766; 0 picks a free one).",
)
@window_option("all")
@UNTIL
@click.option("--buckets", type=click.IntRange(1, 500), default=24, help="Time buckets of the charts (default 24).")
@click.option("--top", type=click.IntRange(0, 1000), default=20, help="Zero-result queries to list (default 20).")
@click.option(
    "--refresh",
    type=click.IntRange(0, 86400),
    default=30,
    help="The served page reloads every this many seconds (default 30; 0: never).",
)
def dashboard(
    log: tuple[str, ...],
    html_file: str | None,
    grafana: bool,
    port: int,
    window: timedelta | None,
    until: datetime | None,
    buckets: int,
    top: int,
    refresh: int,
) -> int:
    """Show the call-log files LOG (JSON lines; rotated files oldest first) as a dashboard: zero-result rate,
    searches per answered question and p95 tool latency over time, top zero-result queries, errors by code,
    cache hit rate and per-tool latency histograms. Served on 127.0.0.1 only (the log holds tenants and
    queries) until Ctrl-C, re-reading the log on each request; --html writes the same page to a file;
    --grafana prints a Grafana dashboard of the same figures from the Prometheus metrics (LOG not needed)."""
    if grafana:
        from scopegate.dashboard import grafana_dashboard

        echo_json(grafana_dashboard())
        return ExitCode.OK
    if not log:
        raise click.UsageError("give at least one LOG file (or --grafana)")
    if html_file is not None:
        from scopegate.dashboard import dashboard_from_log, render_page

        page = render_page(
            dashboard_from_log(log, window=window, until=until, buckets=buckets, top=top), source=", ".join(log)
        )
        Path(html_file).write_text(page, encoding="utf-8")
        click.echo(f"wrote {html_file}", err=True)
        return ExitCode.OK
    from scopegate.dashboard.data import dashboard_from_log
    from scopegate.dashboard.server import make_server

    dashboard_from_log(log, window=window, until=until, buckets=buckets, top=top)  # a bad log fails here, not later
    server = make_server(
        log, port=port, window=window, until=until, buckets=buckets, top=top, refresh_s=refresh or None
    )
    try:
        click.echo(f"dashboard at {server.url} (Ctrl-C stops it)", err=True)
        server.serve_forever()
    except KeyboardInterrupt:
        return ExitCode.OK
    finally:
        server.server_close()
    return ExitCode.OK


COMMANDS = (dashboard,)
