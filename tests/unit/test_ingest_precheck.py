"""Issue 19: ingest pre-checks as pure functions (columns, constant tenant, unlisted filter values)."""

from __future__ import annotations

from pathlib import Path

import pytest

from scopegate.demo.corpus import ticket_spec
from scopegate.errors import ConfigError, IngestError
from scopegate.ingest.mapping import FieldMapping
from scopegate.ingest.precheck import check_columns, count_unlisted, precheck, source_columns


def test_required_columns_follow_the_mapping() -> None:
    spec = ticket_spec()
    assert FieldMapping.parse(["id=Key", "tenant=Project"]).required_columns(spec) == {
        "ticket_id": "Key",
        "tenant_id": "Project",
    }
    numbered = FieldMapping.parse(["id=@row", "subject=Summary"], tenant_value="acme")
    assert numbered.required_columns(spec) == {"subject": "Summary"}


def test_constant_tenant_is_written_and_conflicts_are_refused() -> None:
    spec = ticket_spec()
    mapping = FieldMapping.parse(["id=@row"], tenant_value="acme")
    out = list(mapping.apply(spec, [{"subject": "a", "tenant_id": "globex"}]))
    assert out == [{"subject": "a", "ticket_id": "1", "tenant_id": "acme"}]
    with pytest.raises(ConfigError, match="not both"):
        FieldMapping.parse(["tenant=Org"], tenant_value="acme")
    with pytest.raises(ConfigError, match="must not be empty"):
        FieldMapping.parse([], tenant_value=" ")


def test_missing_columns_named_with_the_columns_present() -> None:
    with pytest.raises(IngestError) as caught:
        check_columns(ticket_spec(), FieldMapping.parse(["id=Key"]), ["Ключ", "tenant_id"], "t.csv")
    assert "lacks the column(s) 'Key' (for ticket_id); its columns are: 'Ключ', 'tenant_id'" in str(caught.value)
    with pytest.raises(IngestError, match=r"none \(the file is empty\)"):
        check_columns(ticket_spec(), FieldMapping(), [], "empty.csv")


def test_source_columns_of_csv_with_bom_and_jsonl(tmp_path: Path) -> None:
    csv_file = tmp_path / "t.csv"
    csv_file.write_text("\ufeffKey,Summary\n1,x\n", "utf-8")
    assert source_columns(csv_file) == ("Key", "Summary")
    jsonl = tmp_path / "t.jsonl"
    jsonl.write_text('{"a": 1}\nnot json\n{"b": 2, "a": 3}\n', "utf-8")
    assert source_columns(jsonl) == ("a", "b")


def test_unlisted_values_counted_per_filter() -> None:
    records = [
        {"status": "open", "product": "payments"},
        {"status": "Resolved"},
        {"status": "Resolved", "product": "crypto"},
        {"status": ""},
    ]
    count, unlisted = count_unlisted(ticket_spec(), records)
    assert count == 4
    assert dict(unlisted["status"]) == {"Resolved": 2} and dict(unlisted["product"]) == {"crypto": 1}


def test_precheck_message(tmp_path: Path) -> None:
    source = tmp_path / "t.csv"
    source.write_text("ticket_id,tenant_id,status\n1,acme,In Progress\n2,acme,open\n", "utf-8")
    spec = ticket_spec()
    checked = precheck(spec, FieldMapping(), source)
    assert checked.records == 2 and checked.unlisted_summary() == {"status": {"In Progress": 1}}
    message = checked.unlisted_message(spec)
    assert message is not None and "1 record(s) have a status outside its allowed list" in message
