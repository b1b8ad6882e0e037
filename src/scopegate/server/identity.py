"""Who a caller is, as the server verified it: tenant, user, groups.

An :class:`Identity` comes from a verified bearer token (HTTP) or from the
server's own config or environment (stdio). It is turned into session state
under the configured state keys; tools read their scope from that state and
from nothing else. Identities are validated with the same rules as
:func:`scopegate.scope.read_scope`, so a token that maps to a blank or
malformed tenant is refused at the door rather than at the first tool call.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from scopegate.config.model import ClaimMap, StdioScope
from scopegate.errors import ConfigError
from scopegate.scope import MAX_GROUPS, ScopeKeys, ScopeMissing, read_scope

ENV_TENANT = "SCOPEGATE_TENANT"
ENV_USER = "SCOPEGATE_USER"
ENV_GROUPS = "SCOPEGATE_GROUPS"
_CHECK_KEYS = ScopeKeys(tenant="tenant", groups="groups", user="user")


class IdentityError(ValueError):
    """Verified credentials do not name a usable identity (no tenant, malformed ids)."""


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
        out: dict[str, Any] = {keys.tenant: self.tenant}
        if keys.user is not None and self.user is not None:
            out[keys.user] = self.user
        if keys.groups is not None:
            out[keys.groups] = list(self.groups)
        return out

    def as_dict(self) -> dict[str, Any]:
        return {"tenant": self.tenant, "user": self.user, "groups": list(self.groups)}

    def principal(self) -> str:
        """A short, stable id of this exact identity (sessions and request state are bound to it)."""
        canonical = json.dumps(self.as_dict(), sort_keys=True, separators=(",", ":"), ensure_ascii=True)
        return "sg:" + hashlib.sha256(canonical.encode("ascii")).hexdigest()[:32]


def claim(claims: Mapping[str, Any], path: str) -> Any:
    """``claims["org"]["id"]`` for ``"org.id"``; an exact key with dots wins over nesting."""
    if path in claims:
        return claims[path]
    value: Any = claims
    for part in path.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return None
        value = value[part]
    return value


def identity_from_claims(claims: Mapping[str, Any], mapping: ClaimMap) -> Identity:
    tenant = claim(claims, mapping.tenant)
    if tenant is None:
        raise IdentityError(f"the token has no {mapping.tenant!r} claim")
    user = claim(claims, mapping.user) if mapping.user else None
    groups: Any = None
    if mapping.groups:
        raw = claim(claims, mapping.groups)
        if raw is not None:
            groups = [raw] if isinstance(raw, str) else raw
            if not isinstance(groups, list) or len(groups) > MAX_GROUPS:
                raise IdentityError("the groups claim must be a list of ids")
    return Identity.checked(tenant, user, groups)


def stdio_identity(cfg: StdioScope, environ: Mapping[str, str] | None = None) -> Identity:
    """The fixed identity of a stdio server: the config's ``stdio`` section, else the environment."""
    env = os.environ if environ is None else environ
    tenant = cfg.tenant or env.get(ENV_TENANT)
    if not tenant:
        raise ConfigError(
            f"the stdio transport serves one fixed identity: set stdio.tenant in the config or {ENV_TENANT} "
            "in the environment"
        )
    user = cfg.user or env.get(ENV_USER) or None
    groups: list[str] | None = list(cfg.groups) if cfg.groups is not None else None
    if groups is None and env.get(ENV_GROUPS):
        groups = [g.strip() for g in env[ENV_GROUPS].split(",") if g.strip()]
    try:
        return Identity.checked(tenant, user, groups)
    except IdentityError as exc:
        raise ConfigError(f"invalid stdio identity: {exc}") from exc
