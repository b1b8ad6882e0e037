"""Selection: allowlists, rules, state-changing operations, missing and contradictory entries."""

from __future__ import annotations

from pathlib import Path

import pytest

from scopegate.errors import ConfigError
from scopegate.openapi.errors import MissingOperationsError, SelectionError
from scopegate.openapi.loader import load_document
from scopegate.openapi.model import OperationInfo
from scopegate.openapi.select import Rule, Selection, normalise_label, select_operations


@pytest.fixture(scope="module")
def infos(tickets_path: Path) -> tuple[OperationInfo, ...]:
    return load_document(tickets_path).infos()


def labels(chosen: tuple[OperationInfo, ...]) -> list[str]:
    return [i.label for i in chosen]


def test_allowlist_by_operation_id_and_method_path(infos: tuple[OperationInfo, ...]) -> None:
    chosen = select_operations(infos, Selection.build(allow=["getTicket", "get /no-id/{x}", "createTicket"]))
    # spec order, not allowlist order
    assert labels(chosen) == ["createTicket", "getTicket", "GET /no-id/{x}"]


def test_comma_separated_allow_entries(infos: tuple[OperationInfo, ...]) -> None:
    chosen = select_operations(infos, Selection.build(allow=["listTickets,getTicket"]))
    assert labels(chosen) == ["listTickets", "getTicket"]


def test_every_missing_operation_is_listed(infos: tuple[OperationInfo, ...]) -> None:
    with pytest.raises(MissingOperationsError) as exc:
        select_operations(infos, Selection.build(allow=["getTicket", "getTickets", "POST /nowhere", "renamedOp"]))
    err = exc.value
    assert err.missing == ("getTickets", "POST /nowhere", "renamedOp")
    assert isinstance(err, ConfigError)
    text = str(err)
    for label in err.missing:
        assert label in text
    assert "did you mean: getTicket" in text


def test_include_rules_never_select_state_changing(infos: tuple[OperationInfo, ...]) -> None:
    chosen = select_operations(infos, Selection.build(include=["/tickets/**", "/tickets"]))
    assert labels(chosen) == ["listTickets", "getTicket"]
    assert all(not i.state_changing for i in chosen)
    # ...unless named explicitly.
    chosen = select_operations(infos, Selection.build(allow=["deleteTicket"], include=["tag:tickets"]))
    assert labels(chosen) == ["listTickets", "getTicket", "deleteTicket"]


def test_exclude_rules_and_conflicts(infos: tuple[OperationInfo, ...]) -> None:
    chosen = select_operations(infos, Selection.build(include=["GET"], exclude=["/tickets/*"]))
    assert "getTicket" not in labels(chosen) and "listTickets" in labels(chosen)
    with pytest.raises(SelectionError, match="excluded by rule"):
        select_operations(infos, Selection.build(allow=["getTicket"], exclude=["tag:tickets"]))


def test_deprecated_only_by_name_or_flag(infos: tuple[OperationInfo, ...]) -> None:
    put_tree = next(i for i in infos if i.label == "putTree")
    assert put_tree.deprecated
    assert select_operations([put_tree], Selection.build(include=["tag:trees"])) == ()


def test_ambiguous_operation_id() -> None:
    dup = (
        OperationInfo("GET", "/a", "same"),
        OperationInfo("GET", "/b", "same"),
    )
    with pytest.raises(SelectionError, match="used by several operations"):
        select_operations(dup, Selection.build(allow=["same"]))
    assert labels(select_operations(dup, Selection.build(allow=["GET /b"]))) == ["same"]


@pytest.mark.parametrize(
    ("rule", "path", "method", "tags", "expected"),
    [
        ("/repos/*", "/repos/{owner}", "GET", (), True),
        ("/repos/*", "/repos/{owner}/{repo}", "GET", (), False),
        ("/repos/**", "/repos/{owner}/{repo}", "GET", (), True),
        ("GET,HEAD /x", "/x", "HEAD", (), True),
        ("POST /x", "/x", "GET", (), False),
        ("tag:a,b", "/x", "GET", ("b",), True),
        ("tag:a", "/x", "GET", ("c",), False),
        ("* /x.json", "/x.json", "GET", (), True),
        ("/x.json", "/xajson", "GET", (), False),
        # Tags with spaces (every Cloudflare tag has them) are quoted, alone or with a method
        ('tag:"DNS Records for a Zone"', "/x", "GET", ("DNS Records for a Zone",), True),
        ("GET 'tag:DNS Records for a Zone,Zone'", "/x", "GET", ("Zone",), True),
        ('tag:"DNS Records for a Zone"', "/x", "GET", ("DNS",), False),
    ],
)
def test_rule_matching(rule: str, path: str, method: str, tags: tuple[str, ...], expected: bool) -> None:
    assert Rule.parse(rule).matches(OperationInfo(method, path, None, tags)) is expected


@pytest.mark.parametrize("bad", ["", "FETCH /x", "/a /b", 'tag:"DNS Records', "tag:DNS Records"])
def test_bad_rules(bad: str) -> None:
    with pytest.raises(SelectionError):
        Rule.parse(bad)


def test_a_quoted_tag_rule_prints_as_it_parses() -> None:
    rule = Rule.parse('GET tag:"DNS Records for a Zone"')
    assert rule.tags == frozenset({"DNS Records for a Zone"})
    assert Rule.parse(str(rule)) == rule


def test_normalise_label() -> None:
    assert normalise_label("  get   /x ") == "GET /x"
    assert normalise_label("getX") == "getX"
    assert normalise_label("get x") == "get x"
