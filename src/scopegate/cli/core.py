"""What every ``scopegate`` command shares: exit codes, error reports, JSON output, the click classes.

Commands parse, call one library function and print. Everything that can go
wrong is turned into an exit code here and nowhere else (docs/reference/exit-codes.md):

====  ===========================================================================
0     ok
1     the command ran and reports a failure (replay past its thresholds, check
      found problems, ingest rejected records, snapshot differs, any other
      ScopegateError)
2     usage: the command line is wrong (click's checks: unknown option, bad value,
      a named file or folder that does not exist), an argument the library refuses
      (a spec, selection, factory or tool name that does not load), or a search/get
      request the tool refuses (its error envelope is printed on stdout)
3     not found: the folder given as an index holds no scopegate index
4     unavailable: a needed optional extra is not installed, or an engine (node,
      Java, Maven) is not available
130   interrupted (Ctrl-C)
141   stdout was closed by its reader (``scopegate ... | head``): output stops quietly
====  ===========================================================================
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime, timedelta
from enum import IntEnum
from importlib import metadata
from typing import Any, NoReturn, TypeVar

import click

from scopegate import errors
from scopegate.extras import missing_extra


class ExitCode(IntEnum):
    OK = 0
    FAILURE = 1
    USAGE = 2
    NOT_FOUND = 3
    UNAVAILABLE = 4
    INTERRUPTED = 130  # 128 + SIGINT
    PIPE_CLOSED = 141  # 128 + SIGPIPE, what the shell reports for `cat big | head`


# What each code means, as the reference page (docs/reference/exit-codes.md) prints it: one source.
EXIT_CODE_MEANINGS: dict[ExitCode, str] = {
    ExitCode.OK: "ok",
    ExitCode.FAILURE: (
        "the command ran and reports a failure: `replay` past its thresholds, `check` (or `serve`) found problems"
        " in the config, `check --deep` found a missing, empty or drifted index, `serve` refused a missing or"
        " empty index, `ingest` rejected records (without `--allow-errors`) or refused the source (a mapped"
        " column missing, `--unlisted refuse`), `openapi declarations --check` differs from the snapshot,"
        " `engine … status` is not healthy, any other scopegate error"
    ),
    ExitCode.USAGE: (
        "usage error: unknown command or option, a bad value, a file or folder named on the command line that"
        " does not exist, an argument that does not load (`--spec`, an OpenAPI `SPEC` or selection,"
        " `replay --config/--factory/--tool`), and a `search`/`get` request the tool refuses: its error envelope"
        " (`BAD_QUERY`, `BAD_FILTER`, `BAD_PAGE`, `NO_SCOPE`, `NOT_FOUND`, …) is printed on stdout"
    ),
    ExitCode.NOT_FOUND: "no index: the folder given as `INDEX` or `--index` holds no scopegate index",
    ExitCode.UNAVAILABLE: (
        "not available: an optional extra is not installed (the message names it, e.g."
        " `pip install 'scopegate[mcp]'`), or an engine is not (no node running, Java or Maven missing,"
        " `SEARCH_UNAVAILABLE`)"
    ),
    ExitCode.INTERRUPTED: "interrupted (Ctrl-C); `serve` stopped with Ctrl-C exits 0",
    ExitCode.PIPE_CLOSED: (
        "stdout was closed before all output was written (`scopegate … \\| head -1`): output stops quietly,"
        " like `cat` in a pipe; if the reader leaves after everything was written, the command's own code"
    ),
}


def exit_code_for(exc: BaseException) -> ExitCode:
    """The exit code of a library exception that ends a command."""
    if isinstance(exc, errors.MissingIndexError):
        return ExitCode.NOT_FOUND
    if isinstance(exc, (errors.MissingExtraError, errors.EngineNodeError)) or missing_extra(exc) is not None:
        return ExitCode.UNAVAILABLE
    if isinstance(exc, errors.BackendError) and exc.retryable:
        return ExitCode.UNAVAILABLE
    return ExitCode.FAILURE


_UNAVAILABLE_CODES = frozenset({errors.SEARCH_UNAVAILABLE, errors.UNAVAILABLE, errors.TIMEOUT})


def exit_code_for_result(result: Mapping[str, Any]) -> ExitCode:
    """The exit code of a tool result printed by ``search``/``get``: 2 when the tool refused the request."""
    if result.get("status") != "error":
        return ExitCode.OK
    code = result.get("error_code")
    if code == errors.INDEX_MISSING:
        return ExitCode.NOT_FOUND
    if code in _UNAVAILABLE_CODES:
        return ExitCode.UNAVAILABLE
    if code == errors.INTERNAL:
        return ExitCode.FAILURE
    return ExitCode.USAGE  # BAD_QUERY, BAD_FILTER, BAD_PAGE, BAD_ARGUMENTS, NO_SCOPE, NOT_FOUND


def _say(text: str) -> None:
    with contextlib.suppress(OSError, ValueError):
        click.echo(text, err=True)


def _stdout_to_devnull() -> None:
    """Point stdout at /dev/null so the interpreter's last flush cannot fail (the Python docs' recipe)."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())


def _fail(ctx: click.Context, message: str, code: ExitCode) -> NoReturn:
    _say(f"{ctx.command_path}: error: {message}")
    raise click.exceptions.Exit(code)


def _message(exc: errors.ScopegateError) -> str:
    missing = None if isinstance(exc, errors.MissingExtraError) else missing_extra(exc)
    return f"{exc}; {errors.install_hint(missing.extra)}" if missing else str(exc)


def _guarded(ctx: click.Context, invoke: Callable[[click.Context], Any]) -> Any:
    """Run a command: an expected failure is reported here, in one line, and ends it with its exit code."""
    try:
        return invoke(ctx)
    except BrokenPipeError:
        _stdout_to_devnull()
        raise click.exceptions.Exit(ExitCode.PIPE_CLOSED) from None
    except errors.ScopegateError as exc:
        _fail(ctx, _message(exc), exit_code_for(exc))
    except ModuleNotFoundError as exc:
        missing = missing_extra(exc)
        if missing is None:
            raise
        _fail(ctx, str(missing), ExitCode.UNAVAILABLE)
    except OSError as exc:  # a file or folder the command writes: permissions, full disk
        _fail(ctx, str(exc), ExitCode.FAILURE)


class _Formatter(click.HelpFormatter):
    def write_usage(self, prog: str, args: str = "", prefix: str | None = None) -> None:
        super().write_usage(prog, args, "usage: " if prefix is None else prefix)


class Context(click.Context):
    formatter_class = _Formatter


class Command(click.Command):
    """A scopegate command: library errors become one-line reports with the exit code of the table above."""

    context_class = Context

    def invoke(self, ctx: click.Context) -> Any:
        return _guarded(ctx, super().invoke)


class Group(click.Group):
    """A group whose commands and subgroups are scopegate commands."""

    context_class = Context
    command_class = Command
    group_class = type  # subgroups are Groups too

    def invoke(self, ctx: click.Context) -> Any:
        return _guarded(ctx, super().invoke)


CONTEXT_SETTINGS: dict[str, Any] = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


# -- running a command tree ----------------------------------------------------------------
def _report_usage(exc: click.UsageError, prog_name: str) -> None:
    if isinstance(exc, click.exceptions.NoArgsIsHelpError):
        exc.show()  # a group without its subcommand: its help, exit 2
        return
    where = exc.ctx.command_path if exc.ctx is not None else prog_name
    _say(f"{where}: error: {exc.format_message()}\nTry '{where} --help' for help.")


def run(command: click.Command, argv: Sequence[str] | None, *, prog_name: str) -> int:
    """Run ``command`` on ``argv`` (default ``sys.argv[1:]``) and return its exit code. Expected failures are
    reported on stderr in one line, never as a traceback."""
    try:
        try:
            args = list(argv) if argv is not None else None
            result = command.main(args=args, prog_name=prog_name, standalone_mode=False)
            code = int(result) if isinstance(result, int) else ExitCode.OK
        except click.UsageError as exc:
            _report_usage(exc, prog_name)
            code = exc.exit_code
        except click.ClickException as exc:
            _say(f"{prog_name}: error: {exc.format_message()}")
            code = exc.exit_code
        except (click.Abort, KeyboardInterrupt):
            _say(f"{prog_name}: interrupted")
            code = ExitCode.INTERRUPTED
        sys.stdout.flush()  # the last of the output: a closed pipe shows here too
        return int(code)
    except BrokenPipeError:
        _stdout_to_devnull()
        return int(ExitCode.PIPE_CLOSED)


# -- helpers for commands -------------------------------------------------------------------
def echo_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False))


@contextlib.contextmanager
def usage_errors(param_hint: str | None = None, *types: type[Exception]) -> Iterator[None]:
    """Report ``types`` (default: ConfigError) raised inside as a usage error (exit 2) about ``param_hint``.

    For library errors about a value the user typed: a spec or factory that does not load, an unknown tool.
    """
    caught = types or (errors.ConfigError,)
    try:
        yield
    except caught as exc:
        ctx = click.get_current_context(silent=True)
        if param_hint:
            raise click.BadParameter(str(exc), ctx=ctx, param_hint=f"'{param_hint}'") from exc
        raise click.UsageError(str(exc), ctx=ctx) from exc


def version() -> str:
    try:
        return metadata.version("scopegate")
    except metadata.PackageNotFoundError:
        from scopegate import __version__

        return __version__


def _show_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if value and not ctx.resilient_parsing:
        from scopegate.search.native import SNIPPET_PATH  # which snippet scanner runs: native or pure-python

        click.echo(f"scopegate {version()} (snippets: {SNIPPET_PATH})")
        ctx.exit()


version_option = click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_show_version,
    help="Print scopegate's version and exit.",
)


# -- option values parsed by the library -------------------------------------------------------
T = TypeVar("T")
Callback = Callable[[click.Context, click.Parameter, Any], Any]


def parsed_by(parse: Callable[[str], T]) -> Callback:
    """A click callback: the option's text through ``parse``; its errors become click's 'Invalid value' (exit 2)."""

    def callback(ctx: click.Context, param: click.Parameter, value: str | None) -> T | None:
        if value is None:
            return None
        try:
            return parse(value)
        except (errors.ScopegateError, ValueError) as exc:
            raise click.BadParameter(str(exc), ctx=ctx, param=param) from exc

    return callback


def window_or_all(text: str) -> timedelta | None:
    """``15m``, ``1h``, ``7d``, or ``all`` (None)."""
    from scopegate.guard.logfile import parse_duration

    return None if text.lower() == "all" else parse_duration(text)


def time_or_ago(text: str) -> datetime:
    """ISO 8601, or a duration ago such as ``2h``."""
    from scopegate.guard.logfile import parse_time

    return parse_time(text)


_OFF = frozenset({"none", "off", "-"})


def float_or_off(text: str) -> float | None:
    """A number, or ``none``/``off``/``-`` for 'not checked'."""
    return None if text.lower() in _OFF else float(text)


def int_or_off(text: str) -> int | None:
    """A whole number, or ``none``/``off``/``-`` for 'not checked'."""
    return None if text.lower() in _OFF else int(text)


def key_value_pairs(ctx: click.Context, param: click.Parameter, values: Sequence[str]) -> dict[str, str]:
    """A click callback: ``NAME=VALUE`` options (repeatable) as a dict; the last one of a name wins."""
    out: dict[str, str] = {}
    for pair in values:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise click.BadParameter(f"{pair!r} must look like NAME=VALUE", ctx=ctx, param=param)
        out[name] = value
    return out


# Files and folders the command reads: click checks they exist (exit 2 when not).
def existing_file() -> click.Path:
    return click.Path(exists=True, dir_okay=False, readable=True)


def existing_dir() -> click.Path:
    return click.Path(exists=True, file_okay=False)


def undocumented(command: click.Command) -> list[str]:
    """What lacks help text in ``command``: the command itself, an option, or an argument its help does not name
    (click arguments have no help of their own). Empty when all is documented; the tests check every command."""
    problems = [] if command.help else [f"{command.name}: no help text"]
    for param in command.params:
        if isinstance(param, click.Option):
            if not param.help:
                problems.append(f"{command.name} {'/'.join(param.opts)}: no help text")
        elif param.human_readable_name not in (command.help or ""):
            problems.append(f"{command.name}: the help text does not describe {param.human_readable_name}")
    return problems
