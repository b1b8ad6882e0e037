"""Verified caller identity, shared by the MCP server and the ADK adapter.

* :class:`Identity` (:mod:`.model`): tenant, user, groups, validated with the scope rules.
* Verification: :class:`Verifier` runs :class:`TokenCheck`\\ s in order: a token
  table (:class:`TokenTable`), JWTs (:class:`JwtVerifier`, keys from files or
  the provider's JWKS via :class:`RemoteKeySet`: cached, rotated, unknown
  ``kid``\\ s refreshed at most once per interval), and RFC 7662 introspection
  (:class:`Introspector`, cached for a bounded time). Each yields a
  :class:`Verification`: a :class:`VerifiedToken` (identity, scopes, expiry,
  audience) or a short refusal reason. ``verifier.identity`` is a
  ``verify(token) -> Identity | None`` function for :class:`TokenSource`.
* The provider (:class:`Provider`): metadata discovery (RFC 8414 / OpenID
  Connect), the HTTP clients, bounded reads, https except on loopback.
* Scopes per tool (:class:`ToolScopes`): required, read, write, per tool or
  family, and scope hierarchies.
* Per-user downstream credentials (:class:`TokenExchanger`): RFC 8693 token
  exchange for a downstream API, down-scoped, checked against the call's
  scope, cached per user until expiry; used through
  :class:`scopegate.openapi.runtime.FromSubject` by both adapters. Without a
  provider, :class:`IdentitySecrets` (:mod:`.secrets`) picks the caller's own
  credential from a per-identity store (environment, a mode-checked file, a callable).
* Sources (:mod:`.sources`): where the ADK scope binding gets a verified
  identity: a token (:class:`TokenSource`), a server-side directory
  (:class:`UserDirectory`), a signed session state (:class:`SignedStateSource`),
  an application function (:class:`FunctionSource`).
* Signing (:mod:`.signing`): tamper-evident scope in persisted session state.
* :class:`BearerTokenMiddleware` (:mod:`.asgi`): the request's bearer token for
  sources, in servers whose plugins cannot see headers.

The config's ``auth`` section builds the verification objects
(:func:`scopegate.config.identity.build_identity`).
"""

from scopegate.identity.asgi import BearerTokenMiddleware, current_bearer_token
from scopegate.identity.exchange import ExchangeTarget, TokenExchanger
from scopegate.identity.introspection import Introspector
from scopegate.identity.jwks import RemoteKeySet, StaticKeySet
from scopegate.identity.jwt_verify import JwtVerifier
from scopegate.identity.model import Identity
from scopegate.identity.provider import Provider, ProviderMetadata, ProviderSettings
from scopegate.identity.scopes import ToolScopes
from scopegate.identity.secrets import IdentitySecrets
from scopegate.identity.signing import ENV_SIGNING_KEYS, SIGNED_SCOPE_KEY, KeyRing, SignatureInvalid, SigningKey
from scopegate.identity.sources import (
    FunctionSource,
    IdentityRequest,
    IdentitySource,
    SignedStateSource,
    TokenSource,
    UserDirectory,
    as_source,
)
from scopegate.identity.table import TokenTable
from scopegate.identity.tokens import TokenCheck, Verification, VerifiedToken
from scopegate.identity.verifier import Verifier

__all__ = [
    "ENV_SIGNING_KEYS",
    "SIGNED_SCOPE_KEY",
    "BearerTokenMiddleware",
    "ExchangeTarget",
    "FunctionSource",
    "Identity",
    "IdentityRequest",
    "IdentitySecrets",
    "IdentitySource",
    "Introspector",
    "JwtVerifier",
    "KeyRing",
    "Provider",
    "ProviderMetadata",
    "ProviderSettings",
    "RemoteKeySet",
    "SignatureInvalid",
    "SignedStateSource",
    "SigningKey",
    "StaticKeySet",
    "TokenCheck",
    "TokenExchanger",
    "TokenSource",
    "TokenTable",
    "ToolScopes",
    "UserDirectory",
    "Verification",
    "VerifiedToken",
    "Verifier",
    "as_source",
    "current_bearer_token",
]
