"""Errors: one exception tree for developers, structured envelopes for models.

Developers (application code, CLI) get exceptions derived from ScopegateError.
Models never see an exception: every tool failure is a ToolError envelope,
``{"status": "error", "error_code": ..., "message": ..., "retryable": ...}``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

# ConfigValidationError's summary lists at most this many problems.
MAX_PROBLEMS = 50


class ScopegateError(Exception):
    """Base of every exception scopegate raises to application code.

    Each subclass that replaces a built-in exception used before (``ValueError``
    for bad arguments, ``KeyError`` for unknown names) also derives from that
    built-in, so ``except ValueError`` in existing code keeps working.
    """


class ConfigError(ScopegateError, ValueError):
    """A spec, mapping or configuration object is invalid."""


class UnknownNameError(ScopegateError, KeyError):
    """A lookup by name (tool, operation, index) found nothing; ``name`` says what was asked for."""

    def __init__(self, kind: str, name: str, known: tuple[str, ...] | list[str] = ()) -> None:
        self.kind = kind
        self.name = name
        self.known = tuple(known)
        shown = ", ".join(self.known[:20]) + (" ..." if len(self.known) > 20 else "")
        super().__init__(f"no {kind} named {name!r}" + (f"; known: {shown}" if self.known else ""))

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else ""


class IngestError(ScopegateError):
    """Ingest could not proceed (unreadable input, bad mapping, engine refused, disk full).

    ``committed`` and ``commits`` say what had been committed (durably, and
    visible to searches) before the failure, when a write had started.
    """

    def __init__(self, message: str, *, committed: int | None = None, commits: int | None = None) -> None:
        super().__init__(message)
        self.committed = committed
        self.commits = commits


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


class FieldUnavailable(BackendError):
    """The index lacks a field a tool needs (e.g. a date field added to the spec after it was built)."""

    def __init__(self, field: str, why: str) -> None:
        super().__init__(f"field {field!r} {why}", retryable=False, code="FIELD_UNAVAILABLE")
        self.field = field


class EngineNodeError(ScopegateError):
    """A local engine node (e.g. the test OpenSearch node) could not be built or started."""


class ScopeMissing(ScopegateError):
    """Session state holds no usable scope (tools turn it into a ``NO_SCOPE`` envelope)."""


class ScopeNotCarried(ConfigError):
    """Groups or a user were given for a tool whose scope keys have no state key for them."""


class MissingExtraError(ScopegateError):
    """A feature needs an optional extra that is not installed (``pip install 'scopegate[<extra>]'``)."""

    def __init__(self, extra: str, module: str) -> None:
        super().__init__(f"this needs the {extra!r} extra (module {module!r} is not installed): {install_hint(extra)}")
        self.extra = extra
        self.module = module


def install_hint(extra: str) -> str:
    return f"pip install 'scopegate[{extra}]'"


class IdentityError(ScopegateError, ValueError):
    """Verified credentials do not name a usable identity (no tenant, malformed ids)."""


class ScopeTrustWarning(ScopegateError, UserWarning):
    """A warning category: tools read scope from session state that clients of the ADK server can write."""


class NoCredentials(ScopegateError):
    """No alternative of an operation's security requirement could be satisfied (``NOT_AUTHORIZED``).

    ``code`` and ``retryable`` are what the model is told; ``str()`` is for operators (never a secret).
    """

    code = "NOT_AUTHORIZED"
    retryable = False
    public_message = "No credentials for this operation are available in this session."


class CredentialUnavailable(NoCredentials):
    """A per-user downstream credential could not be obtained (the provider refused or failed a token exchange).

    Nothing is sent downstream. ``code`` is ``NOT_AUTHORIZED`` (refused: the user's token does not allow it)
    or ``UNAVAILABLE`` (the provider could not be reached; ``retryable``).
    """

    def __init__(self, message: str, *, code: str = "NOT_AUTHORIZED", retryable: bool = False, public: str) -> None:
        super().__init__(message)
        self.code = code
        self.retryable = retryable
        self.public_message = public


class ProviderUnavailable(ScopegateError):
    """The identity provider did not answer usably (network, timeout, an HTTP error, malformed metadata or keys)."""


class KeyRefreshPending(ProviderUnavailable):
    """A token names a signing key the cached JWKS lacks, and the next refresh is allowed in ``retry_after`` s."""

    def __init__(self, retry_after: float) -> None:
        super().__init__(f"unknown signing key; the key set may be refreshed in {retry_after:.1f}s")
        self.retry_after = retry_after


class ResponseUnreadable(ScopegateError):
    """A response body the OpenAPI runtime will not read (``UPSTREAM_ERROR``). ``reason``:
    ``"encoding"`` (an unsupported, too deep or too wide stack of content codings) or
    ``"decode"`` (broken compressed data)."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason


class ArgumentsInvalid(ScopegateError, ValueError):
    """The arguments do not fit an operation. ``problems``: ``[{"field", "problem"}]`` (``BAD_ARGUMENTS``)."""

    def __init__(self, problems: list[dict[str, str]]) -> None:
        super().__init__("; ".join(f"{p['field']}: {p['problem']}" for p in problems))
        self.problems = problems


class ToolFailure(ScopegateError):
    """Raised by a hand-written tool to answer the model with an error envelope of its choosing.

    ``code`` is an upper-case error code (``NOT_FOUND``, ``CONFLICT``, ...) and ``message`` text
    written *for the model* (it is shown, bounded); ``extra`` adds JSON-able keys (``allowed``,
    ``hint``). Any other exception a tool raises becomes ``INTERNAL`` and its text is never shown.
    """

    def __init__(self, code: str, message: str, *, retryable: bool = False, **extra: Any) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.retryable = retryable
        self.extra = extra


class ConfirmationRequired(ScopegateError):
    """Raised by ``AppContext.confirm`` when the user has not approved yet: the call stops, the user is asked.

    Do not catch it. Catching it changes nothing: the call still answers ``CONFIRMATION_REQUIRED``
    and no state-changing sibling tool can run before the approval.
    """

    def __init__(self, hint: str, payload: dict[str, Any]) -> None:
        super().__init__(hint)
        self.hint = hint
        self.payload = payload


class CompositionError(ScopegateError):
    """A hand-written tool used its sibling tools or confirmation wrongly (a bug in the tool, answered ``INTERNAL``)."""


# -- configuration documents, specs and models -----------------------------------------------
class DocumentError(ConfigError):
    """A document could not be read or parsed, or breaks a limit; names the file and line when known."""

    def __init__(self, source: str, problem: str, line: int | None = None, column: int | None = None) -> None:
        self.source = source
        self.problem = problem
        self.line = line
        self.column = column
        where = source if line is None else f"{source}:{line}" + (f":{column}" if column is not None else "")
        super().__init__(f"{where}: {problem}")


class ConfigValidationError(ConfigError):
    """A spec or config is invalid; ``problems`` lists every problem found, each with its key path."""

    def __init__(self, source: str, problems: Sequence[Any]) -> None:
        self.source = source
        self.problems = list(problems)
        shown = self.problems[:MAX_PROBLEMS]
        more = len(self.problems) - len(shown)
        lines = [f"{source}: {len(self.problems)} problem(s)"]
        lines += [f"  - {source}:{p.line}: {p}" if p.line is not None else f"  - {p}" for p in shown]
        if more > 0:
            lines.append(f"  ... and {more} more")
        super().__init__("\n".join(lines))


class ProblemsFound(ScopegateError):
    """Problems at several key paths, raised by a model's last validator (checks across sections).

    Deliberately not a ``ValueError``: pydantic lets it through unchanged instead of folding it
    into one error at the model's own path, so each problem keeps its own path. The loader and
    the model constructors turn it into a :class:`ConfigValidationError`.
    """

    def __init__(self, problems: Sequence[Any]) -> None:
        super().__init__(f"{len(problems)} problem(s)")
        self.problems = list(problems)


class FeatureUnavailable(ConfigError):
    """A config section needs a part of scopegate that is not installed (the cause is the ImportError)."""

    @classmethod
    def missing(cls, feature: str, extra: str, exc: ImportError) -> FeatureUnavailable:
        module = exc.name or "a dependency"
        return cls(f"{feature} needs the {extra!r} extra ({module} is not installed): {install_hint(extra)}")


# -- OpenAPI specs: loading, selection, translation (all found at construction time) -------------
class OpenAPIError(ConfigError):
    """Base of every OpenAPI loading/selection/translation error."""


class SpecLoadError(OpenAPIError):
    """The spec could not be read or parsed, or is not Swagger 2.0 / OpenAPI 3.x."""


class RefError(OpenAPIError):
    """A ``$ref`` could not be resolved (missing target, forbidden external file, loop)."""

    def __init__(self, ref: str, reason: str, *, where: str = "") -> None:
        self.ref = ref
        self.reason = reason
        self.where = where
        at = f" (in {where})" if where else ""
        super().__init__(f"cannot resolve $ref {ref!r}{at}: {reason}")


class MissingOperationsError(OpenAPIError):
    """Allowlisted operations are absent from the spec. Lists every one of them."""

    def __init__(self, missing: Sequence[str], suggestions: dict[str, list[str]] | None = None, note: str = "") -> None:
        self.missing = tuple(missing)
        self.suggestions = dict(suggestions or {})
        lines = [f"{len(self.missing)} allowlisted operation(s) not found in the spec:"]
        for label in self.missing:
            hint = self.suggestions.get(label)
            lines.append(f"  - {label}" + (f" (did you mean: {', '.join(hint)}?)" if hint else ""))
        if note:
            lines.append(note)
        super().__init__("\n".join(lines))


class SelectionError(OpenAPIError):
    """An allowlist or rule set is contradictory or ambiguous."""


class TranslationError(OpenAPIError):
    """An operation cannot be turned into a tool declaration."""

    def __init__(self, operation: str, reason: str) -> None:
        self.operation = operation
        self.reason = reason
        super().__init__(f"cannot translate {operation}: {reason}")


class UnsupportedOperation(ConfigError):
    """The operation cannot be called safely by this runtime (raised at construction)."""


# -- identity ---------------------------------------------------------------------------------
class SignatureInvalid(IdentityError):
    """A signed scope was missing, malformed, altered, expired or issued for another session.

    ``reason`` is one of ``missing``, ``malformed``, ``unknown_key``,
    ``bad_signature``, ``expired``, ``no_expiry``, ``lifetime_too_long``, ``not_yet_valid``, ``bad_identity``.
    """

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"signed scope refused: {reason}" + (f" ({detail})" if detail else ""))
        self.reason = reason


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
CONFIRMATION_UNAVAILABLE = "CONFIRMATION_UNAVAILABLE"
# An approval sent again after it ran its call (MCP 2026-07-28): one approval, one call.
CONFIRMATION_USED = "CONFIRMATION_USED"
# The caller's access token lacks the scopes a tool needs (MCP over HTTP; the gate answers 403 first).
INSUFFICIENT_SCOPE = "INSUFFICIENT_SCOPE"


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
