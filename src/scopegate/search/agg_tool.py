"""The typed aggregation tool: counts inside the caller's scope, as a :class:`ScopedTool`.

``AggregateTool(spec, backend)`` counts documents by one enumerated field or by day/week/month
of the spec's date field; filters and the time range are those of :mod:`.aggregation`. Scope
comes from session state only and is a filter inside the engine, so every count is a count of
the caller's own documents. ``run`` never raises; results are cacheable like searches (the
cache key holds the resolved dates, so "last 7 days" is not served from yesterday's entry).

Construction refuses an index that cannot answer: a backend that reports the counted fields or
the date field missing (an embedded index built before they were stored) raises
:class:`~scopegate.errors.ConfigError` naming the field and what to do.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Callable, Mapping
from typing import Any

from scopegate.backends.base import SearchBackend
from scopegate.context import CallContext
from scopegate.errors import NO_SCOPE, SEARCH_UNAVAILABLE, ConfigError, FieldUnavailable, tool_error
from scopegate.scope import Scope, ScopeMissing, read_scope, scope_or_none
from scopegate.search.agg_shaper import shape_aggregation
from scopegate.search.aggregation import (
    AggregationRequest,
    AggregationSpec,
    build_query,
    resolve,
    validate_aggregation_args,
)
from scopegate.search.spec import SearchSpec
from scopegate.search.tools import NO_SCOPE_MESSAGE, backend_failure
from scopegate.tools import LogFields, ToolOutcome

Today = Callable[[], dt.date]


def utc_today() -> dt.date:
    return dt.datetime.now(dt.UTC).date()


class AggregateTool:
    """Counts per enumerated value or per date bucket. Implements ``ScopedTool`` and ``Cacheable``."""

    family = "search"
    read_only = True
    requires_confirmation = False

    def __init__(
        self,
        spec: SearchSpec,
        backend: SearchBackend,
        settings: AggregationSpec | None = None,
        *,
        today: Today = utc_today,
    ) -> None:
        self.settings = resolve(spec, settings)
        self.spec = spec
        self.backend = backend
        self.scope_keys = spec.scope_keys
        self.name = self.settings.name
        self.description = self.settings.description
        self._today = today
        needed = list(self.settings.group_by)
        if spec.date_field is not None and spec.date_field not in needed:
            needed.append(spec.date_field)
        problems = backend.aggregation_problems(needed)
        if problems:
            raise ConfigError(f"{self.name}: the index cannot be counted: " + "; ".join(problems))

    # -- protocol ------------------------------------------------------------------------------
    def parameters_schema(self) -> dict[str, Any]:
        return self.settings.json_schema()

    def scope_of(self, ctx: CallContext) -> Scope | None:
        return scope_or_none(ctx.state, self.scope_keys, require_groups=self.spec.group_field is not None)

    def _scope(self, ctx: CallContext) -> Scope:
        return read_scope(ctx.state, self.scope_keys, require_groups=self.spec.group_field is not None)

    def _validated(self, args: Mapping[str, Any]) -> AggregationRequest | dict[str, Any]:
        return validate_aggregation_args(self.settings, args, self._today())

    def cache_args(self, args: Mapping[str, Any]) -> Any:
        checked = self._validated(args)
        if not isinstance(checked, AggregationRequest):
            return ["invalid", sorted((str(k), repr(v)) for k, v in args.items())]
        return [checked.group_by, checked.interval, list(checked.filters), checked.range_dict()]

    async def generation(self) -> str:
        return await self.backend.generation()

    def describe(self, args: Mapping[str, Any]) -> LogFields:
        group_by = args.get("group_by") if isinstance(args, Mapping) else None
        return {"group_by": str(group_by)[:64] if group_by is not None else None}

    # -- the call ------------------------------------------------------------------------------
    def _outcome(self, request: AggregationRequest | None, result: dict[str, Any]) -> ToolOutcome:
        fields: dict[str, Any] = {}
        if request is not None:
            fields.update(
                group_by=request.group_by,
                interval=request.interval,
                filters=request.filters_dict(),
                **request.range_dict(),
            )
        if result.get("status") == "ok":
            fields.update(
                total=result.get("total"),
                total_relation="eq",
                buckets=len(result.get("buckets", [])),
                partial=bool(result.get("partial", False)),
            )
        else:
            fields["error_code"] = result.get("error_code")
        return ToolOutcome(result, fields)

    async def run(self, args: Mapping[str, Any], ctx: CallContext) -> ToolOutcome:
        request: AggregationRequest | None = None
        try:
            checked = self._validated(args)
            if not isinstance(checked, AggregationRequest):
                return self._outcome(None, checked)
            request = checked
            try:
                scope = self._scope(ctx)
            except ScopeMissing:
                return self._outcome(request, tool_error(NO_SCOPE, NO_SCOPE_MESSAGE))
            query = build_query(self.settings, request, scope)
            async with asyncio.timeout(self.spec.client_timeout_s):
                raw = await self.backend.aggregate(query)
            return self._outcome(request, shape_aggregation(self.settings, request, raw))
        except FieldUnavailable as exc:
            message = f"this index cannot be counted by {exc.field!r} until it is re-indexed"
            return self._outcome(request, tool_error(SEARCH_UNAVAILABLE, message, retryable=False))
        except Exception as exc:
            return self._outcome(request, backend_failure(exc, self.spec))
