"""JWT access tokens: signature, algorithm, expiry, issuer, audience (RFC 8707), claims -> identity.

Checks: the signature with an allowed algorithm only (never ``none``, never an
algorithm of the other family), ``exp`` required and enforced, ``iss`` equal to
the configured issuer, ``aud`` containing one of the accepted audiences (the
configured ``audience`` list and the server's own resource URI), ``nbf`` and
``iat`` honoured, an optional maximum age. Keys come from a public key file, a
JWKS file, a shared secret, or the provider's JWKS (configured ``jwks_url`` or
its metadata's ``jwks_uri``), fetched and rotated by :class:`RemoteKeySet`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import jwt

from scopegate.errors import ConfigError, KeyRefreshPending, ProviderUnavailable
from scopegate.identity.jwks import KeySource, StaticKeySet
from scopegate.identity.tokens import AcceptedAudiences, Verification, accepted

if TYPE_CHECKING:  # config types only: the identity room does not import the config at run time
    from scopegate.config.model import JwtConfig

MAX_JWT_CHARS = 16_384

_ERRORS: tuple[tuple[type[Exception], str], ...] = (
    (jwt.ExpiredSignatureError, "expired"),
    (jwt.InvalidAudienceError, "bad_audience"),
    (jwt.InvalidIssuerError, "bad_issuer"),
    (jwt.InvalidSignatureError, "bad_signature"),
    (jwt.MissingRequiredClaimError, "missing_claim"),
    (jwt.ImmatureSignatureError, "not_yet_valid"),
    (jwt.InvalidAlgorithmError, "bad_algorithm"),
    (jwt.InvalidKeyError, "unknown_key"),
    (jwt.PyJWKError, "unknown_key"),
)


def looks_like_jwt(token: str) -> bool:
    return token.count(".") == 2


def _reason(exc: Exception) -> str:
    for kind, reason in _ERRORS:
        if isinstance(exc, kind):
            return reason
    return "malformed"


class FixedKey:
    """One key (a PEM public key or a shared secret), whatever the ``kid``."""

    def __init__(self, key: Any) -> None:
        self.key = key

    async def key_for(self, kid: str | None) -> Any:
        return self.key


def key_source_from_files(cfg: JwtConfig, environ: Mapping[str, str]) -> KeySource | FixedKey | None:
    """The key source of a public key file, a JWKS file or a secret; None for remote sources."""
    if cfg.public_key_file is not None:
        try:
            pem = cfg.public_key_file.read_bytes()
        except OSError as exc:
            raise ConfigError(f"auth.jwt.public_key_file: cannot read {cfg.public_key_file}: {exc.strerror}") from exc
        algorithm = jwt.get_algorithm_by_name(cfg.algorithms[0])
        try:
            return FixedKey(algorithm.prepare_key(pem))
        except Exception as exc:
            raise ConfigError(f"auth.jwt.public_key_file: not a usable {cfg.algorithms[0]} public key ({exc})") from exc
    if cfg.jwks_file is not None:
        try:
            data = json.loads(cfg.jwks_file.read_text("utf-8"))
            if not isinstance(data, dict):
                raise ValueError("not a JSON object")
            return StaticKeySet(data)
        except (OSError, ValueError, ProviderUnavailable) as exc:
            raise ConfigError(f"auth.jwt.jwks_file: cannot load a key set from {cfg.jwks_file}: {exc}") from exc
    if cfg.secret_env is not None:
        secret = environ.get(cfg.secret_env)
        if not secret or len(secret) < 32:
            raise ConfigError(
                f"auth.jwt.secret_env: environment variable {cfg.secret_env} "
                "must hold a secret of at least 32 characters"
            )
        return FixedKey(secret.encode("utf-8"))
    return None


class JwtVerifier:
    """Verifies JWTs of one issuer with one key source (see the module docstring)."""

    def __init__(self, cfg: JwtConfig, keys: KeySource | FixedKey, *, extra_audiences: Iterable[str] = ()) -> None:
        self.cfg = cfg
        self.keys = keys
        self.audiences = AcceptedAudiences([*cfg.audience, *extra_audiences])

    async def check(self, token: str) -> Verification | None:
        if not looks_like_jwt(token):
            return None
        return await self.verify(token)

    async def verify(self, token: str) -> Verification:
        if len(token) > MAX_JWT_CHARS:
            return Verification.refused("too_long")
        cfg = self.cfg
        try:
            header = jwt.get_unverified_header(token)
            alg = header.get("alg")
            if alg not in cfg.algorithms:
                return Verification.refused("bad_algorithm")
            kid = header.get("kid")
            key = await self.keys.key_for(kid if isinstance(kid, str) else None)
            if key is None:
                return Verification.refused("unknown_key")
            # A PyJWK verifies only with its own algorithm (PyJWT checks the header's alg against it).
            claims = jwt.decode(
                token,
                key,
                algorithms=list(cfg.algorithms),
                issuer=cfg.issuer,
                leeway=cfg.leeway_s,
                options={"require": ["exp", "iss"], "verify_signature": True, "verify_aud": False},
            )
        except KeyRefreshPending as exc:
            return Verification.refused("key_pending", retry_after=exc.retry_after)
        except ProviderUnavailable:
            return Verification.refused("unavailable")
        except Exception as exc:  # every PyJWT failure, and garbage that is not a JWS at all
            return Verification.refused(_reason(exc))
        if not self.audiences.match(claims):
            return Verification.refused("bad_audience")
        if cfg.max_age_s is not None:
            iat = claims.get("iat")
            if not isinstance(iat, (int, float)) or time.time() - float(iat) > cfg.max_age_s + cfg.leeway_s:
                return Verification.refused("too_old")
        return accepted(claims, "jwt", cfg.claims, cfg.scope_claim)
