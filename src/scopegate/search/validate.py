"""Validation of the model's search arguments against the spec.

Returns a :class:`SearchRequest` or an error envelope; never raises.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from typing import Any

from scopegate.errors import BAD_ARGUMENTS, BAD_FILTER, BAD_PAGE, BAD_QUERY, tool_error
from scopegate.search.model import SearchRequest
from scopegate.search.spec import SearchSpec

_ALLOWED_WHITESPACE = {"\t", "\n", "\r"}


def _has_control_chars(text: str) -> bool:
    for ch in text:
        if ch in _ALLOWED_WHITESPACE:
            continue
        if unicodedata.category(ch) in {"Cc", "Cf", "Cs", "Co", "Cn"}:
            return True
    return False


def normalise_query(text: str) -> str:
    """Fold whitespace runs to one space and trim (case is kept for display)."""
    return " ".join(text.split())


def _preview(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def validate_search_args(spec: SearchSpec, args: Mapping[str, Any]) -> SearchRequest | dict[str, Any]:
    if not isinstance(args, Mapping):
        return tool_error(BAD_ARGUMENTS, "arguments must be an object", allowed=list(spec.argument_names()))
    allowed_names = spec.argument_names()
    unknown = sorted(str(k)[:64] for k in args if k not in allowed_names)
    if unknown:
        return tool_error(
            BAD_ARGUMENTS,
            f"unknown argument(s): {', '.join(unknown)}. Scope is set by the server, not by arguments.",
            allowed=list(allowed_names),
        )

    query = args.get("query")
    if not isinstance(query, str):
        return tool_error(BAD_QUERY, "query is required and must be a string of keywords")
    if _has_control_chars(query):
        return tool_error(BAD_QUERY, "query contains control characters; send plain keywords")
    text = normalise_query(query)
    if len(text) < spec.min_query_chars:
        return tool_error(BAD_QUERY, "query is empty; send one or more keywords")
    if len(text) > spec.max_query_chars:
        return tool_error(
            BAD_QUERY,
            f"query is {len(text)} characters; the limit is {spec.max_query_chars}. Use fewer, more specific keywords.",
        )

    filters: list[tuple[str, str]] = []
    for f in spec.filters:
        if f.name not in args or args[f.name] is None:
            continue
        value = args[f.name]
        if not isinstance(value, str) or value not in f.allowed:
            return tool_error(
                BAD_FILTER,
                f"{f.name} must be one of the allowed values, got {_preview(value)}",
                field=f.name,
                allowed=list(f.allowed),
            )
        filters.append((f.name, value))

    page_raw = args.get("page", 1)
    if page_raw is None:
        page_raw = 1
    page: int
    if isinstance(page_raw, bool):
        return tool_error(BAD_PAGE, f"page must be an integer from 1 to {spec.max_page}")
    if isinstance(page_raw, int):
        page = page_raw
    elif isinstance(page_raw, float) and page_raw.is_integer():
        # Function-calling models often send JSON numbers as floats (2.0).
        page = int(page_raw)
    else:
        return tool_error(BAD_PAGE, f"page must be an integer from 1 to {spec.max_page}, got {_preview(page_raw)}")
    if not 1 <= page <= spec.max_page:
        return tool_error(
            BAD_PAGE,
            f"page must be from 1 to {spec.max_page}; deeper pages are not served. Refine the keywords instead.",
        )
    return SearchRequest(query=text, filters=tuple(filters), page=page)


def validate_fetch_args(spec: SearchSpec, args: Mapping[str, Any]) -> str | dict[str, Any]:
    if not isinstance(args, Mapping):
        return tool_error(BAD_ARGUMENTS, "arguments must be an object", allowed=["id"])
    unknown = sorted(str(k)[:64] for k in args if k != "id")
    if unknown:
        return tool_error(
            BAD_ARGUMENTS,
            f"unknown argument(s): {', '.join(unknown)}. Scope is set by the server, not by arguments.",
            allowed=["id"],
        )
    doc_id = args.get("id")
    if not isinstance(doc_id, str) or not doc_id.strip():
        return tool_error(BAD_ARGUMENTS, f"id is required: the {spec.id_field} shown in a search result")
    doc_id = doc_id.strip()
    if len(doc_id) > 256 or _has_control_chars(doc_id):
        return tool_error(BAD_ARGUMENTS, "id is not a valid document id")
    return doc_id
