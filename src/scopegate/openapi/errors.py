"""Exceptions raised while loading, selecting and translating OpenAPI specs.

All derive from :class:`scopegate.errors.ConfigError`: a bad spec or a bad
allowlist is a configuration problem found at construction time, never at
call time. Messages name the spec element at fault (ref, operation, file) and
never include credentials.
"""

from __future__ import annotations

from collections.abc import Sequence

from scopegate.errors import ConfigError


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
