"""Verified claims -> :class:`Identity` and granted scopes (pure functions).

The claim names come from the config (:class:`scopegate.config.model.ClaimMap`):
``tenant``, ``user`` (default ``sub``) and ``groups``; dots reach nested
claims (``org.id``), and an exact key with dots wins over nesting. Scopes come
from one claim, ``scope`` by default: a space-separated string (RFC 8693,
RFC 9068, RFC 7662) or a list (``scp`` in some providers).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from scopegate.errors import IdentityError
from scopegate.identity.model import Identity
from scopegate.scope import MAX_GROUPS

if TYPE_CHECKING:  # config types only: the identity room does not import the config at run time
    from scopegate.config.model import ClaimMap

MAX_SCOPES = 256
MAX_SCOPE_CHARS = 256


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
    """The identity the claims name; :class:`IdentityError` when they name none (no or a malformed tenant)."""
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


def scopes_from_claims(claims: Mapping[str, Any], name: str = "scope") -> frozenset[str]:
    """The granted scopes: a space-separated string or a list of strings; anything else grants none."""
    raw = claim(claims, name)
    if isinstance(raw, str):
        items: list[Any] = raw.split()
    elif isinstance(raw, list):
        items = raw
    else:
        return frozenset()
    if len(items) > MAX_SCOPES:
        raise IdentityError(f"the {name!r} claim names more than {MAX_SCOPES} scopes")
    return frozenset(
        s for s in items if isinstance(s, str) and 0 < len(s) <= MAX_SCOPE_CHARS and s.isprintable() and " " not in s
    )


def audiences(claims: Mapping[str, Any]) -> tuple[str, ...]:
    """``aud`` as a tuple (a string or a list of strings)."""
    raw = claims.get("aud")
    if isinstance(raw, str):
        return (raw,)
    if isinstance(raw, list):
        return tuple(a for a in raw if isinstance(a, str))
    return ()
