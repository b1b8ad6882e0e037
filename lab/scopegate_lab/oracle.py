"""Ground truth for search tests: which documents a scoped query must match, by brute force.

A document matches when it belongs to the tenant, passes every filter, and shares
at least one analysed term with the query in any text field: the semantics of the
search tool on every backend (an OR of terms, scope and filters as exact clauses).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from scopegate.search.analysis import analyze
from scopegate.search.spec import SearchSpec


def expected_total(
    spec: SearchSpec,
    documents: Iterable[Mapping[str, Any]],
    query: str,
    tenant: str,
    filters: Mapping[str, str] | None = None,
) -> int:
    """How many of ``documents`` a search for ``query`` in ``tenant`` with ``filters`` must count."""
    terms = set(analyze(" ".join(query.split())))
    wanted = dict(filters or {})
    count = 0
    for doc in documents:
        if doc.get(spec.tenant_field) != tenant or any(doc.get(k) != v for k, v in wanted.items()):
            continue
        text = " ".join(str(doc.get(name) or "") for name in spec.text_field_names())
        if terms & set(analyze(text)):
            count += 1
    return count
