"""The tiny protocol every search backend implements.

A new engine is one module that implements :class:`SearchBackend`. Backends
raise :class:`scopegate.errors.BackendError` (or a subclass) on failure; tools
turn that into a structured result for the model.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from scopegate.scope import Scope, id_problem
from scopegate.search.aggregation import AggregationQuery, RawAggregation
from scopegate.search.dates import date_problem
from scopegate.search.model import RawResult, SearchQuery
from scopegate.search.spec import SearchSpec

ProgressCallback = Callable[[int], None]
# Elasticsearch and OpenSearch cap a keyword term at 32766 bytes; ids are kept far below.
MAX_DOC_ID_BYTES = 512


def document_problem(spec: SearchSpec, record: Mapping[str, Any], date_field: str | None = None) -> str | None:
    """Why ``record`` cannot be indexed, or None. The same rule on every backend.

    The id must be a non-blank string of at most 512 bytes (surrounding
    whitespace is dropped from it, on every backend). The tenant and each
    group must follow the identity rule (:func:`scopegate.scope.id_problem`):
    a tenant such as ``"acme "`` is refused, never stored as another tenant.
    ``date_field``: the date field the index stores, whose value must parse (None: no date check).
    """
    doc_id = record.get(spec.id_field)
    if not isinstance(doc_id, str) or not doc_id.strip():
        return f"missing {spec.id_field}"
    if len(doc_id.strip().encode("utf-8", "surrogatepass")) > MAX_DOC_ID_BYTES:
        return f"{spec.id_field} longer than {MAX_DOC_ID_BYTES} bytes"
    tenant = record.get(spec.tenant_field)
    if tenant is None or tenant == "":
        return f"missing {spec.tenant_field}"
    problem = id_problem(tenant, spec.tenant_field)
    if problem is not None:
        return problem
    if spec.group_field:
        groups = record.get(spec.group_field)
        for group in [groups] if isinstance(groups, str) else list(groups or ()):
            problem = id_problem(group, spec.group_field)
            if problem is not None:
                return problem
    return date_problem(date_field, record)


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

    async def aggregate(self, query: AggregationQuery) -> RawAggregation:
        """Count in-scope documents per value or date bucket (one terms / date aggregation inside the engine)."""
        ...

    def aggregation_problems(self, fields: Sequence[str]) -> list[str]:
        """Why ``fields`` cannot be counted by this backend's index (missing, not aggregatable); [] when they can.

        What the backend can tell without I/O; engines that learn it only from the server check
        again on the first :meth:`aggregate` and raise :class:`~scopegate.errors.FieldUnavailable`.
        """
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

    async def delete(self, doc_ids: Iterable[str], *, tenant: str) -> int:
        """Delete documents ``(tenant, id)``; another tenant's document with the same id is untouched.

        Returns how many ids were submitted."""
        ...

    async def generation(self) -> str:
        """A token that changes whenever the data searches see changes (cache invalidation).

        Derived from the engine, so every process reading the same data agrees
        on it, and never newer than what the next search reads: a result
        computed after reading generation G reflects G or a later state.
        """
        ...

    def analyze(self, text: str) -> list[str]:
        """Terms of ``text`` as the engine's analyzer would produce (used for snippets)."""
        ...

    async def close(self) -> None: ...
