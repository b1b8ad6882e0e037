"""What verifying a bearer token yields: a :class:`VerifiedToken`, or a short refusal reason.

Reasons are short, fixed strings (metrics labels, logs, the ``error_description``
of a 401); they never contain the token. ``unavailable`` is special: the
provider could not be asked (JWKS or introspection endpoint down), so the
token is neither valid nor known to be invalid, and the server answers 503
rather than telling the client to discard its token.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol
from urllib.parse import urlsplit, urlunsplit

from scopegate.context import SubjectToken
from scopegate.errors import IdentityError
from scopegate.identity.claims import audiences, identity_from_claims, scopes_from_claims
from scopegate.identity.model import Identity

if TYPE_CHECKING:
    from scopegate.config.model import ClaimMap

Kind = Literal["jwt", "introspection", "table"]

# reason -> what a client is told (RFC 6750 error_description)
REASONS: Mapping[str, str] = {
    "missing": "Authentication required",
    "malformed": "The access token is malformed",
    "too_long": "The access token is too long",
    "unknown_token": "The access token is not known",
    "token_too_short": "The access token is too short: tokens are 16 to 4096 characters",
    "expired": "The access token expired",
    "not_yet_valid": "The access token is not valid yet",
    "too_old": "The access token is too old",
    "bad_signature": "The access token signature is invalid",
    "bad_algorithm": "The access token uses an algorithm this server does not accept",
    "unknown_key": "The access token was signed with an unknown key",
    "bad_issuer": "The access token was issued by an issuer this server does not trust",
    "bad_audience": "The access token was not issued for this server",
    "missing_claim": "The access token lacks a required claim",
    "no_identity": "The access token does not name a tenant",
    "inactive": "The access token is not active",
    "unavailable": "The authorization server could not be reached to check the access token",
    "key_pending": "The access token's signing key is not known yet; retry shortly",
    "token_in_query": "Access tokens are accepted in the Authorization header only, never in the URI",
}
# Reasons that mean "cannot tell now" (HTTP 503 with Retry-After), not "invalid" (401).
RETRY_REASONS = frozenset({"unavailable", "key_pending"})
# Reasons that are a malformed request rather than a bad token (HTTP 400 invalid_request, RFC 6750 §3.1).
REQUEST_REASONS = frozenset({"token_in_query"})


@dataclass(frozen=True)
class VerifiedToken:
    """A token this server accepted: who it names, what it grants, until when."""

    identity: Identity
    kind: Kind
    scopes: frozenset[str] = frozenset()
    subject: str | None = None
    issuer: str | None = None
    audience: tuple[str, ...] = ()
    client_id: str | None = None
    expires_at: float | None = None
    # The presented token itself (masked repr), for token exchange; never logged or passed downstream.
    token: SubjectToken | None = field(default=None, repr=False, compare=False)

    def subject_token(self, raw: str) -> SubjectToken:
        """The :class:`SubjectToken` of ``raw`` carrying this verification."""
        return SubjectToken(
            raw,
            tenant=self.identity.tenant,
            user=self.identity.user,
            subject=self.subject or self.identity.user,
            issuer=self.issuer,
            expires_at=self.expires_at,
            scopes=self.scopes,
        )


@dataclass(frozen=True)
class Verification:
    """``token`` when accepted (``reason == "ok"``), else None and the refusal reason."""

    token: VerifiedToken | None
    reason: str = "ok"
    claims: Mapping[str, Any] | None = field(default=None, repr=False)
    retry_after: float | None = None  # for RETRY_REASONS: when asking again may help, in seconds

    @property
    def ok(self) -> bool:
        return self.token is not None

    @classmethod
    def refused(cls, reason: str, retry_after: float | None = None) -> Verification:
        return cls(None, reason, retry_after=retry_after)


def accepted(
    claims: Mapping[str, Any], kind: Kind, mapping: ClaimMap, scope_claim: str, *, issuer: str | None = None
) -> Verification:
    """The verification of checked claims (signature or introspection done): their identity and scopes."""
    try:
        identity = identity_from_claims(claims, mapping)
        scopes = scopes_from_claims(claims, scope_claim)
    except IdentityError:
        return Verification.refused("no_identity")
    exp, subject = claims.get("exp"), claims.get("sub")
    client = claims.get("azp") or claims.get("client_id")
    iss = claims.get("iss")
    verified = VerifiedToken(
        identity=identity,
        kind=kind,
        scopes=scopes,
        subject=str(subject) if subject is not None else None,
        issuer=str(iss) if iss is not None else issuer,
        audience=audiences(claims),
        client_id=str(client) if client is not None else None,
        expires_at=float(exp) if isinstance(exp, (int, float)) else None,
    )
    return Verification(verified, "ok", claims)


class TokenCheck(Protocol):
    """One way of verifying a token: a JWT verifier, an introspection client, a token table."""

    async def check(self, token: str) -> Verification | None:
        """The verdict, or None when this check does not apply to ``token`` (the next one is asked)."""
        ...


class AcceptedAudiences:
    """The ``aud`` values a server accepts (RFC 8707): exact ids, and resource URIs compared canonically."""

    def __init__(self, audiences: Iterable[str]) -> None:
        self.values = tuple(dict.fromkeys(audiences))
        self._uris = {canonical_resource(a) for a in self.values if a.startswith(("http://", "https://"))}

    def match(self, claims: Mapping[str, Any]) -> bool:
        """Whether the claims' ``aud`` (a string or list) names one of them."""
        return any(
            aud in self.values or (aud.startswith(("http://", "https://")) and canonical_resource(aud) in self._uris)
            for aud in audiences(claims)
        )


def canonical_resource(uri: str) -> str:
    """A resource URI for comparison: lowercase scheme and host, default port dropped, no trailing slash."""
    parts = urlsplit(uri.strip())
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    if ":" in host:  # an IPv6 literal
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:  # not a port: compare as given (it matches nothing well-formed)
        return uri
    if port is not None and (scheme, port) not in (("https", 443), ("http", 80)):
        host = f"{host}:{port}"
    return urlunsplit((scheme, host, parts.path.rstrip("/"), parts.query, ""))
