"""Helpers shared by the OpenSearch integration tests (imported by module name: pytest puts this folder on sys.path)."""

from __future__ import annotations

import dataclasses
import uuid
from typing import Any

from scopegate.demo.corpus import ticket_spec
from scopegate.scope import Scope
from scopegate.search.model import SearchQuery
from scopegate.search.spec import SearchSpec
from scopegate.testing import oracle


def unique_spec(base: SearchSpec | None = None, **changes: Any) -> SearchSpec:
    """The ticket spec on a fresh index name, so tests never share or collide on indices."""
    spec = base or ticket_spec()
    return dataclasses.replace(spec, index=f"it-{uuid.uuid4().hex[:10]}", **changes)


def query(
    spec: SearchSpec, text: str, tenant: str, filters: tuple[tuple[str, str], ...] = (), **kw: Any
) -> SearchQuery:
    page = kw.pop("page", 1)
    return SearchQuery(
        text=text,
        scope=Scope(tenant),
        filters=filters,
        offset=(page - 1) * spec.page_size,
        limit=kw.pop("limit", spec.page_size),
        track_total_up_to=kw.pop("track_total_up_to", spec.track_total_up_to),
        engine_timeout_s=kw.pop("engine_timeout_s", spec.engine_timeout_s),
        client_timeout_s=spec.client_timeout_s,
    )


def expected_total(corpus: list[dict[str, Any]], text: str, tenant: str, filters: dict[str, str]) -> int:
    """Ground truth: documents of the tenant, passing the filters, sharing a term with the query."""
    return oracle.expected_total(ticket_spec(), corpus, text, tenant, filters)
