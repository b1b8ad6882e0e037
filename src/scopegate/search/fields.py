"""How a document's text fields feed the engines: the combined field, the embedded text, query terms.

Pure functions shared by every backend, so the embedded engine, OpenSearch
and Elasticsearch index and query the same text the same way.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scopegate.search.analysis import analyze
from scopegate.search.spec import SearchSpec

# Bounds the query size: one term clause per occurrence, at most this many.
MAX_QUERY_OCCURRENCES = 128


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, list):
        return "\n".join(str(v) for v in value)
    return str(value)


def combined_text(spec: SearchSpec, record: Mapping[str, Any]) -> str:
    """The catch-all text behind ``combined_fields``: each field repeated by its integer weight.

    Repeating a field w times multiplies its term frequencies and its length by
    w in one field, which is BM25F's weighted term frequency and length: the
    score of ``combined_fields`` in Elasticsearch, reproduced identically on
    engines that lack it (tantivy, OpenSearch).
    """
    parts: list[str] = []
    for name, copies in spec.combined_weights():
        text = _text(record.get(name)).strip()
        if text:
            parts.extend([text] * copies)
    return "\n".join(parts)


def embedding_text(spec: SearchSpec, record: Mapping[str, Any]) -> str:
    """The text a document is embedded from: its embedded fields, newline-joined."""
    return "\n".join(t for t in (_text(record.get(n)).strip() for n in spec.embedded_fields()) if t)


def query_terms(text: str, limit: int = MAX_QUERY_OCCURRENCES) -> list[str]:
    """Analysed query terms in order with repeats kept (a repeated word weighs more, as in Lucene)."""
    return analyze(text)[:limit]
