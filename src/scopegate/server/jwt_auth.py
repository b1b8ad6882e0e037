"""JWT bearer tokens verified against a configured public key, JWKS file or shared secret.

Checks: signature with an allowed algorithm only (never ``none``, never an
algorithm of the other family), ``exp`` required and enforced, ``iss`` equal
to the configured issuer, ``aud`` containing a configured audience, ``nbf``
and ``iat`` honoured, optional maximum age. Failures are reported as a short
reason for metrics and logs, never with the token.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import jwt
from jwt import PyJWK, PyJWKSet

from scopegate.config.model import JwtConfig
from scopegate.errors import ConfigError
from scopegate.server.identity import Identity, IdentityError, identity_from_claims

MAX_JWT_CHARS = 16_384


@dataclass(frozen=True)
class JwtResult:
    identity: Identity | None
    reason: str  # "ok" or a short failure reason
    claims: Mapping[str, Any] | None = None


class JwtVerifier:
    def __init__(self, cfg: JwtConfig, environ: Mapping[str, str] | None = None) -> None:
        self.cfg = cfg
        self._single_key: Any = None
        self._jwks: dict[str, PyJWK] = {}
        self._jwks_anonymous: list[PyJWK] = []
        env = os.environ if environ is None else environ
        if cfg.public_key_file is not None:
            try:
                self._single_key = cfg.public_key_file.read_bytes()
            except OSError as exc:
                raise ConfigError(
                    f"auth.jwt.public_key_file: cannot read {cfg.public_key_file}: {exc.strerror}"
                ) from exc
            self._check_key_loads()
        elif cfg.jwks_file is not None:
            self._load_jwks(cfg.jwks_file)
        elif cfg.secret_env is not None:
            secret = env.get(cfg.secret_env)
            if not secret or len(secret) < 32:
                raise ConfigError(
                    f"auth.jwt.secret_env: environment variable {cfg.secret_env} "
                    "must hold a secret of at least 32 characters"
                )
            self._single_key = secret.encode("utf-8")
        else:  # pragma: no cover - the config model refuses this
            raise ConfigError("auth.jwt needs a key source")

    def _check_key_loads(self) -> None:
        algorithm = jwt.get_algorithm_by_name(self.cfg.algorithms[0])
        try:
            self._single_key = algorithm.prepare_key(self._single_key)
        except Exception as exc:
            raise ConfigError(
                f"auth.jwt.public_key_file: not a usable {self.cfg.algorithms[0]} public key ({exc})"
            ) from exc

    def _load_jwks(self, path: os.PathLike[str]) -> None:
        try:
            data = json.loads(open(path, encoding="utf-8").read())  # noqa: SIM115 - small file, read once
            keyset = PyJWKSet.from_dict(data)
        except (OSError, ValueError, jwt.PyJWKSetError, jwt.InvalidKeyError) as exc:
            raise ConfigError(f"auth.jwt.jwks_file: cannot load a key set from {path}: {exc}") from exc
        for key in keyset.keys:
            if key.key_id:
                self._jwks[key.key_id] = key
            else:
                self._jwks_anonymous.append(key)
        if not self._jwks and not self._jwks_anonymous:
            raise ConfigError(f"auth.jwt.jwks_file: {path} holds no usable keys")

    def _key_for(self, token: str) -> Any:
        if self._single_key is not None:
            return self._single_key
        header = jwt.get_unverified_header(token)
        kid = header.get("kid")
        if isinstance(kid, str) and kid in self._jwks:
            return self._jwks[kid].key
        if kid is None and len(self._jwks) + len(self._jwks_anonymous) == 1:
            only = next(iter(self._jwks.values()), None) or self._jwks_anonymous[0]
            return only.key
        raise jwt.InvalidKeyError("no key with this kid")

    def verify(self, token: str) -> JwtResult:
        if len(token) > MAX_JWT_CHARS:
            return JwtResult(None, "too_long")
        cfg = self.cfg
        try:
            key = self._key_for(token)
            claims = jwt.decode(
                token,
                key,
                algorithms=list(cfg.algorithms),
                audience=list(cfg.audience),
                issuer=cfg.issuer,
                leeway=cfg.leeway_s,
                options={"require": ["exp", "iss", "aud"], "verify_signature": True},
            )
        except jwt.ExpiredSignatureError:
            return JwtResult(None, "expired")
        except jwt.InvalidAudienceError:
            return JwtResult(None, "bad_audience")
        except jwt.InvalidIssuerError:
            return JwtResult(None, "bad_issuer")
        except jwt.InvalidSignatureError:
            return JwtResult(None, "bad_signature")
        except jwt.MissingRequiredClaimError:
            return JwtResult(None, "missing_claim")
        except jwt.ImmatureSignatureError:
            return JwtResult(None, "not_yet_valid")
        except jwt.InvalidAlgorithmError:
            return JwtResult(None, "bad_algorithm")
        except (jwt.InvalidKeyError, jwt.PyJWKError):
            return JwtResult(None, "unknown_key")
        except jwt.InvalidTokenError:
            return JwtResult(None, "malformed")
        except Exception:
            return JwtResult(None, "malformed")
        if cfg.max_age_s is not None:
            iat = claims.get("iat")
            if not isinstance(iat, (int, float)) or time.time() - float(iat) > cfg.max_age_s + cfg.leeway_s:
                return JwtResult(None, "too_old")
        try:
            identity = identity_from_claims(claims, cfg.claims)
        except IdentityError:
            return JwtResult(None, "no_identity")
        return JwtResult(identity, "ok", claims)
