"""Who a caller is, as the server verified it: tenant, user, groups.

An :class:`Identity` comes from a verified source: a bearer token (MCP over
HTTP, an ADK deployment behind authentication), a server-side lookup, a signed
session state, or the server's own config (stdio). It is turned into session
state under the configured scope keys; tools read their scope from that state
and from nothing else. Identities are validated with the same rules as
:func:`scopegate.scope.read_scope`, so a source that maps to a blank or
malformed tenant is refused where it is verified rather than at the first tool
call.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from scopegate.errors import IdentityError
from scopegate.scope import Scope, ScopeKeys, ScopeMissing, read_scope, state_for

__all__ = ["Identity"]

_CHECK_KEYS = ScopeKeys(tenant="tenant", groups="groups", user="user")


@dataclass(frozen=True)
class Identity:
    tenant: str
    user: str | None = None
    groups: tuple[str, ...] = ()

    @classmethod
    def checked(cls, tenant: Any, user: Any = None, groups: Any = None) -> Identity:
        """Validate with the scope rules; raises :class:`IdentityError`."""
        state: dict[str, Any] = {"tenant": tenant, "user": user}
        if groups is not None:
            state["groups"] = list(groups) if isinstance(groups, (list, tuple)) else groups
        try:
            scope = read_scope(state, _CHECK_KEYS)
        except ScopeMissing as exc:
            raise IdentityError(str(exc)) from exc
        return cls(tenant=scope.tenant_id, user=scope.user_id, groups=scope.group_ids)

    def state(self, keys: ScopeKeys) -> dict[str, Any]:
        """Session state for the tools: only the scope, under the configured keys."""
        return state_for(Scope(self.tenant, self.groups, self.user), keys)

    def as_dict(self) -> dict[str, Any]:
        return {"tenant": self.tenant, "user": self.user, "groups": list(self.groups)}

    def principal(self) -> str:
        """A short, stable id of this exact identity (sessions and request state are bound to it)."""
        canonical = json.dumps(self.as_dict(), sort_keys=True, separators=(",", ":"), ensure_ascii=True)
        return "sg:" + hashlib.sha256(canonical.encode("ascii")).hexdigest()[:32]
