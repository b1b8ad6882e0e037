"""The per-call context every tool receives from an adapter (ADK, MCP, CLI)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scopegate.files import FileSource


class SubjectToken:
    """The caller's own bearer token, as the adapter received it, for per-user downstream credentials.

    Only a credential source that trades it at the identity provider (RFC 8693
    token exchange, :class:`scopegate.openapi.runtime.FromSubject`) reads it.
    It is never put in session state, call logs, caches or downstream requests,
    and its ``repr`` never shows it. ``tenant`` and ``user`` are the identity the
    adapter verified it as (MCP over HTTP), ``scopes`` what it grants; a token
    without them is unverified (ADK: the run's ``temp:`` state), and whoever
    uses it verifies it first.
    """

    __slots__ = ("_value", "expires_at", "issuer", "scopes", "subject", "tenant", "user")

    def __init__(
        self,
        value: str,
        *,
        tenant: str | None = None,
        user: str | None = None,
        subject: str | None = None,
        issuer: str | None = None,
        expires_at: float | None = None,
        scopes: frozenset[str] = frozenset(),
    ) -> None:
        self._value = value
        self.scopes = scopes
        self.tenant = tenant
        self.user = user
        self.subject = subject
        self.issuer = issuer
        self.expires_at = expires_at

    def reveal(self) -> str:
        return self._value

    @property
    def verified(self) -> bool:
        return self.tenant is not None

    def __repr__(self) -> str:
        return f"SubjectToken('***', subject={self.subject!r}, verified={self.verified})"

    __str__ = __repr__


@dataclass(frozen=True)
class CallContext:
    """What an adapter knows about one tool call, besides the model's arguments.

    ``state`` is server-side session state (ADK ``tool_context.state`` or the
    identity an MCP server verified). Tools read scope from it and nothing else.
    """

    state: Mapping[str, Any]
    invocation_id: str | None = None
    session_id: str | None = None
    # Set by adapters that implement a confirmation flow: True approved, False
    # rejected, None not asked yet.
    confirmed: bool | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    # The caller's bearer token, when the adapter has one (see SubjectToken); never part of scope.
    subject_token: SubjectToken | None = field(default=None, repr=False, compare=False)
    # The session's files a tool may upload (ADK artifacts, an MCP user's uploads); the model only names one.
    files: FileSource | None = field(default=None, repr=False, compare=False)
    # Whether the caller's token permits a tool, asked as ``may_use(name, family, read_only)``: set by
    # adapters that know the token's scopes (MCP over HTTP with ``auth.scopes``, ADK with a scope check).
    # A tool that runs other tools (the OpenAPI catalog) asks it for each one; None: no per-tool scopes.
    may_use: Callable[[str, str, bool], bool] | None = field(default=None, repr=False, compare=False)
