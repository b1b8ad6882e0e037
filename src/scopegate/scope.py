"""Scope: who the caller is, read only from server-side session state.

Nothing a model sends reaches this module: tools call :func:`read_scope` with
the session state (ADK ``tool_context.state``, an MCP session's verified
identity) and the key names the application chose.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

MAX_ID_LENGTH = 256
MAX_GROUPS = 256


@dataclass(frozen=True)
class ScopeKeys:
    """Names of the session-state keys that carry the caller's identity."""

    tenant: str = "tenant_id"
    groups: str | None = None
    user: str | None = None


@dataclass(frozen=True)
class Scope:
    tenant_id: str
    group_ids: tuple[str, ...] = ()
    user_id: str | None = None

    def cache_key(self) -> tuple[str, tuple[str, ...], str]:
        """An unambiguous key part: groups sorted, user included."""
        return (self.tenant_id, tuple(sorted(set(self.group_ids))), self.user_id or "")


class ScopeMissing(Exception):
    """Raised inside tools only; tools turn it into a NO_SCOPE envelope."""


def _clean_id(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise ScopeMissing(f"{what} is not a string")
    text = value.strip()
    if not text:
        raise ScopeMissing(f"{what} is blank")
    if len(text) > MAX_ID_LENGTH or any(ord(ch) < 32 for ch in text):
        raise ScopeMissing(f"{what} is not a valid identifier")
    return text


def read_scope(state: Mapping[str, Any], keys: ScopeKeys, *, require_groups: bool = False) -> Scope:
    """Build a Scope from session state, or raise ScopeMissing.

    Blank, missing or malformed values never fall back to a wider scope.
    """
    if keys.tenant not in state or state.get(keys.tenant) is None:
        raise ScopeMissing("no tenant in session state")
    tenant = _clean_id(state.get(keys.tenant), "tenant")
    groups: tuple[str, ...] = ()
    if keys.groups is not None:
        raw = state.get(keys.groups)
        if raw is None:
            if require_groups:
                raise ScopeMissing("no groups in session state")
        else:
            if isinstance(raw, str) or not isinstance(raw, (list, tuple, set, frozenset)):
                raise ScopeMissing("groups must be a list of ids")
            if len(raw) > MAX_GROUPS:
                raise ScopeMissing("too many groups")
            groups = tuple(sorted({_clean_id(g, "group") for g in raw}))
            if require_groups and not groups:
                raise ScopeMissing("groups are empty")
    user = None
    if keys.user is not None and state.get(keys.user) is not None:
        user = _clean_id(state.get(keys.user), "user")
    return Scope(tenant_id=tenant, group_ids=groups, user_id=user)
