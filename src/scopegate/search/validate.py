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
from scopegate.text import preview

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


EMPTY_QUERY_MESSAGE = "query is empty; send one or more keywords"


def empty_query_hint(spec: SearchSpec) -> str:
    """What an empty query can become: keywords, or (with a filter) a listing."""
    if not spec.filters:
        return "Send keywords, such as words from the subject or an error code."
    names = " or ".join(f.name for f in spec.filters)
    order = "newest first" if spec.date_field else "in index order"
    return f"Send keywords, or leave query empty and set {names} to list matching documents ({order})."


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

    filters = validate_filters(spec, args)
    if isinstance(filters, dict):
        return filters

    query = args.get("query")
    if query is None and filters:
        query = ""  # a filter-only listing
    if not isinstance(query, str):
        return tool_error(BAD_QUERY, "query is required and must be a string of keywords")
    if _has_control_chars(query):
        return tool_error(BAD_QUERY, "query contains control characters; send plain keywords")
    text = normalise_query(query)
    if not text and not filters:
        return tool_error(BAD_QUERY, EMPTY_QUERY_MESSAGE, hint=empty_query_hint(spec))
    if text and len(text) < spec.min_query_chars:
        return tool_error(BAD_QUERY, f"query is shorter than {spec.min_query_chars} characters; send keywords")
    if len(text) > spec.max_query_chars:
        return tool_error(
            BAD_QUERY,
            f"query is {len(text)} characters; the limit is {spec.max_query_chars}. Use fewer, more specific keywords.",
        )

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
        return tool_error(BAD_PAGE, f"page must be an integer from 1 to {spec.max_page}, got {preview(page_raw)}")
    if not 1 <= page <= spec.max_page:
        return tool_error(
            BAD_PAGE,
            f"page must be from 1 to {spec.max_page}; deeper pages are not served. Refine the keywords instead.",
        )
    return SearchRequest(query=text, filters=filters, page=page)


def validate_filters(spec: SearchSpec, args: Mapping[str, Any]) -> tuple[tuple[str, str], ...] | dict[str, Any]:
    """The chosen filters as ``(name, value)`` pairs in spec order, or a ``BAD_FILTER`` envelope."""
    filters: list[tuple[str, str]] = []
    for f in spec.filters:
        if f.name not in args or args[f.name] is None:
            continue
        value = args[f.name]
        if not isinstance(value, str) or value not in f.allowed:
            return tool_error(
                BAD_FILTER,
                f"{f.name} must be one of the allowed values, got {preview(value)}",
                field=f.name,
                allowed=list(f.allowed),
            )
        filters.append((f.name, value))
    return tuple(filters)


# Integers a JSON client's float can hold exactly: beyond this a number sent as an id may have been rounded.
_EXACT_FLOAT = 2**53


def id_text(value: Any) -> str | None:
    """The id a fetch asks for, as text: a string (stripped), or a whole number when that is unambiguous (a model
    that sends ``13404344`` for the id ``"13404344"``); None for anything else (bool, fraction, list, ...)."""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float) and value.is_integer() and abs(value) < _EXACT_FLOAT:
        return str(int(value))
    return None


def _kind_of(value: Any) -> str:
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, float):
        return f"the number {value!r}"[:80]
    if isinstance(value, list):
        return "a list"
    return "an object" if isinstance(value, dict) else f"a {type(value).__name__}"


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
    raw = args.get("id")
    doc_id = id_text(raw)
    if doc_id is None and raw is not None and not (isinstance(raw, str) and not raw.strip()):
        return tool_error(
            BAD_ARGUMENTS,
            f"id must be one string: send the {spec.id_field} exactly as a search result showed it, in quotes "
            f"(got {_kind_of(raw)})",
        )
    if not doc_id:
        return tool_error(BAD_ARGUMENTS, f"id is required: the {spec.id_field} shown in a search result")
    if len(doc_id) > 256 or _has_control_chars(doc_id):
        return tool_error(BAD_ARGUMENTS, "id is not a valid document id")
    return doc_id
