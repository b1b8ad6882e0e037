"""Opaque bearer tokens looked up in a table file, mapped to tenant, user, groups and scopes.

The file (YAML, TOML or JSON) lists entries; store ``sha256`` (hex digest of
the token) rather than the token itself::

    tokens:
      - sha256: 5f2b...e1      # printf %s "$TOKEN" | sha256sum
        tenant: acme
        user: alice
        groups: [support]
        scopes: [tickets:read]          # optional: what the token grants (auth.scopes)
        expires: 2030-01-01T00:00:00Z   # optional

A lookup hashes the presented token and finds the entry by digest, so the
table never needs to hold usable secrets and no token is compared in a
data-dependent loop.

Token rules: a token is 16 to 4096 characters (``MIN_TOKEN_CHARS``..``MAX_TOKEN_CHARS``;
use ``python -c "import secrets; print(secrets.token_urlsafe(32))"``), sent as
``Authorization: Bearer <token>``. A ``token:`` entry outside those bounds is refused
when the table loads; a ``sha256:`` entry cannot be checked, so a shorter token
presented to the server is refused with HTTP 401 and the reason ``token_too_short``
(in the 401's ``error_description``, the server's warning log and the auth-failure
metric) unless another check (JWT, introspection) accepts it.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

from scopegate.errors import ConfigError, IdentityError
from scopegate.identity.model import Identity
from scopegate.identity.tokens import Verification, VerifiedToken
from scopegate.validation import ConfigValidationError, Problem, format_path

MAX_TOKEN_CHARS = 4096
MIN_TOKEN_CHARS = 16
TOO_SHORT = "token_too_short"

_ID = {"type": "string", "minLength": 1, "maxLength": 256}
TABLE_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "properties": {
        "tokens": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "sha256": {"type": "string", "pattern": "^[0-9a-fA-F]{64}$"},
                    "token": {"type": "string", "minLength": MIN_TOKEN_CHARS, "maxLength": MAX_TOKEN_CHARS},
                    "tenant": _ID,
                    "user": _ID,
                    "groups": {"type": "array", "items": _ID},
                    "scopes": {"type": "array", "items": {"type": "string", "pattern": "^[!#-\\[\\]-~]{1,256}$"}},
                    "expires": {"type": ["string", "integer"]},
                    "note": {"type": "string"},
                },
                "required": ["tenant"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["tokens"],
    "additionalProperties": False,
}
_VALIDATOR = Draft202012Validator(TABLE_SCHEMA)


def token_digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class TableEntry:
    identity: Identity
    expires_at: float | None = None
    scopes: frozenset[str] = frozenset()


def _expiry(value: Any, where: str) -> float:
    if isinstance(value, int):
        return float(value)
    if isinstance(value, datetime):
        dt = value
    elif isinstance(value, date):
        dt = datetime(value.year, value.month, value.day, tzinfo=UTC)
    else:
        try:
            dt = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
        except ValueError as exc:
            raise ConfigValidationError(where, [Problem(where, f"not an ISO 8601 time: {value!r}")]) from exc
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.timestamp()


class TokenTable:
    """Digest -> identity, loaded once at start-up."""

    def __init__(self, entries: Mapping[str, TableEntry]) -> None:
        self._entries = dict(entries)

    def __len__(self) -> int:
        return len(self._entries)

    @classmethod
    def from_data(cls, data: Any, source: str = "<token table>") -> TokenTable:
        if isinstance(data, Mapping):
            # YAML/TOML may parse `expires` as a datetime: validate a JSON-shaped copy.
            data = {
                **data,
                "tokens": [
                    {k: (v.isoformat() if isinstance(v, (datetime, date)) else v) for k, v in entry.items()}
                    if isinstance(entry, Mapping)
                    else entry
                    for entry in data.get("tokens", [])
                ]
                if isinstance(data.get("tokens"), list)
                else data.get("tokens"),
            }
        errors = sorted(_VALIDATOR.iter_errors(data), key=lambda e: [str(p) for p in e.absolute_path])
        if errors:
            raise ConfigValidationError(
                source,
                [
                    Problem(format_path(e.absolute_path), e.message.replace(" is a required property", " is required"))
                    for e in errors
                ],
            )
        entries: dict[str, TableEntry] = {}
        problems: list[Problem] = []
        for i, raw in enumerate(data["tokens"]):
            where = format_path(["tokens", i])
            if ("sha256" in raw) == ("token" in raw):
                problems.append(Problem(where, "give exactly one of sha256 (preferred) or token"))
                continue
            digest = str(raw["sha256"]).lower() if "sha256" in raw else token_digest(raw["token"])
            if digest in entries:
                problems.append(Problem(where, "the same token appears twice"))
                continue
            try:
                identity = Identity.checked(raw["tenant"], raw.get("user"), raw.get("groups"))
            except IdentityError as exc:
                problems.append(Problem(where, str(exc)))
                continue
            expires = _expiry(raw["expires"], f"{where}.expires") if "expires" in raw else None
            entries[digest] = TableEntry(identity, expires, frozenset(raw.get("scopes", ())))
        if problems:
            raise ConfigValidationError(source, problems)
        return cls(entries)

    @classmethod
    def load(cls, path: str | Path) -> TokenTable:
        from scopegate.config.loader import format_of, parse_config_text  # the config's own parser and limits

        p = Path(path)
        try:
            text = p.read_text("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"auth.token_table: cannot read {p}: {exc}") from exc
        return cls.from_data(parse_config_text(text, format_of(p), source=str(p)), str(p))

    async def check(self, token: str) -> Verification | None:
        """The table's verdict (a :class:`~scopegate.identity.tokens.TokenCheck`); None for a token it lacks.
        A token shorter than the rule is refused as ``token_too_short`` (other checks may still accept it)."""
        if len(token) < MIN_TOKEN_CHARS:
            return Verification.refused(TOO_SHORT)
        if len(token) > MAX_TOKEN_CHARS:
            return None
        entry = self._entries.get(token_digest(token))
        if entry is None:
            return None
        if entry.expires_at is not None and time.time() >= entry.expires_at:
            return Verification.refused("expired")
        return Verification(
            VerifiedToken(entry.identity, "table", scopes=entry.scopes, expires_at=entry.expires_at), "ok"
        )
