"""Errors: one exception tree for developers, structured envelopes for models.

Developers (application code, CLI) get exceptions derived from ScopegateError.
Models never see an exception: every tool failure is a ToolError envelope,
``{"status": "error", "error_code": ..., "message": ..., "retryable": ...}``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


class ScopegateError(Exception):
    """Base of every exception scopegate raises to application code."""


class ConfigError(ScopegateError):
    """A spec, mapping or configuration object is invalid."""


class IngestError(ScopegateError):
    """Ingest could not proceed (unreadable input, bad mapping, engine refused)."""


class BackendError(ScopegateError):
    """An engine or API backend failed; ``retryable`` says whether a retry may help."""

    def __init__(self, message: str, *, retryable: bool = True, code: str = "SEARCH_UNAVAILABLE") -> None:
        super().__init__(message)
        self.retryable = retryable
        self.code = code


class MissingIndexError(BackendError):
    """The index or alias a tool points at does not exist."""

    def __init__(self, name: str) -> None:
        super().__init__(f"index or alias {name!r} does not exist", retryable=False, code="INDEX_MISSING")
        self.name = name


class EngineNodeError(ScopegateError):
    """A local engine node (e.g. the test OpenSearch node) could not be built or started."""


# Error codes a model can see. Kept as constants so tests and adapters agree.
BAD_QUERY = "BAD_QUERY"
BAD_FILTER = "BAD_FILTER"
BAD_PAGE = "BAD_PAGE"
BAD_ARGUMENTS = "BAD_ARGUMENTS"
NO_SCOPE = "NO_SCOPE"
NOT_FOUND = "NOT_FOUND"
SEARCH_UNAVAILABLE = "SEARCH_UNAVAILABLE"
INDEX_MISSING = "INDEX_MISSING"
CALL_LIMIT = "CALL_LIMIT"
RATE_LIMITED = "RATE_LIMITED"
INTERNAL = "INTERNAL"
# OpenAPI tools (HTTP and network failures, confirmation).
BAD_REQUEST = "BAD_REQUEST"
NOT_AUTHORIZED = "NOT_AUTHORIZED"
CONFLICT = "CONFLICT"
UPSTREAM_ERROR = "UPSTREAM_ERROR"
TIMEOUT = "TIMEOUT"
UNAVAILABLE = "UNAVAILABLE"
REDIRECT_BLOCKED = "REDIRECT_BLOCKED"
RESPONSE_TOO_LARGE = "RESPONSE_TOO_LARGE"
CONFIRMATION_REQUIRED = "CONFIRMATION_REQUIRED"
CONFIRMATION_REJECTED = "CONFIRMATION_REJECTED"


@dataclass(frozen=True)
class ToolError:
    """A failure as the model sees it. Never carries a stack trace or a secret."""

    error_code: str
    message: str
    retryable: bool = False
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "status": "error",
            "error_code": self.error_code,
            "message": self.message,
            "retryable": self.retryable,
        }
        out.update(self.extra)
        return out


def tool_error(code: str, message: str, *, retryable: bool = False, **extra: Any) -> dict[str, Any]:
    """Shorthand for ``ToolError(...).to_dict()``."""
    return ToolError(code, message, retryable, dict(extra)).to_dict()


def is_error(result: dict[str, Any]) -> bool:
    return result.get("status") == "error"
