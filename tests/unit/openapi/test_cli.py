"""`scopegate openapi declarations|inventory`: output, contract check and failure paths."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import click
import pytest

from scopegate.cli import cli, main
from scopegate.cli.core import ExitCode, undocumented

from .conftest import SNAPSHOTS

EXIT_OK, EXIT_DIFF, EXIT_CONFIG = ExitCode.OK, ExitCode.FAILURE, ExitCode.USAGE


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_every_command_and_option_has_help() -> None:
    group = cli.commands["openapi"]
    assert isinstance(group, click.Group)
    assert group.get_short_help_str()
    assert set(group.commands) == {"declarations", "inventory"}
    for name, command in group.commands.items():
        assert command.short_help, name
        assert undocumented(command) == [], name


def test_declarations_are_stable_sorted_json(tickets_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["openapi", "declarations", str(tickets_path), "--allow", "getTicket,listTickets", "--prefix", "tk_"]
    code, out, _ = run(argv, capsys)
    assert code == EXIT_OK
    doc = json.loads(out)
    assert [t["name"] for t in doc["tools"]] == ["tk_getTicket", "tk_listTickets"]
    assert out == json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    assert run(argv, capsys)[1] == out


@pytest.mark.parametrize("form", ["jsonschema", "function"])
def test_other_output_forms(form: str, tickets_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["openapi", "declarations", str(tickets_path), "--allow", "getTicket", "--form", form], capsys)
    assert code == EXIT_OK
    data = json.loads(out)
    if form == "jsonschema":
        assert data["getTicket"]["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    else:
        assert data[0]["name"] == "getTicket" and "parameters_json_schema" in data[0]


def test_checked_in_snapshot_matches(tickets_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The reviewed contract for the synthetic spec. Regenerate with --write after a reviewed change."""
    snapshot = SNAPSHOTS / "tickets.declarations.json"
    code, out, err = run(
        [
            "openapi",
            "declarations",
            str(tickets_path),
            "--allow",
            "listTickets,createTicket,addContact,updateTicket",
            "--check",
            str(snapshot),
        ],
        capsys,
    )
    assert code == EXIT_OK, err
    assert "4 declaration(s) match" in out


def test_check_reports_a_changed_parameter(
    tmp_path: Path, tickets_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "tickets.yaml"
    shutil.copy(tickets_path, spec)
    snapshot = tmp_path / "snap.json"
    code, _, _ = run(["openapi", "declarations", str(spec), "--allow", "listTickets", "--write", str(snapshot)], capsys)
    assert code == EXIT_OK and snapshot.is_file()
    assert (
        run(["openapi", "declarations", str(spec), "--allow", "listTickets", "--check", str(snapshot)], capsys)[0] == 0
    )

    text = spec.read_text("utf-8").replace("enum: [open, closed]", "enum: [open, closed, archived]")
    text = text.replace("- name: status", "- name: state")
    spec.write_text(text, "utf-8")
    code, _, err = run(
        ["openapi", "declarations", str(spec), "--allow", "listTickets", "--check", str(snapshot)], capsys
    )
    assert code == EXIT_DIFF
    assert "listTickets: argument removed: status" in err
    assert "listTickets: argument added: state" in err
    assert re.search(r'^-\s+"status": \{', err, re.M) and re.search(r'^\+\s+"state": \{', err, re.M)  # the diff


def test_check_reports_a_removed_tool(tmp_path: Path, tickets_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    snapshot = tmp_path / "snap.json"
    run(
        ["openapi", "declarations", str(tickets_path), "--allow", "listTickets,getTicket", "--write", str(snapshot)],
        capsys,
    )
    code, _, err = run(
        ["openapi", "declarations", str(tickets_path), "--allow", "listTickets", "--check", str(snapshot)], capsys
    )
    assert code == EXIT_DIFF
    assert "tool removed: getTicket (getTicket)" in err


def test_missing_operations_fail_listing_all(tickets_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(
        ["openapi", "declarations", str(tickets_path), "--allow", "getTicket,gone1", "--allow", "DELETE /nope"], capsys
    )
    assert code == EXIT_CONFIG and out == ""
    assert "2 allowlisted operation(s) not found" in err
    assert "gone1" in err and "DELETE /nope" in err
    assert "Traceback" not in err


def test_bad_spec_fails_cleanly(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("openapi: 3.0.0\npaths: {\n", "utf-8")
    code, _, err = run(["openapi", "declarations", str(bad), "--allow", "x"], capsys)
    assert code == EXIT_CONFIG and "not valid JSON or YAML" in err
    code, _, err = run(["openapi", "inventory", str(tmp_path / "absent.json")], capsys)
    assert code == EXIT_CONFIG and "cannot read spec" in err


def test_unresolvable_ref_fails_for_declarations_and_shows_in_inventory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = {
        "openapi": "3.0.0",
        "info": {"title": "t", "version": "1"},
        "paths": {
            "/ok": {"get": {"operationId": "ok", "responses": {}}},
            "/bad": {
                "post": {
                    "operationId": "bad",
                    "requestBody": {"$ref": "#/components/requestBodies/Gone"},
                    "responses": {},
                }
            },
        },
    }
    path = tmp_path / "s.json"
    path.write_text(json.dumps(spec), "utf-8")
    code, _, err = run(["openapi", "declarations", str(path), "--allow", "ok,bad"], capsys)
    assert code == EXIT_CONFIG and "#/components/requestBodies/Gone" in err and "(in bad)" in err
    code, out, _ = run(["openapi", "inventory", str(path)], capsys)
    assert code == EXIT_OK
    lines = out.splitlines()
    assert lines[0].split() == ["METHOD", "PATH", "OPERATION_ID", "STATE_CHANGING", "TRANSLATABLE"]
    assert lines[1].split() == ["GET", "/ok", "ok", "no", "yes"]
    assert lines[2].startswith("POST") and "no: cannot resolve $ref '#/components/requestBodies/Gone'" in lines[2]
    assert lines[-1] == "2 operation(s), 1 translatable, 1 state-changing"


def test_cycle_is_translated_and_inventoried(tickets_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["openapi", "declarations", str(tickets_path), "--allow", "putTree"], capsys)
    assert code == EXIT_OK
    tool = json.loads(out)["tools"][0]
    assert "Recursive schema Node" in json.dumps(tool["parameters"])
    code, out, _ = run(["openapi", "inventory", str(tickets_path), "--format", "json"], capsys)
    rows = {r["operation_id"] or f"{r['method']} {r['path']}": r for r in json.loads(out)["operations"]}
    assert rows["putTree"]["translatable"] and rows["putTree"]["state_changing"] and rows["putTree"]["deprecated"]
    assert rows["GET /no-id/{x}"]["tool"] == "get_no_id_x"
    assert all(r["translatable"] for r in rows.values())


def test_declarations_need_a_selection(tickets_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(["openapi", "declarations", str(tickets_path)], capsys)
    assert code == EXIT_CONFIG and "--allow" in err


def test_include_rules_from_the_command_line(tickets_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["openapi", "declarations", str(tickets_path), "--include", "tag:tickets"], capsys)
    assert code == EXIT_OK
    assert [t["operation"] for t in json.loads(out)["tools"]] == ["getTicket", "listTickets"]


def test_external_refs_flag(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "common.yaml").write_text("Id: {type: string, description: shared id}\n", "utf-8")
    spec = {
        "openapi": "3.0.0",
        "info": {"title": "t", "version": "1"},
        "paths": {
            "/a/{id}": {
                "get": {
                    "operationId": "a",
                    "parameters": [
                        {"name": "id", "in": "path", "required": True, "schema": {"$ref": "common.yaml#/Id"}}
                    ],
                    "responses": {},
                }
            }
        },
    }
    path = tmp_path / "s.json"
    path.write_text(json.dumps(spec), "utf-8")
    code, _, err = run(["openapi", "declarations", str(path), "--allow", "a"], capsys)
    assert code == EXIT_CONFIG and "common.yaml#/Id" in err
    code, out, _ = run(["openapi", "declarations", str(path), "--allow", "a", "--allow-external-refs"], capsys)
    assert code == EXIT_OK
    assert json.loads(out)["tools"][0]["parameters"]["properties"]["id"]["description"] == "shared id"
