"""Argument normalisation shared by the search tools' cache keys and call-log fields.

Two calls that differ only in the case or spacing of their keywords, or in the
order of their filters, are the same search: they share a cache entry and log
the same normalised query.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def normalise_keywords(text: str) -> str:
    """Case and whitespace folded: ``"  Refund\\tFAILED "`` -> ``"refund failed"``."""
    return " ".join(text.split()).lower()


def _plain_page(value: Any) -> Any:
    if isinstance(value, float) and not isinstance(value, bool) and value.is_integer():
        return int(value)
    return value


def search_cache_args(args: Mapping[str, Any]) -> list[Any]:
    """Normalised search arguments: ``[keywords, sorted filters, page]``.

    Only ``query`` is folded; every other argument is a filter kept verbatim
    (``None`` means "not set" and is dropped, as the tools treat it).
    """
    query = args.get("query")
    keywords = normalise_keywords(query) if isinstance(query, str) else query
    page = _plain_page(args.get("page", 1))
    if page is None:
        page = 1
    # Argument names are unique, so sorting by name alone is a total order.
    filters = sorted(
        ([str(k), v] for k, v in args.items() if k not in ("query", "page") and v is not None), key=lambda p: p[0]
    )
    return [keywords, filters, page]
