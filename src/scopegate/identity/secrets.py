"""Per-identity downstream credentials without an identity provider.

With the token table (or any check that yields a verified identity) and no
OAuth provider to exchange tokens at, each caller can still reach a downstream
API with *its own* credential: the identity that authenticated the call
selects it from a store the deployment keeps. The shape is the token
exchanger's (:class:`~scopegate.identity.exchange.TokenExchanger`): an object
with ``credential_for(subject, ctx)``, used through
:class:`scopegate.openapi.runtime.FromSubject`, so the credential is placed
where the security scheme says and redacted from everything the API answers.

Stores, keyed by identity (``"tenant/user"``, or ``"tenant"`` for an identity
without a user; exact match only, never a fallback to someone else's):

* :meth:`IdentitySecrets.from_env`: identity -> environment variable name, read once at start-up;
* :meth:`IdentitySecrets.from_file`: a YAML/JSON/TOML file ``{secrets: {"acme/alice": "...",
  "acme/bob": {username: ..., password: ...}}}`` readable by its owner only (mode ``0600`` or
  stricter; a group- or world-readable file is refused at start-up);
* :meth:`IdentitySecrets.from_function`: an application callable ``fn(tenant, user)`` (sync or async)
  returning the secret, a ``(username, password)`` pair, or ``None``.

Which identity: the call's scope (the verified identity the MCP server put in
state, or the ADK session's bound scope). When the call also carries a verified
token, its identity must be the same (else nothing is sent). A caller with no
entry gets ``NOT_AUTHORIZED`` ("no credential for this API is set up for the
signed-in user"); nothing is sent, and no other identity's credential is tried.
Secrets are never logged: log lines name the identity key only.
"""

from __future__ import annotations

import inspect
import logging
import os
import stat
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

from scopegate.context import CallContext, SubjectToken
from scopegate.errors import ConfigError, CredentialUnavailable, ScopeMissing
from scopegate.scope import ScopeKeys, read_scope

log = logging.getLogger("scopegate.identity.secrets")

Answer = str | tuple[str, str] | None
Lookup = Callable[[str, str | None], Awaitable[Answer] | Answer]

_NONE_FOR_USER = "No credential for this API is set up for the signed-in user."
_NO_IDENTITY = "This call carries no signed-in identity, so no per-user credential for this API can be chosen."
_MISMATCH = "The signed-in user's token does not belong to this session's account."


class _Kept:
    """A stored secret (or user name + password) whose ``repr`` never shows it."""

    __slots__ = ("_value",)

    def __init__(self, value: str | tuple[str, str]) -> None:
        self._value = value

    def reveal(self) -> str | tuple[str, str]:
        return self._value

    def __repr__(self) -> str:
        return "_Kept('***')"


def identity_key(tenant: str, user: str | None) -> str:
    """``"tenant/user"`` (``"tenant"`` without a user): how a store names an identity."""
    return f"{tenant}/{user}" if user else tenant


def _entry(value: Any, where: str) -> _Kept:
    if isinstance(value, str) and value:
        return _Kept(value)
    if isinstance(value, Mapping) and set(value) == {"username", "password"}:
        user, password = value["username"], value["password"]
        if isinstance(user, str) and isinstance(password, str) and user and password:
            return _Kept((user, password))
    raise ConfigError(f"{where}: give a non-empty secret or {{username, password}}")


def _check_key(key: Any, where: str) -> str:
    if not isinstance(key, str) or not key or key.count("/") > 1 or key.startswith("/") or key.endswith("/"):
        raise ConfigError(f"{where}: identity {key!r} must be 'tenant/user' or 'tenant'")
    return key


class IdentitySecrets:
    """The caller's own downstream credential, chosen by the identity that made the call."""

    def __init__(self, lookup: Lookup, *, scope_keys: ScopeKeys | None = None, label: str = "per_identity") -> None:
        self._lookup = lookup
        self.scope_keys = scope_keys or ScopeKeys()
        self.label = label

    def __repr__(self) -> str:
        return f"IdentitySecrets({self.label!r})"

    # -- stores --------------------------------------------------------------------------
    @classmethod
    def from_mapping(
        cls, secrets: Mapping[str, Any], *, scope_keys: ScopeKeys | None = None, label: str = "per_identity"
    ) -> IdentitySecrets:
        kept = {_check_key(k, label): _entry(v, f"{label}[{k}]") for k, v in secrets.items()}

        def lookup(tenant: str, user: str | None) -> Answer:
            found = kept.get(identity_key(tenant, user))
            return found.reveal() if found is not None else None

        return cls(lookup, scope_keys=scope_keys, label=label)

    @classmethod
    def from_env(
        cls,
        variables: Mapping[str, str],
        environ: Mapping[str, str] | None = None,
        *,
        scope_keys: ScopeKeys | None = None,
        label: str = "per_identity.env",
    ) -> IdentitySecrets:
        """identity -> environment variable holding its secret; every variable must be set (read once)."""
        env = os.environ if environ is None else environ
        missing = sorted(name for name in variables.values() if not env.get(name))
        if missing:
            raise ConfigError(f"{label}: environment variable(s) {missing} are not set")
        return cls.from_mapping({key: env[name] for key, name in variables.items()}, scope_keys=scope_keys, label=label)

    @classmethod
    def from_file(
        cls, path: str | os.PathLike[str], *, scope_keys: ScopeKeys | None = None, label: str = "per_identity.file"
    ) -> IdentitySecrets:
        """A secrets file readable by its owner only: ``{secrets: {identity: secret | {username, password}}}``."""
        from scopegate.config.loader import format_of, parse_config_text  # the config's own parser and limits

        p = Path(path)
        try:
            info = p.stat()
        except OSError as exc:
            raise ConfigError(f"{label}: cannot read {p}: {exc}") from exc
        if not stat.S_ISREG(info.st_mode):
            raise ConfigError(f"{label}: {p} is not a regular file")
        if info.st_mode & 0o077:
            raise ConfigError(
                f"{label}: {p} is readable by others (mode {stat.filemode(info.st_mode)}); "
                f"it holds secrets: chmod 600 {p}"
            )
        try:
            text = p.read_text("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{label}: cannot read {p}: {exc}") from exc
        data = parse_config_text(text, format_of(p), source=str(p))
        secrets = data.get("secrets") if isinstance(data, Mapping) else None
        if not isinstance(secrets, Mapping) or set(data) != {"secrets"}:
            raise ConfigError(f"{label}: {p} must hold one key, 'secrets': identity -> secret")
        return cls.from_mapping(secrets, scope_keys=scope_keys, label=label)

    @classmethod
    def from_function(
        cls, fn: Lookup, *, scope_keys: ScopeKeys | None = None, label: str = "per_identity.function"
    ) -> IdentitySecrets:
        """``fn(tenant, user)`` (sync or async): the secret, a ``(username, password)`` pair, or None."""
        return cls(fn, scope_keys=scope_keys, label=label)

    # -- the exchanger protocol --------------------------------------------------------------
    async def credential_for(self, subject: SubjectToken | None, ctx: CallContext) -> str | tuple[str, str]:
        try:
            scope = read_scope(ctx.state, self.scope_keys)
        except ScopeMissing:
            raise CredentialUnavailable("no scope in the call", public=_NO_IDENTITY) from None
        tenant, user = scope.tenant_id, scope.user_id
        if subject is not None and subject.verified and (subject.tenant, subject.user) != (tenant, user):
            raise CredentialUnavailable("verified token names another identity than the scope", public=_MISMATCH)
        key = identity_key(tenant, user)
        got = self._lookup(tenant, user)
        if inspect.isawaitable(got):
            got = await got
        if not _usable(got):
            log.info("%s: no downstream credential for identity %s", self.label, key)
            raise CredentialUnavailable(f"no credential for identity {key}", public=_NONE_FOR_USER)
        assert got is not None
        return got


def _usable(value: Any) -> bool:
    if isinstance(value, str):
        return bool(value)
    return isinstance(value, tuple) and len(value) == 2 and all(isinstance(v, str) and v for v in value)
