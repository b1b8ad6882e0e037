"""Tamper-evident scope in persisted session state: HMAC-SHA256, bound to one session.

Where the scope must live in session state that clients can write (ADK's
``adk api_server`` lets any client change state with ``state_delta``, a session
PATCH or session creation), the server signs it instead of trusting it::

    ring = KeyRing.from_env()                       # SCOPEGATE_SCOPE_SIGNING_KEYS="k2:<secret>,k1:<old secret>"
    state = {SIGNED_SCOPE_KEY: ring.sign(identity, app_name="support", user_id="u1", session_id="s1")}
    ...
    identity = ring.verify(state[SIGNED_SCOPE_KEY], app_name="support", user_id="u1", session_id="s1")

The signature covers a canonical encoding (sorted-key, ASCII-only JSON behind a
domain-separation prefix) of the scope (tenant, user, sorted groups), the key
id, the issue and expiry times, and the app name, user id and session id the
envelope was issued for. An envelope that is missing, altered in any field,
signed with an unknown key, expired, or copied into another session, user or
app fails with :class:`SignatureInvalid`; tools turn that into ``NO_SCOPE``.

Lifetime rule: every envelope expires. :meth:`KeyRing.sign` gives it
``DEFAULT_TTL_S`` (one day) unless told otherwise, and never more than the
ring's ``max_lifetime_s`` (default ``MAX_LIFETIME_S``, 30 days).
:meth:`KeyRing.verify` refuses an envelope without an expiry (``no_expiry``),
one whose expiry lies more than ``max_lifetime_s`` after its issue time
(``lifetime_too_long``), and one past its expiry (``expired``, after
``DEFAULT_LEEWAY_S`` of clock leeway). So no envelope, however it was made, is
good for longer than ``max_lifetime_s``; a long-lived session gets a fresh
envelope from the server (sign again into its state) before the old one ends.

Rotation: the ring signs with its active key (the first one unless named) and
verifies with any key it holds, found by the envelope's key id. Add the new key
first, keep the old one until the sessions signed with it have ended, then
remove it. A signature is tamper evidence, not secrecy: the scope stays
readable by the client (``GET`` on an ADK session shows it).

Standard library only (:mod:`hmac`, :mod:`hashlib`): the format is twenty lines
and needs key ids, a session binding and exact field checks that general
token libraries (itsdangerous, JWT) would add on top of their own formats.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import os
import re
import secrets
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scopegate.errors import (
    ConfigError,
    IdentityError,
)
from scopegate.errors import (
    SignatureInvalid as SignatureInvalid,
)
from scopegate.identity.model import Identity

__all__ = [
    "ENV_SIGNING_KEYS",
    "MIN_SECRET_BYTES",
    "SIGNED_SCOPE_KEY",
    "KeyRing",
    "SignatureInvalid",
    "SigningKey",
    "canonical_message",
]

# The session-state key that holds the signed envelope. Persisted (no ``temp:`` prefix).
SIGNED_SCOPE_KEY = "scopegate:scope"
ENV_SIGNING_KEYS = "SCOPEGATE_SCOPE_SIGNING_KEYS"
MIN_SECRET_BYTES = 32
VERSION = 1
_DOMAIN = b"scopegate/signed-scope/v1\x00"
_KID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
_ENVELOPE_KEYS = frozenset({"v", "kid", "iat", "exp", "scope", "sig"})
_SCOPE_KEYS = frozenset({"tenant", "user", "groups"})
MAX_SIG_CHARS = 64
DEFAULT_LEEWAY_S = 30
DEFAULT_TTL_S = 86_400  # what an envelope is good for unless the signer says otherwise
MAX_LIFETIME_S = 30 * 86_400  # the longest lifetime a ring signs or accepts (issue to expiry)


@dataclass(frozen=True)
class SigningKey:
    """One HMAC key with the id that envelopes name it by."""

    kid: str
    secret: bytes = field(repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.kid, str) or not _KID.match(self.kid):
            raise ConfigError(f"signing key id {self.kid!r} must be 1-64 characters of A-Z a-z 0-9 . _ -")
        if not isinstance(self.secret, bytes) or len(self.secret) < MIN_SECRET_BYTES:
            raise ConfigError(f"signing key {self.kid!r} must have at least {MIN_SECRET_BYTES} bytes of secret")


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def canonical_message(
    *, kid: str, iat: int, exp: int | None, scope: Mapping[str, Any], app_name: str, user_id: str, session_id: str
) -> bytes:
    """The exact bytes that are signed: unambiguous (JSON strings are escaped), ASCII only."""
    body = {
        "v": VERSION,
        "kid": kid,
        "iat": iat,
        "exp": exp,
        "scope": {"tenant": scope["tenant"], "user": scope["user"], "groups": list(scope["groups"])},
        "app": app_name,
        "uid": user_id,
        "sid": session_id,
    }
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)
    return _DOMAIN + text.encode("ascii")


def _scope_of(identity: Identity) -> dict[str, Any]:
    return {"tenant": identity.tenant, "user": identity.user, "groups": sorted(set(identity.groups))}


def _binding_ids(app_name: Any, user_id: Any, session_id: Any) -> None:
    for what, value in (("app name", app_name), ("user id", user_id), ("session id", session_id)):
        if not isinstance(value, str) or not value:
            raise SignatureInvalid("malformed", f"no {what} to bind the scope to")


class KeyRing:
    """Signing keys by id: one active key signs, every key verifies; no envelope outlives ``max_lifetime_s``."""

    def __init__(
        self, keys: Iterable[SigningKey], *, active: str | None = None, max_lifetime_s: int = MAX_LIFETIME_S
    ) -> None:
        if not _is_int(max_lifetime_s) or max_lifetime_s < 1:
            raise ConfigError("max_lifetime_s must be a whole number of seconds, at least 1")
        self.max_lifetime_s = max_lifetime_s
        self._keys: dict[str, SigningKey] = {}
        for key in keys:
            if key.kid in self._keys:
                raise ConfigError(f"signing key id {key.kid!r} appears twice")
            self._keys[key.kid] = key
        if not self._keys:
            raise ConfigError("a key ring needs at least one signing key")
        self.active = active if active is not None else next(iter(self._keys))
        if self.active not in self._keys:
            raise ConfigError(f"the active signing key {self.active!r} is not in the ring")

    def __repr__(self) -> str:
        return f"KeyRing(kids={list(self._keys)!r}, active={self.active!r})"

    @property
    def kids(self) -> tuple[str, ...]:
        return tuple(self._keys)

    # -- construction ---------------------------------------------------------
    @staticmethod
    def new_secret() -> str:
        """A fresh 32-byte secret, base64url-encoded (for ``kid:secret`` specs)."""
        return _b64(secrets.token_bytes(MIN_SECRET_BYTES))

    @classmethod
    def parse(cls, text: str) -> KeyRing:
        """``"k2:<base64url secret>,k1:<base64url secret>"`` (commas or newlines; the first key signs)."""
        keys: list[SigningKey] = []
        for raw in re.split(r"[,\n]", text):
            item = raw.strip()
            if not item or item.startswith("#"):
                continue
            kid, sep, secret = item.partition(":")
            if not sep:
                raise ConfigError("signing keys are written 'kid:secret' (secret base64url, at least 32 bytes)")
            try:
                decoded = _unb64(secret.strip())
            except (binascii.Error, ValueError) as exc:
                raise ConfigError(f"signing key {kid.strip()!r}: the secret is not base64url") from exc
            keys.append(SigningKey(kid.strip(), decoded))
        return cls(keys)

    @classmethod
    def from_env(cls, name: str = ENV_SIGNING_KEYS, environ: Mapping[str, str] | None = None) -> KeyRing | None:
        """The ring in ``$SCOPEGATE_SCOPE_SIGNING_KEYS`` (or ``@/path/to/file`` holding it); None when unset."""
        env = os.environ if environ is None else environ
        value = env.get(name, "").strip()
        if not value:
            return None
        if value.startswith("@"):
            return cls.from_file(Path(value[1:]).expanduser(), what=name)
        return cls.parse(value)

    @classmethod
    def from_file(cls, path: str | os.PathLike[str], *, what: str = "signing keys") -> KeyRing:
        """The ring in a file (the same ``kid:secret`` lines)."""
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"{what}: cannot read the key file {str(path)!r}: {exc.strerror}") from exc
        return cls.parse(text)

    # -- signing ----------------------------------------------------------------
    def _mac(self, key: SigningKey, message: bytes) -> str:
        return _b64(hmac.new(key.secret, message, hashlib.sha256).digest())

    def sign(
        self,
        identity: Identity,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        ttl_s: float = DEFAULT_TTL_S,
        now: float | None = None,
    ) -> dict[str, Any]:
        """The envelope to store under :data:`SIGNED_SCOPE_KEY` in that session's state, good for ``ttl_s``
        seconds (at most ``max_lifetime_s``: a longer or missing lifetime is a :class:`ConfigError`)."""
        _binding_ids(app_name, user_id, session_id)
        if isinstance(ttl_s, bool) or not isinstance(ttl_s, (int, float)) or not 0 < ttl_s <= self.max_lifetime_s:
            raise ConfigError(
                f"a signed scope needs a lifetime of 1 to {self.max_lifetime_s} seconds (ttl_s), not {ttl_s!r}"
            )
        checked = Identity.checked(identity.tenant, identity.user, list(identity.groups))
        iat = int(time.time() if now is None else now)
        exp = iat + max(1, int(ttl_s))
        key = self._keys[self.active]
        scope = _scope_of(checked)
        message = canonical_message(
            kid=key.kid, iat=iat, exp=exp, scope=scope, app_name=app_name, user_id=user_id, session_id=session_id
        )
        envelope: dict[str, Any] = {"v": VERSION, "kid": key.kid, "iat": iat, "exp": exp, "scope": scope}
        envelope["sig"] = self._mac(key, message)
        return envelope

    def verify(
        self,
        envelope: Any,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        now: float | None = None,
        leeway_s: int = DEFAULT_LEEWAY_S,
    ) -> Identity:
        """The identity an envelope was issued for in exactly this session, or :class:`SignatureInvalid`."""
        if envelope is None:
            raise SignatureInvalid("missing")
        _binding_ids(app_name, user_id, session_id)
        parts = _parts(envelope)
        key = self._keys.get(parts.kid)
        if key is None:
            raise SignatureInvalid("unknown_key", f"key id {parts.kid!r}")
        message = canonical_message(
            kid=parts.kid,
            iat=parts.iat,
            exp=parts.exp,
            scope=parts.scope,
            app_name=app_name,
            user_id=user_id,
            session_id=session_id,
        )
        if not hmac.compare_digest(self._mac(key, message).encode("ascii"), parts.sig.encode("ascii")):
            raise SignatureInvalid("bad_signature")
        current = time.time() if now is None else now
        # Signed by us but possibly before envelopes had to expire (wave 2 signed none by default).
        if parts.exp is None:
            raise SignatureInvalid("no_expiry")
        if parts.exp - parts.iat > self.max_lifetime_s:
            raise SignatureInvalid("lifetime_too_long", f"more than {self.max_lifetime_s} s from issue to expiry")
        if current > parts.exp + leeway_s:
            raise SignatureInvalid("expired")
        if parts.iat > current + leeway_s:
            raise SignatureInvalid("not_yet_valid")
        scope = parts.scope
        try:
            return Identity.checked(scope["tenant"], scope["user"], scope["groups"])
        except IdentityError as exc:
            raise SignatureInvalid("bad_identity", str(exc)) from exc


@dataclass(frozen=True)
class _Parts:
    kid: str
    iat: int
    exp: int | None
    scope: Mapping[str, Any]
    sig: str


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _parts(envelope: Any) -> _Parts:
    """The envelope's fields with exact types; anything else is ``malformed``."""
    if not isinstance(envelope, Mapping) or set(envelope) - _ENVELOPE_KEYS:
        raise SignatureInvalid("malformed", "not a signed scope envelope")
    if not _is_int(envelope.get("v")) or envelope.get("v") != VERSION:
        raise SignatureInvalid("malformed", "unknown envelope version")
    kid, iat, exp, sig = envelope.get("kid"), envelope.get("iat"), envelope.get("exp"), envelope.get("sig")
    if not isinstance(kid, str) or not _KID.match(kid):
        raise SignatureInvalid("malformed", "bad key id")
    if not isinstance(iat, int) or not _is_int(iat) or (exp is not None and not _is_int(exp)):
        raise SignatureInvalid("malformed", "bad times")
    if not isinstance(sig, str) or not sig or len(sig) > MAX_SIG_CHARS:
        raise SignatureInvalid("malformed", "bad signature field")
    scope = envelope.get("scope")
    if not isinstance(scope, Mapping) or set(scope) != _SCOPE_KEYS:
        raise SignatureInvalid("malformed", "bad scope")
    tenant, user, groups = scope["tenant"], scope["user"], scope["groups"]
    if not isinstance(tenant, str) or (user is not None and not isinstance(user, str)):
        raise SignatureInvalid("malformed", "bad scope ids")
    if not isinstance(groups, list) or not all(isinstance(g, str) for g in groups):
        raise SignatureInvalid("malformed", "bad groups")
    return _Parts(kid, iat, exp, {"tenant": tenant, "user": user, "groups": list(groups)}, sig)
