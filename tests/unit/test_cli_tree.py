"""The ``scopegate`` command tree: help everywhere, --version, and the exit-code table (pure parts)."""

from __future__ import annotations

import importlib
import json
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path

import click
import pytest

import scopegate
from scopegate.cli import cli, main
from scopegate.cli.core import ExitCode, exit_code_for, exit_code_for_result, undocumented
from scopegate.errors import (
    BackendError,
    ConfigError,
    EngineNodeError,
    MissingExtraError,
    MissingIndexError,
    ScopegateError,
    tool_error,
)
from scopegate.extras import missing_extra
from scopegate.search.native import SNIPPET_PATH


def walk(command: click.Command, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], click.Command]]:
    yield path, command
    if isinstance(command, click.Group):
        ctx = click.Context(command)
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            assert sub is not None, name
            yield from walk(sub, (*path, name))


COMMANDS = list(walk(cli))


def test_the_tree_has_every_command() -> None:
    paths = {" ".join(p) for p, _ in COMMANDS}
    expected = {"demo", "ingest", "search", "get", "spec", "check", "serve", "replay", "stats", "dashboard"}
    expected |= {"openapi inventory", "openapi declarations"}
    expected |= {
        f"engine {e} {c}" for e in ("opensearch", "elasticsearch") for c in ("start", "stop", "status", "url", "build")
    }
    assert expected <= paths
    assert len(COMMANDS) == len(paths)  # no command reached twice


@pytest.mark.parametrize("path,command", COMMANDS, ids=[" ".join(p) or "scopegate" for p, _ in COMMANDS])
def test_every_command_and_option_has_help(
    path: tuple[str, ...], command: click.Command, capsys: pytest.CaptureFixture[str]
) -> None:
    assert undocumented(command) == []
    if path:
        assert command.get_short_help_str(), f"{path} has no short help"
    for flag in ("--help", "-h"):
        assert main([*path, flag]) == ExitCode.OK
        out = capsys.readouterr().out
        assert out.startswith(f"usage: scopegate {' '.join(path)}".rstrip()), out[:80]


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"scopegate {metadata.version('scopegate')} (snippets: {SNIPPET_PATH})\n"


def test_version_without_package_metadata(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    def absent(name: str) -> str:
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "version", absent)
    monkeypatch.setattr(scopegate, "__version__", "9.8.7")
    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"scopegate 9.8.7 (snippets: {SNIPPET_PATH})\n"


def test_exit_codes_of_library_errors() -> None:
    assert exit_code_for(ScopegateError("x")) == ExitCode.FAILURE == 1
    assert exit_code_for(ConfigError("x")) == ExitCode.FAILURE
    assert exit_code_for(MissingIndexError("idx")) == ExitCode.NOT_FOUND == 3
    assert exit_code_for(MissingExtraError("mcp", "mcp")) == ExitCode.UNAVAILABLE == 4
    assert exit_code_for(EngineNodeError("no java")) == ExitCode.UNAVAILABLE
    assert exit_code_for(BackendError("down")) == ExitCode.UNAVAILABLE
    assert exit_code_for(BackendError("bad mapping", retryable=False)) == ExitCode.FAILURE
    assert (ExitCode.USAGE, ExitCode.INTERRUPTED, ExitCode.PIPE_CLOSED) == (2, 130, 141)


def test_exit_codes_of_tool_results() -> None:
    assert exit_code_for_result({"status": "ok", "results": []}) == ExitCode.OK
    for code in ("BAD_QUERY", "BAD_FILTER", "BAD_PAGE", "BAD_ARGUMENTS", "NO_SCOPE", "NOT_FOUND"):
        assert exit_code_for_result(tool_error(code, "m")) == ExitCode.USAGE, code
    assert exit_code_for_result(tool_error("SEARCH_UNAVAILABLE", "m", retryable=True)) == ExitCode.UNAVAILABLE
    assert exit_code_for_result(tool_error("INDEX_MISSING", "m")) == ExitCode.NOT_FOUND
    assert exit_code_for_result(tool_error("INTERNAL", "m")) == ExitCode.FAILURE


def test_a_library_error_caused_by_a_missing_extra_exits_4_naming_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """E.g. the config builder's FeatureUnavailable for an OpenSearch backend without opensearch-py."""
    from scopegate.search import spec_file

    def unavailable(spec: object) -> dict[str, object]:
        try:
            raise ModuleNotFoundError("No module named 'opensearchpy'", name="opensearchpy")
        except ModuleNotFoundError as exc:
            raise ConfigError("OpenSearch backends are not available in this installation") from exc

    monkeypatch.setattr(spec_file, "spec_declarations", unavailable)
    assert main(["spec"]) == ExitCode.UNAVAILABLE
    assert capsys.readouterr().err == (
        "scopegate spec: error: OpenSearch backends are not available in this installation; "
        "pip install 'scopegate[opensearch]'\n"
    )


def test_missing_extra_names_the_extra() -> None:
    err = missing_extra(ModuleNotFoundError("No module named 'mcp'", name="mcp.server"))
    assert err is not None and err.extra == "mcp" and "pip install 'scopegate[mcp]'" in str(err)
    assert missing_extra(ModuleNotFoundError("No module named 'opensearchpy'", name="opensearchpy")) is not None
    assert missing_extra(ModuleNotFoundError("No module named 'nothing_of_ours'", name="nothing_of_ours")) is None


@pytest.mark.parametrize(
    "argv",
    [
        ["no-such-command"],
        ["search", "--no-such-option"],
        ["search", "/definitely/not/here", "q", "--tenant", "t"],  # a named folder that does not exist
        ["search", ".", "q"],  # --tenant is required
        ["stats", "log.jsonl", "--buckets", "0"],
        ["openapi", "declarations", "spec.yaml"],  # no --allow or --include
        ["check"],  # neither CONFIG nor --schema
        ["replay", "log.jsonl", "--since", "yesterday-ish"],
    ],
)
def test_usage_errors_exit_2_with_one_line(
    argv: list[str], capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "log.jsonl").write_text(json.dumps({"event": "call"}) + "\n")
    assert main(argv) == ExitCode.USAGE
    out, err = capsys.readouterr()
    assert out == ""
    first, hint = err.splitlines()
    assert first.startswith("scopegate") and ": error: " in first
    assert hint.startswith("Try 'scopegate") and hint.endswith("--help' for help.")
    assert "Traceback" not in err


def test_a_group_without_its_command_shows_its_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["openapi"]) == ExitCode.USAGE
    assert "usage: scopegate openapi" in capsys.readouterr().err


def test_library_failure_is_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """A ScopegateError from a command: `<command>: error: <message>`, exit 1, no traceback."""
    bad = tmp_path / "spec.json"
    bad.write_text(json.dumps({"name": "s", "description": "d", "text_fields": []}))
    assert main(["spec", "--spec", str(bad)]) == ExitCode.USAGE  # a --spec that does not load is a bad argument
    err = capsys.readouterr().err
    assert "scopegate spec: error: Invalid value for '--spec':" in err and "at least one text field" in err
    config = tmp_path / "c.yaml"
    config.write_text("search_tools: 3\n")
    assert main(["check", str(config)]) == ExitCode.FAILURE
    err = capsys.readouterr().err
    assert err.startswith("scopegate check: error: ") and "Traceback" not in err


def test_interrupt_exits_130(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from scopegate.search import spec_file

    def interrupted(spec: object) -> dict[str, object]:
        raise KeyboardInterrupt

    monkeypatch.setattr(spec_file, "spec_declarations", interrupted)
    assert main(["spec"]) == ExitCode.INTERRUPTED
    assert capsys.readouterr().err.strip().endswith("scopegate: interrupted")


def test_engine_url_without_a_node_exits_4(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for engine in ("opensearch", "elasticsearch"):
        assert main(["engine", engine, "url", "--state-dir", str(tmp_path / engine)]) == ExitCode.UNAVAILABLE
        assert capsys.readouterr().err == f"scopegate engine {engine} url: error: no running node\n"
        assert main(["engine", engine, "status", "--state-dir", str(tmp_path / engine)]) == ExitCode.FAILURE
        assert "running=False" in capsys.readouterr().out


def test_undocumented_finds_what_lacks_help() -> None:
    @click.command()
    @click.argument("thing")
    @click.option("--loud", is_flag=True)
    def bare(thing: str, loud: bool) -> None:
        pass

    assert undocumented(bare) == [
        "bare: no help text",
        "bare: the help text does not describe THING",
        "bare --loud: no help text",
    ]


def test_the_root_lists_each_command_with_its_own_short_help() -> None:
    """The root's help comes from scopegate.cli.COMMANDS without importing the commands; it must say what
    each command says of itself."""
    from scopegate.cli import COMMANDS as LISTED

    modules = {m for m, _a, _h in LISTED.values()}
    declared = {c.name for m in modules for c in getattr(importlib.import_module(m), "COMMANDS", ())}
    assert declared <= set(LISTED), f"commands missing from scopegate.cli.COMMANDS: {declared - set(LISTED)}"
    for name, (_module, _attribute, listed_help) in LISTED.items():
        command = cli.get_command(click.Context(cli), name)
        assert command is not None and command.name == name
        assert command.get_short_help_str(limit=200) == listed_help, name


def test_version_and_help_import_no_command_module() -> None:
    """`scopegate --version` and `scopegate --help` stay cheap: no command module, no engine, no pydantic."""
    import subprocess
    import sys

    code = (
        "import sys; from scopegate.cli import main; main(['--version']); main(['--help']);"
        "print(sorted(m for m in sys.modules if m.startswith(('scopegate.cli.', 'pydantic', 'tantivy', 'google'))))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip().splitlines()[-1] == "['scopegate.cli.core']"
