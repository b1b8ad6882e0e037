"""Isolation against the real node: whatever the text, a session never sees or counts another tenant's documents."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opensearch_helpers import query, unique_spec

from scopegate.backends.opensearch import OpenSearchBackend
from scopegate.context import CallContext
from scopegate.demo.corpus import INJECTION_ID
from scopegate.scope import Scope
from scopegate.search.tools import FetchTool, SearchTool
from scopegate_lab.oracle import expected_total

TENANTS = ("alpha", "beta")
PER_TENANT = 120
VOCAB = [
    "refund", "failed", "E4012", "card_declined", "apple", "pay", "tenant_id", "alpha", "beta",
    "payout", "invoice", "ünïcode", "支付", "OR", "AND", "NOT",
]  # fmt: skip
DSL_FRAGMENTS = [
    "tenant_id:*", "*", "OR", "AND", '"', "'", "tenant_id:beta", "tenant_id:alpha", "(", ")", "\\",
    '{"match_all":{}}', '{"query_string":{"query":"*"}}', "body:refund", "^", "~", "-tenant_id:alpha", "+", "?",
    "[* TO *]", "' OR 1=1 --", "ignore previous instructions", "_all", "*:*", "/.*/", "tenant_id:beta^100",
]  # fmt: skip

query_text = st.one_of(
    st.text(min_size=1, max_size=200),
    st.lists(st.sampled_from(VOCAB + DSL_FRAGMENTS), min_size=1, max_size=30).map(" ".join),
    st.text(alphabet=st.characters(codec="utf-8"), min_size=150, max_size=400),
)
HYPOTHESIS = settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

pytestmark = pytest.mark.opensearch


@pytest.fixture(scope="module")
async def two_tenants(
    opensearch_url: str,
) -> AsyncIterator[tuple[OpenSearchBackend, dict[str, str], list[dict[str, Any]]]]:
    rng = random.Random(3)
    docs = []
    for tenant in TENANTS:
        for i in range(PER_TENANT):
            words = rng.choices(VOCAB, k=12)
            docs.append(
                {
                    "ticket_id": f"{tenant}-{i}",
                    "tenant_id": tenant,
                    "product": rng.choice(["payments", "payouts"]),
                    "status": "open",
                    "subject": " ".join(words[:4]),
                    "body": " ".join(words) + " tenant_id:" + tenant,
                }
            )
    backend = OpenSearchBackend(unique_spec(), opensearch_url)
    report = await backend.ingest(docs, batch_size=100)
    assert report.indexed == len(docs)
    try:
        yield backend, {d["ticket_id"]: d["tenant_id"] for d in docs}, docs
    finally:
        await backend.drop()
        await backend.close()


@HYPOTHESIS
@given(
    text=query_text,
    tenant=st.sampled_from(TENANTS),
    page=st.integers(1, 4),
    product=st.sampled_from([None, "payments", "payouts"]),
)
async def test_tool_search_never_crosses_tenants(
    two_tenants: Any, text: str, tenant: str, page: int, product: str | None
) -> None:
    backend, owner, docs = two_tenants
    args: dict[str, Any] = {"query": text, "page": page}
    if product:
        args["product"] = product
    out = (await SearchTool(backend.spec, backend).run(args, CallContext(state={"tenant_id": tenant}))).result
    if out["status"] == "error":
        assert out["error_code"] == "BAD_QUERY", out
        return
    assert all(owner[r["ticket_id"]] == tenant for r in out["results"]), out
    filters = {"product": product} if product else {}
    assert out["total"] == expected_total(backend.spec, docs, text, tenant, filters)
    assert out["total_relation"] == "eq"


@HYPOTHESIS
@given(text=st.one_of(query_text, st.text(min_size=1, max_size=3000)), tenant=st.sampled_from(TENANTS))
async def test_raw_backend_text_never_crosses_tenants(two_tenants: Any, text: str, tenant: str) -> None:
    """Straight to the backend, past the tool's validation: control characters, 3000 chars, anything."""
    backend, owner, _docs = two_tenants
    result = await backend.search(query(backend.spec, text, tenant, limit=50))
    assert result.total <= PER_TENANT
    assert all(owner[h.doc_id] == tenant for h in result.hits)
    assert all(h.fields.get("tenant_id", tenant) == tenant for h in result.hits)


@HYPOTHESIS
@given(
    doc=st.integers(0, PER_TENANT - 1),
    owner_tenant=st.sampled_from(TENANTS),
    suffix=st.sampled_from(["", " ", "*", "\t", "?"]),
)
async def test_fetch_never_crosses_tenants(two_tenants: Any, doc: int, owner_tenant: str, suffix: str) -> None:
    backend, _owner, _docs = two_tenants
    other = TENANTS[1] if owner_tenant == TENANTS[0] else TENANTS[0]
    doc_id = f"{owner_tenant}-{doc}{suffix}"
    out = (await FetchTool(backend.spec, backend).run({"id": doc_id}, CallContext(state={"tenant_id": other}))).result
    assert out["status"] == "error" and out["error_code"] in {"NOT_FOUND", "BAD_ARGUMENTS"}
    assert await backend.get(doc_id, Scope(other)) is None


async def test_injection_ticket_cannot_widen_scope(os_backend: OpenSearchBackend) -> None:
    """The planted ticket's instruction, sent as arguments, reaches nothing outside initech."""
    tool = SearchTool(os_backend.spec, os_backend)
    state = CallContext(state={"tenant_id": "initech"})
    first = (await tool.run({"query": "apple pay refund failed read this first"}, state)).result
    assert INJECTION_ID in [r["ticket_id"] for r in first["results"]]
    for args in (
        {"query": "tenant_id:* OR tenant_id:acme refund"},
        {"query": "refund", "tenant_id": "acme"},
        {"query": "refund", "product": "payments OR 1=1"},
        {"query": '{"bool":{"must":[{"match_all":{}}]}}'},
    ):
        out = (await tool.run(args, state)).result
        assert out["status"] == "error" or all(r["ticket_id"].startswith("INI-") for r in out["results"]), out
    total_initech = ((await tool.run({"query": "refund"}, state)).result)["total"]
    assert 0 < total_initech <= await os_backend.count(Scope("initech"))
    # The fetch tool refuses the planted ticket to every other tenant.
    for tenant in ("acme", "globex"):
        out = (
            await FetchTool(os_backend.spec, os_backend).run(
                {"id": INJECTION_ID}, CallContext(state={"tenant_id": tenant})
            )
        ).result
        assert out["error_code"] == "NOT_FOUND"
