"""Plain data passed between validation, query building, backends and the shaper."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from scopegate.scope import Scope

TotalRelation = Literal["eq", "gte"]


@dataclass(frozen=True)
class SearchRequest:
    """Validated model arguments. Holds no scope: that is added server-side."""

    query: str
    filters: tuple[tuple[str, str], ...] = ()
    page: int = 1

    def filters_dict(self) -> dict[str, str]:
        return dict(self.filters)


@dataclass(frozen=True)
class SearchQuery:
    """An engine-neutral query: validated request + scope + bounds.

    ``text`` is plain words. Backends analyse it into terms; no backend hands
    it to a query-string parser.
    """

    text: str
    scope: Scope
    filters: tuple[tuple[str, str], ...]
    offset: int
    limit: int
    track_total_up_to: int
    engine_timeout_s: float
    client_timeout_s: float

    @property
    def listing(self) -> bool:
        """No keywords: list the in-scope documents matching the filters, newest first (by the date field)."""
        return not self.text


@dataclass(frozen=True)
class RawHit:
    doc_id: str
    score: float
    fields: dict[str, Any]


@dataclass(frozen=True)
class RawResult:
    hits: tuple[RawHit, ...]
    total: int
    total_relation: TotalRelation = "eq"
    partial: bool = False
    partial_reason: str | None = None
    took_ms: float | None = None
    terms: tuple[str, ...] = field(default=())
