"""The search tool and the fetch-by-id tool, framework-neutral.

Both implement :class:`scopegate.tools.ScopedTool` and
:class:`scopegate.tools.Cacheable`: adapters (ADK, MCP) and the guard layer
wrap them. ``run`` never raises; every failure is an envelope, and the call-log
fields come back with the result, computed from what ``run`` validated.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Mapping
from typing import Any

from scopegate.backends.base import SearchBackend
from scopegate.context import CallContext
from scopegate.errors import (
    BAD_QUERY,
    INTERNAL,
    NO_SCOPE,
    NOT_FOUND,
    SEARCH_UNAVAILABLE,
    BackendError,
    MissingIndexError,
    tool_error,
)
from scopegate.scope import Scope, ScopeMissing, read_scope
from scopegate.search.analysis import unique_terms
from scopegate.search.model import RawHit, RawResult, SearchQuery, SearchRequest
from scopegate.search.normalise import normalise_keywords, search_cache_args
from scopegate.search.shaper import shape_document, shape_search
from scopegate.search.spec import SearchSpec
from scopegate.search.validate import id_text, validate_fetch_args, validate_search_args
from scopegate.tools import LogFields, ToolOutcome

log = logging.getLogger("scopegate.search")

NO_SCOPE_MESSAGE = "No tenant is set for this session, so nothing can be searched. Ask the user to sign in again."


def _scope(spec: SearchSpec, ctx: CallContext) -> Scope:
    return read_scope(ctx.state, spec.scope_keys, require_groups=spec.group_field is not None)


def backend_failure(exc: BaseException, spec: SearchSpec) -> dict[str, Any]:
    if isinstance(exc, MissingIndexError):
        return tool_error(
            SEARCH_UNAVAILABLE,
            f"the search index {exc.name!r} is missing; searching is not possible right now",
            retryable=False,
            missing=exc.name,
        )
    if isinstance(exc, BackendError) and not exc.retryable:
        return tool_error(SEARCH_UNAVAILABLE, "the search engine refused the call; retrying will not help")
    if isinstance(exc, BackendError):
        return tool_error(SEARCH_UNAVAILABLE, "the search engine did not answer; try again shortly", retryable=True)
    if isinstance(exc, asyncio.TimeoutError | TimeoutError):
        return tool_error(
            SEARCH_UNAVAILABLE,
            f"the search took longer than {spec.client_timeout_s:g}s and was abandoned; try again or narrow it",
            retryable=True,
        )
    log.exception("unexpected failure in a search tool", exc_info=exc)
    return tool_error(INTERNAL, "the search failed unexpectedly; try again later", retryable=True)


class _SpecTool:
    """What the search and fetch tools share: spec, backend, scope, cache protocol."""

    family = "search"
    read_only = True
    requires_confirmation = False

    def __init__(self, spec: SearchSpec, backend: SearchBackend) -> None:
        self.spec = spec
        self.backend = backend
        self.scope_keys = spec.scope_keys

    def scope_of(self, ctx: CallContext) -> Scope | None:
        try:
            return _scope(self.spec, ctx)
        except ScopeMissing:
            return None

    async def generation(self) -> str:
        return await self.backend.generation()


class SearchTool(_SpecTool):
    """Keywords + enumerated filters + page in; ids, subjects, snippets, honest total out."""

    def __init__(self, spec: SearchSpec, backend: SearchBackend) -> None:
        super().__init__(spec, backend)
        self.name = spec.name
        self.description = spec.description

    def parameters_schema(self) -> dict[str, Any]:
        return self.spec.json_schema()

    def cache_args(self, args: Mapping[str, Any]) -> Any:
        return search_cache_args(args)

    def describe(self, args: Mapping[str, Any]) -> LogFields:
        keywords, filters, page = search_cache_args(args)
        return {"query": keywords, "filters": {name: value for name, value in filters}, "page": page}

    def build_query(self, request: SearchRequest, scope: Scope) -> SearchQuery:
        """Request + scope + the spec's bounds. Pure."""
        return SearchQuery(
            text=request.query,
            scope=scope,
            filters=request.filters,
            offset=(request.page - 1) * self.spec.page_size,
            limit=self.spec.page_size,
            track_total_up_to=self.spec.track_total_up_to,
            engine_timeout_s=self.spec.engine_timeout_s,
            client_timeout_s=self.spec.client_timeout_s,
        )

    def _outcome(self, request: SearchRequest | None, result: dict[str, Any]) -> ToolOutcome:
        fields: dict[str, Any] = {}
        if request is not None:
            fields.update(query=normalise_keywords(request.query), filters=request.filters_dict(), page=request.page)
        if result.get("status") == "ok":
            fields.update(
                total=result.get("total"),
                total_relation=result.get("total_relation"),
                ids=[r.get(self.spec.id_field) for r in result.get("results", [])],
                partial=bool(result.get("partial", False)),
            )
        else:
            fields["error_code"] = result.get("error_code")
        return ToolOutcome(result, fields)

    async def run(self, args: Mapping[str, Any], ctx: CallContext) -> ToolOutcome:
        request: SearchRequest | None = None
        try:
            checked = validate_search_args(self.spec, args)
            if not isinstance(checked, SearchRequest):
                return self._outcome(None, checked)
            request = checked
            return self._outcome(request, await self._run(request, ctx))
        except Exception as exc:
            return self._outcome(request, backend_failure(exc, self.spec))

    async def _run(self, request: SearchRequest, ctx: CallContext) -> dict[str, Any]:
        try:
            scope = _scope(self.spec, ctx)
        except ScopeMissing:
            return tool_error(NO_SCOPE, NO_SCOPE_MESSAGE)
        terms = unique_terms(request.query)
        if request.query and not terms:
            return tool_error(
                BAD_QUERY,
                "the query has no searchable words (punctuation and very common words are ignored); "
                "send keywords such as an error message or code",
            )
        query = self.build_query(request, scope)
        try:
            # asyncio.timeout, unlike wait_for, does not wrap the call in a new task (a loop turn per call).
            async with asyncio.timeout(self.spec.client_timeout_s):
                raw = await self.backend.search(query)
                found = None
                if raw.total == 0 and request.page == 1 and id_shaped(request.query):
                    # Ids are rarely in the text: a query that is one id finds the document itself (in scope).
                    found = await find_by_id(self.backend, request.query, scope)
                    if found is not None:
                        raw = RawResult(hits=(RawHit(found[0], 0.0, found[1]),), total=1, terms=raw.terms)
        except Exception as exc:
            return backend_failure(exc, self.spec)
        out = shape_search(self.spec, request, raw, raw.terms or terms, self.backend.analyze)
        if found is not None or (raw.total == 0 and request.page == 1 and id_shaped(request.query)):
            out.update(id_query_hint(self.spec, request.query, found=found is not None))
        elif not request.query and raw.total:
            out["order"] = "newest first" if self.spec.date_field else "index order"
        return out


_ID_SHAPE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:/#-]{1,127}")


def id_shaped(query: str) -> bool:
    """One token with a digit, such as ``HOO-00201`` or ``ord_1005``: maybe a document id."""
    return _ID_SHAPE.fullmatch(query) is not None and any(c.isdigit() for c in query)


async def find_by_id(
    backend: SearchBackend, text: str, scope: Scope, *, exact: bool = True
) -> tuple[str, dict[str, Any]] | None:
    """The in-scope document whose id is ``text`` (unless not ``exact``) or its upper/lower-case form
    (at most 3 lookups, each inside the engine's scope filter)."""
    for candidate in dict.fromkeys((text, text.upper(), text.lower())):
        if candidate == text and not exact:
            continue
        doc = await backend.get(candidate, scope)
        if doc is not None:
            return candidate, doc
    return None


def id_query_hint(spec: SearchSpec, query: str, *, found: bool) -> dict[str, Any]:
    """The hint of a search whose query looks like an id: where the fetch tool comes in."""
    if found:
        return {"hint": f"{query!r} is a {spec.id_field}: this is that document ({spec.fetch_name}: full text)."}
    return {
        "hint": f"No matches, and {query!r} is not the {spec.id_field} of any document this session can see "
        f"(ids are matched exactly, case included). {spec.fetch_name} opens a document by its id."
    }


class FetchTool(_SpecTool):
    """One document by id, only inside the caller's scope; NOT_FOUND otherwise.

    Its own cap family (``fetch``): an agent that used its searches can still open its best hit."""

    family = "fetch"

    def __init__(self, spec: SearchSpec, backend: SearchBackend) -> None:
        super().__init__(spec, backend)
        self.name = spec.fetch_name
        self.description = spec.fetch_description

    def parameters_schema(self) -> dict[str, Any]:
        return self.spec.fetch_json_schema()

    def cache_args(self, args: Mapping[str, Any]) -> Any:
        doc_id = args.get("id")
        text = id_text(doc_id)
        return [doc_id if text is None else text]

    def describe(self, args: Mapping[str, Any]) -> LogFields:
        doc_id = args.get("id")
        return {"query": str(doc_id)[:256] if doc_id is not None else None}

    def _log(self, doc_id: Any, result: Mapping[str, Any]) -> LogFields:
        fields: dict[str, Any] = {"query": str(doc_id)[:256] if doc_id is not None else None}
        if result.get("status") == "ok":
            fields.update(total=1, total_relation="eq", ids=[result.get("document", {}).get(self.spec.id_field)])
        else:
            fields["error_code"] = result.get("error_code")
        return fields

    async def run(self, args: Mapping[str, Any], ctx: CallContext) -> ToolOutcome:
        raw_id = args.get("id") if isinstance(args, Mapping) else None
        result = await self._run(args, ctx)
        return ToolOutcome(result, self._log(raw_id, result))

    async def _run(self, args: Mapping[str, Any], ctx: CallContext) -> dict[str, Any]:
        try:
            doc_id = validate_fetch_args(self.spec, args)
            if not isinstance(doc_id, str):
                return doc_id
            try:
                scope = _scope(self.spec, ctx)
            except ScopeMissing:
                return tool_error(NO_SCOPE, NO_SCOPE_MESSAGE)
            async with asyncio.timeout(self.spec.client_timeout_s):
                doc = await self.backend.get(doc_id, scope)
        except Exception as exc:
            return backend_failure(exc, self.spec)
        if doc is None:
            # Same answer for "absent" and "belongs to someone else": existence is not revealed.
            return await self._not_found(doc_id, scope)
        return shape_document(self.spec, doc)

    async def _not_found(self, doc_id: str, scope: Scope) -> dict[str, Any]:
        """NOT_FOUND, saying what the id's form may have got wrong (case: only ids in scope are suggested)."""
        message = f"no {self.spec.id_field} {doc_id!r} is visible to this session"
        try:
            async with asyncio.timeout(self.spec.client_timeout_s):
                other = await find_by_id(self.backend, doc_id, scope, exact=False)
        except Exception:  # the suggestion is a courtesy: NOT_FOUND stands without it
            other = None
        if other is not None:
            return tool_error(
                NOT_FOUND,
                f"{message}; ids are matched exactly, case included",
                hint=f"Did you mean {other[0]!r}? Call {self.name} with that id.",
                did_you_mean=other[0],
            )
        return tool_error(
            NOT_FOUND,
            message,
            hint=f"Send the {self.spec.id_field} exactly as a search result showed it (case included), "
            f"or search for it with {self.spec.name}.",
        )
