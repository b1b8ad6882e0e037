"""Scope: who the caller is, read only from server-side session state.

Nothing a model sends reaches this module: tools call :func:`read_scope` with
the session state (ADK ``tool_context.state``, an MCP session's verified
identity) and the key names the application chose.

Two rules live here, once, for every backend and entry point:

* **The identity rule** (:func:`id_problem`, :func:`canonical_id`): what a
  tenant, group or user id may be. Ingest (embedded, OpenSearch,
  Elasticsearch) refuses a record whose tenant or group breaks it with a
  per-record error; :func:`read_scope` refuses such a session (``NO_SCOPE``);
  MCP identities and the command line use the same function. Ids are
  case-sensitive and must already be NFC: nothing is stripped or normalised.
* **Document identity** (:func:`document_key`): a document is ``(tenant, id)``.
  The same id in two tenants is two documents; the engine key every backend
  upserts and deletes by is derived from both.
"""

from __future__ import annotations

import hashlib
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from scopegate.errors import ScopeMissing

__all__ = [
    "MAX_GROUPS",
    "MAX_ID_LENGTH",
    "Scope",
    "ScopeKeys",
    "ScopeMissing",
    "canonical_id",
    "document_key",
    "id_problem",
    "read_scope",
    "scope_or_none",
    "state_for",
]

MAX_ID_LENGTH = 256
MAX_GROUPS = 256
# Cc control, Cf format (zero-width, bidi), Cs surrogates, Zl/Zp line and paragraph separators.
_FORBIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})


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


def id_problem(value: Any, what: str = "id") -> str | None:
    """Why ``value`` is not a canonical tenant, group or user id, or None when it is one.

    The one identity rule, applied identically wherever an id enters (ingest on
    every backend, session state, MCP identities, the command line):

    * a ``str`` of 1 to :data:`MAX_ID_LENGTH` characters (code points);
    * no leading or trailing whitespace (Unicode ``str.isspace``);
    * no control (Cc), format (Cf, e.g. zero-width space, bidi marks), surrogate
      (Cs) or line/paragraph separator (Zl, Zp) characters anywhere;
    * already in Unicode NFC.

    Ids are compared exactly as given, case-sensitively: ``Acme`` and ``acme`` are
    two tenants. Nothing is ever stripped, case-folded or normalised into
    another id: a value that breaks the rule is refused.
    """
    if not isinstance(value, str):
        return f"{what} is not a string"
    if not value:
        return f"{what} is empty"
    if len(value) > MAX_ID_LENGTH:
        return f"{what} is longer than {MAX_ID_LENGTH} characters"
    if value[0].isspace() or value[-1].isspace():
        return f"{what} {_shown(value)} has leading or trailing whitespace"
    for ch in value:
        if unicodedata.category(ch) in _FORBIDDEN_CATEGORIES:
            return f"{what} {_shown(value)} contains the control or format character U+{ord(ch):04X}"
    if not unicodedata.is_normalized("NFC", value):
        return f"{what} {_shown(value)} is not in Unicode NFC (normalise it where it is issued)"
    return None


def canonical_id(value: Any, what: str = "id") -> str:
    """``value`` if it follows the identity rule (:func:`id_problem`), else :class:`ScopeMissing`."""
    problem = id_problem(value, what)
    if problem is not None:
        raise ScopeMissing(problem)
    return str(value)


# Elasticsearch and OpenSearch refuse an ``_id`` longer than 512 bytes.
MAX_KEY_BYTES = 512


def document_key(tenant: str, doc_id: str) -> str:
    """The engine key of document ``doc_id`` of ``tenant``: unique per (tenant, id), never shared across tenants.

    ``<len(tenant)>:<tenant>/<doc_id>`` (the length prefix makes it unambiguous
    whatever the two contain), or ``h:`` + SHA-256 of that when it would exceed
    :data:`MAX_KEY_BYTES` (a readable key starts with a digit, so the two forms
    never collide).
    """
    readable = f"{len(tenant)}:{tenant}/{doc_id}"
    encoded = readable.encode("utf-8", "surrogatepass")
    if len(encoded) <= MAX_KEY_BYTES:
        return readable
    return "h:" + hashlib.sha256(encoded).hexdigest()


def _shown(value: str) -> str:
    """The id for a message: escaped, so the offending character is visible, and bounded."""
    text = ascii(value)
    return text if len(text) <= 80 else text[:77] + "..."


def read_scope(state: Mapping[str, Any], keys: ScopeKeys, *, require_groups: bool = False) -> Scope:
    """Build a Scope from session state, or raise ScopeMissing.

    Blank, missing or malformed values never fall back to a wider scope.
    """
    if keys.tenant not in state or state.get(keys.tenant) is None:
        raise ScopeMissing("no tenant in session state")
    tenant = canonical_id(state.get(keys.tenant), "tenant")
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
            groups = tuple(sorted({canonical_id(g, "group") for g in raw}))
            if require_groups and not groups:
                raise ScopeMissing("groups are empty")
    user = None
    if keys.user is not None and state.get(keys.user) is not None:
        user = canonical_id(state.get(keys.user), "user")
    return Scope(tenant_id=tenant, group_ids=groups, user_id=user)


def scope_or_none(state: Mapping[str, Any], keys: ScopeKeys, *, require_groups: bool = False) -> Scope | None:
    """:func:`read_scope`, or None where it would raise (what a tool's ``scope_of`` answers)."""
    try:
        return read_scope(state, keys, require_groups=require_groups)
    except ScopeMissing:
        return None


def state_for(scope: Scope, keys: ScopeKeys) -> dict[str, Any]:
    """Session state under ``keys`` that :func:`read_scope` turns back into ``scope``.

    Groups are written only when ``keys`` has a groups key, the user only when it has a user key.
    """
    state: dict[str, Any] = {keys.tenant: scope.tenant_id}
    if keys.groups is not None:
        state[keys.groups] = list(scope.group_ids)
    if keys.user is not None and scope.user_id is not None:
        state[keys.user] = scope.user_id
    return state
