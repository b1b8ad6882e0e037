from __future__ import annotations

from typing import Any

import pytest

from scopegate.scope import Scope, ScopeKeys, ScopeMissing, canonical_id, document_key, id_problem, read_scope


def test_reads_tenant_groups_user() -> None:
    keys = ScopeKeys(tenant="t", groups="g", user="u")
    scope = read_scope({"t": "acme", "g": ["b", "a", "a"], "u": "42"}, keys)
    assert scope == Scope("acme", ("a", "b"), "42")


@pytest.mark.parametrize(
    "state",
    [
        {},
        {"tenant_id": None},
        {"tenant_id": ""},
        {"tenant_id": "  "},
        {"tenant_id": 5},
        {"tenant_id": ["a"]},
        {"tenant_id": "a\x00b"},
        {"tenant_id": "x" * 300},
    ],
)
def test_missing_or_blank_tenant(state: dict[str, Any]) -> None:
    with pytest.raises(ScopeMissing):
        read_scope(state, ScopeKeys())


def test_groups_required_when_asked() -> None:
    keys = ScopeKeys(groups="g")
    with pytest.raises(ScopeMissing):
        read_scope({"tenant_id": "a"}, keys, require_groups=True)
    with pytest.raises(ScopeMissing):
        read_scope({"tenant_id": "a", "g": []}, keys, require_groups=True)
    with pytest.raises(ScopeMissing):
        read_scope({"tenant_id": "a", "g": "admin"}, keys)


# -- the identity rule (issue 12): refused, never normalised into another tenant -----------------
NOT_CANONICAL = [
    "acme ",  # trailing space: wave 1 stripped it and handed out acme's scope
    " acme",
    "acme\t",
    "\u00a0acme",  # no-break space
    "acme\u3000",  # ideographic space
    "ac\u200bme",  # zero-width space (Cf)
    "acme\u200e",  # left-to-right mark (Cf)
    "\ufeffacme",  # byte-order mark (Cf)
    "ac\x00me",
    "ac\nme",
    "ac\u2028me",  # line separator
    "ac\ud800me",  # lone surrogate
    "e\u0301cole",  # decomposed: NFD, not NFC
    "x" * 257,
    "",
]


@pytest.mark.parametrize("value", NOT_CANONICAL)
def test_non_canonical_ids_are_refused_everywhere_they_enter(value: str) -> None:
    assert id_problem(value, "tenant") is not None
    with pytest.raises(ScopeMissing):
        canonical_id(value, "tenant")
    with pytest.raises(ScopeMissing):
        read_scope({"tenant_id": value}, ScopeKeys())
    with pytest.raises(ScopeMissing):
        read_scope({"tenant_id": "acme", "g": ["sales", value]}, ScopeKeys(groups="g"))
    with pytest.raises(ScopeMissing):
        read_scope({"tenant_id": "acme", "u": value}, ScopeKeys(user="u"))


@pytest.mark.parametrize("value", ["acme", "Acme", "ACME", "acme corp", "\u00e9cole", "x" * 256, "t\u00a0x", "北京"])
def test_canonical_ids_are_kept_exactly(value: str) -> None:
    assert canonical_id(value) == value
    assert read_scope({"tenant_id": value}, ScopeKeys()).tenant_id == value


def test_ids_are_case_sensitive_and_never_folded() -> None:
    assert read_scope({"tenant_id": "Acme"}, ScopeKeys()) != read_scope({"tenant_id": "acme"}, ScopeKeys())


def test_document_keys_are_unique_per_tenant_and_unambiguous() -> None:
    assert document_key("acme", "INV-1") != document_key("globex", "INV-1")
    assert document_key("a/b", "c") != document_key("a", "b/c")
    assert document_key("1:a", "b") != document_key("1", "a/b")
    long_key = document_key("t" * 256, "i" * 300)
    assert long_key.startswith("h:") and len(long_key.encode()) <= 512
    assert document_key("acme", "INV-1") == "4:acme/INV-1"
