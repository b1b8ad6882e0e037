from __future__ import annotations

from typing import Any

import pytest

from scopegate.scope import Scope, ScopeKeys, ScopeMissing, read_scope


def test_reads_tenant_groups_user() -> None:
    keys = ScopeKeys(tenant="t", groups="g", user="u")
    scope = read_scope({"t": " acme ", "g": ["b", "a", "a"], "u": "42"}, keys)
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
