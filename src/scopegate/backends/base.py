"""The tiny protocol every search backend implements.

A new engine is one module that implements :class:`SearchBackend`. Backends
raise :class:`scopegate.errors.BackendError` (or a subclass) on failure; tools
turn that into a structured result for the model.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from scopegate.scope import Scope
from scopegate.search.model import RawResult, SearchQuery
from scopegate.search.spec import SearchSpec

ProgressCallback = Callable[[int], None]


@dataclass
class IngestReport:
    """What an ingest did. ``errors`` holds (document id or line, reason) pairs."""

    indexed: int = 0
    deleted: int = 0
    failed: int = 0
    commits: int = 0
    seconds: float = 0.0
    errors: list[tuple[str, str]] = field(default_factory=list)

    @property
    def docs_per_second(self) -> float:
        return self.indexed / self.seconds if self.seconds > 0 else 0.0


@runtime_checkable
class SearchBackend(Protocol):
    spec: SearchSpec

    async def search(self, query: SearchQuery) -> RawResult:
        """Run a query with scope and filters inside the engine."""
        ...

    async def get(self, doc_id: str, scope: Scope) -> dict[str, Any] | None:
        """Return the stored fields of one document, only if it is inside scope."""
        ...

    async def ingest(
        self,
        documents: Iterable[Mapping[str, Any]],
        *,
        batch_size: int = 10_000,
        progress: ProgressCallback | None = None,
    ) -> IngestReport:
        """Upsert documents (already mapped to spec field names) by id."""
        ...

    async def delete(self, doc_ids: Iterable[str]) -> int:
        """Delete documents by id; returns how many ids were submitted."""
        ...

    async def generation(self) -> str:
        """A token that changes whenever the searchable data changes (cache invalidation)."""
        ...

    def analyze(self, text: str) -> list[str]:
        """Terms of ``text`` as the engine's analyzer would produce (used for snippets)."""
        ...

    async def close(self) -> None: ...
