"""Credentials: taken from a source the model cannot touch, placed where the security scheme says.

Sources, per security scheme key:

* :class:`FromState` — a session-state key holding the signed-in user's token
  (delegated authority), optionally a second key for a basic-auth user name;
* :class:`FromProvider` — a callable of the service (a vault, an env var),
  given the call context and the scheme;
* :class:`FromSubject` — a per-user credential derived from the caller's own
  verified token (``ctx.subject_token``) by an exchanger: RFC 8693 token
  exchange at the identity provider (:class:`scopegate.identity.TokenExchanger`)
  or a store keyed by the verified identity (:class:`scopegate.identity.IdentitySecrets`:
  environment, a mode-checked file, a callable). The caller's token itself is never
  sent; an exchanger that cannot help raises
  :class:`~scopegate.errors.CredentialUnavailable` and nothing is sent. The MCP
  server and the ADK adapter both fill ``ctx.subject_token``, so one config
  behaves the same in both.

The operation's effective ``security`` requirement list decides: the first
alternative whose every scheme has a credential is used. Placement follows the
scheme: HTTP bearer (and OAuth2 / OpenID Connect tokens) and basic go in
``Authorization``; API keys go in the named header, query parameter or cookie.

Secrets are wrapped in :class:`Secret` (its ``repr`` is masked), and
:func:`redact` / :func:`redact_bytes` scrub every spelling of a secret that was
sent from whatever the API answers, before anything reaches the model.
"""

from __future__ import annotations

import base64
import inspect
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import quote, quote_plus

from scopegate.context import CallContext, SubjectToken
from scopegate.errors import NoCredentials
from scopegate.openapi.model import SecurityRequirement, SecurityScheme

REDACTED = "[redacted]"
MIN_SECRET_CHARS = 4


class Secret:
    """A credential value whose ``repr``/``str`` never shows it."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret('***')"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)


@dataclass(frozen=True)
class Credential:
    """A secret (token, API key or password) and, for basic auth, a user name."""

    secret: Secret
    username: str | None = None

    @classmethod
    def of(cls, value: str | tuple[str, str] | Credential) -> Credential:
        if isinstance(value, Credential):
            return value
        if isinstance(value, tuple):
            return cls(Secret(value[1]), username=value[0])
        return cls(Secret(value))


ProvidedValue = Credential | str | tuple[str, str] | None
Provider = Callable[[CallContext, SecurityScheme], Awaitable[ProvidedValue] | ProvidedValue]


@dataclass(frozen=True)
class FromState:
    """The credential is in session state under ``key`` (and ``username_key`` for basic auth)."""

    key: str
    username_key: str | None = None


@dataclass(frozen=True)
class FromProvider:
    """The credential comes from a service-side callable (sync or async)."""

    provider: Provider


class SubjectExchanger(Protocol):
    async def credential_for(self, subject: SubjectToken | None, ctx: CallContext) -> str | tuple[str, str]:
        """The caller's credential for the API (a token, or a user name and password for basic auth);
        raises CredentialUnavailable when there is none."""
        ...


@dataclass(frozen=True)
class FromSubject:
    """A per-user credential obtained for the caller's verified token (token exchange, a per-subject store)."""

    exchanger: SubjectExchanger


CredentialSource = FromState | FromProvider | FromSubject


@dataclass(frozen=True)
class AuthParts:
    headers: tuple[tuple[str, str], ...] = ()
    query: tuple[tuple[str, str], ...] = ()
    cookies: tuple[tuple[str, str], ...] = ()
    # Every spelling of every secret that is sent, for redaction.
    secrets: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        return not (self.headers or self.query or self.cookies)


def _usable(text: Any) -> bool:
    return isinstance(text, str) and bool(text) and all(0x20 <= ord(c) < 0x7F for c in text)


async def _credential(source: CredentialSource, ctx: CallContext, scheme: SecurityScheme) -> Credential | None:
    if isinstance(source, FromState):
        value = ctx.state.get(source.key)
        if not isinstance(value, str) or not _usable(value):
            return None
        username = None
        if source.username_key is not None:
            username = ctx.state.get(source.username_key)
            if not _usable(username):
                return None
        return Credential(Secret(value), username=username)
    if isinstance(source, FromSubject):
        # Raises CredentialUnavailable (a NoCredentials) with the code the model gets; nothing is sent.
        return await provided_credential(await source.exchanger.credential_for(ctx.subject_token, ctx))
    return await provided_credential(source.provider(ctx, scheme))


async def provided_credential(got: Awaitable[ProvidedValue] | ProvidedValue) -> Credential | None:
    """What a provider answered (awaited if need be) as a :class:`Credential`; None when missing or unusable."""
    if inspect.isawaitable(got):
        got = await got
    if got is None:
        return None
    cred = Credential.of(got)
    if not _usable(cred.secret.reveal()) or (cred.username is not None and not _usable(cred.username)):
        return None
    return cred


def spellings(secret: str) -> tuple[str, ...]:
    """Every way a secret can be written where it may leak: as is, percent-encoded (path, query,
    form), JSON-escaped, and as Python's ``repr`` writes it in str or bytes (debug logs of headers)."""
    forms = {
        secret,
        quote(secret, safe=""),
        quote_plus(secret, safe=""),
        json.dumps(secret)[1:-1],
        json.dumps(secret, ensure_ascii=False)[1:-1],
        repr(secret)[1:-1],
        repr(secret.encode("utf-8", errors="replace"))[2:-1],
    }
    return tuple(sorted(forms))


def _place(scheme: SecurityScheme, cred: Credential) -> AuthParts | None:
    secret = cred.secret.reveal()
    spelled = spellings(secret)
    if scheme.type in ("oauth2", "openIdConnect") or (scheme.type == "http" and scheme.scheme == "bearer"):
        return AuthParts(headers=(("Authorization", f"Bearer {secret}"),), secrets=spelled)
    if scheme.type == "http" and scheme.scheme == "basic":
        if cred.username is None or ":" in cred.username:
            return None
        token = base64.b64encode(f"{cred.username}:{secret}".encode()).decode("ascii")
        return AuthParts(headers=(("Authorization", f"Basic {token}"),), secrets=(*spelled, token))
    if scheme.type == "apiKey" and scheme.name:
        if scheme.location == "header":
            return AuthParts(headers=((scheme.name, secret),), secrets=spelled)
        if scheme.location == "query":
            return AuthParts(query=((scheme.name, secret),), secrets=spelled)
        if scheme.location == "cookie":
            return AuthParts(cookies=((scheme.name, secret),), secrets=spelled)
    return None


async def resolve_auth(
    security: Sequence[SecurityRequirement],
    schemes: Mapping[str, SecurityScheme],
    sources: Mapping[str, CredentialSource],
    ctx: CallContext,
) -> AuthParts:
    """The credentials to attach for one call. Raises :class:`NoCredentials` when none fit.

    An empty ``security`` (or an empty alternative ``{}``) means the operation needs no auth. A
    scheme the spec names but does not define says nothing about where a credential goes: it is
    skipped (the translation lists it as ``undefined_security_scheme``).
    """
    if not security:
        return AuthParts()
    for requirement in security:
        requirement = {k: v for k, v in requirement.items() if k in schemes}
        if not requirement:
            return AuthParts()
        parts: list[AuthParts] = []
        for key in requirement:
            scheme, source = schemes.get(key), sources.get(key)
            if scheme is None or source is None:
                break
            cred = await _credential(source, ctx, scheme)
            placed = _place(scheme, cred) if cred is not None else None
            if placed is None:
                break
            parts.append(placed)
        else:
            return AuthParts(
                headers=tuple(h for p in parts for h in p.headers),
                query=tuple(q for p in parts for q in p.query),
                cookies=tuple(c for p in parts for c in p.cookies),
                secrets=tuple(s for p in parts for s in p.secrets),
            )
    raise NoCredentials("no credentials for this operation")


@dataclass
class Redactor:
    """Replaces every known secret spelling in bytes, strings and nested JSON values."""

    secrets: tuple[str, ...] = ()
    _ordered: list[str] = field(init=False, default_factory=list)

    def __post_init__(self) -> None:
        self._ordered = sorted({s for s in self.secrets if len(s) >= MIN_SECRET_CHARS}, key=len, reverse=True)

    @property
    def active(self) -> bool:
        return bool(self._ordered)

    def plus(self, values: tuple[str, ...]) -> Redactor:
        """A redactor for these secrets and every spelling of ``values`` too."""
        if not values:
            return self
        return Redactor((*self.secrets, *(s for v in values for s in spellings(v))))

    def bytes(self, data: bytes) -> bytes:
        for s in self._ordered:
            data = data.replace(s.encode("utf-8"), REDACTED.encode())
        return data

    def text(self, text: str) -> str:
        for s in self._ordered:
            text = text.replace(s, REDACTED)
        return text

    def value(self, value: Any) -> Any:
        if not self._ordered:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self.value(v) for v in value]
        if isinstance(value, dict):
            return {self.text(str(k)): self.value(v) for k, v in value.items()}
        return value
