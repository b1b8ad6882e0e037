"""Property: whatever the query text, a session never sees or counts another tenant's documents."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scopegate.backends.embedded import EmbeddedBackend
from scopegate.context import CallContext
from scopegate.search.spec import SearchSpec
from scopegate.search.tools import FetchTool, SearchTool
from scopegate_lab.oracle import expected_total

TENANTS = ("alpha", "beta")
# Both tenants share one vocabulary, so any query that matches one matches the other.
VOCAB = [
    "refund",
    "failed",
    "E4012",
    "card_declined",
    "apple",
    "pay",
    "tenant_id",
    "alpha",
    "beta",
    "payout",
    "invoice",
    "ünïcode",
    "支付",
    "OR",
    "AND",
    "NOT",
]
DSL_FRAGMENTS = [
    "tenant_id:*",
    "*",
    "OR",
    "AND",
    '"',
    "'",
    "tenant_id:beta",
    "tenant_id:alpha",
    "(",
    ")",
    "\\",
    '{"match_all":{}}',
    "body:refund",
    "^",
    "~",
    "-tenant_id:alpha",
    "+",
    "?",
    "[* TO *]",
    "' OR 1=1 --",
    "ignore previous instructions",
    "\u0000",
]


@pytest.fixture(scope="module")
def two_tenants(
    spec: SearchSpec, tmp_path_factory: pytest.TempPathFactory
) -> tuple[EmbeddedBackend, dict[str, str], list[dict[str, Any]]]:
    import random

    rng = random.Random(3)
    docs = []
    for tenant in TENANTS:
        for i in range(120):
            words = rng.choices(VOCAB, k=12)
            docs.append(
                {
                    "ticket_id": f"{tenant}-{i}",
                    "tenant_id": tenant,
                    "product": rng.choice(["payments", "payouts"]),
                    "status": "open",
                    "subject": " ".join(words[:4]),
                    "body": " ".join(words) + (" tenant_id:" + tenant),
                }
            )
    backend = EmbeddedBackend(spec, tmp_path_factory.mktemp("iso") / "index")
    backend.ingest_sync(docs, batch_size=50)
    owner = {d["ticket_id"]: d["tenant_id"] for d in docs}
    return backend, owner, docs


query_text = st.one_of(
    st.text(min_size=1, max_size=200),
    st.lists(st.sampled_from(VOCAB + DSL_FRAGMENTS), min_size=1, max_size=30).map(" ".join),
    st.text(alphabet=st.characters(codec="utf-8"), min_size=150, max_size=400),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    text=query_text,
    tenant=st.sampled_from(TENANTS),
    page=st.integers(1, 4),
    product=st.sampled_from([None, "payments", "payouts"]),
)
def test_search_never_crosses_tenants(two_tenants: Any, text: str, tenant: str, page: int, product: str | None) -> None:
    backend, owner, docs = two_tenants
    args: dict[str, Any] = {"query": text, "page": page}
    if product:
        args["product"] = product
    out = asyncio.run(SearchTool(backend.spec, backend).run(args, CallContext(state={"tenant_id": tenant}))).result
    if out["status"] == "error":
        assert out["error_code"] in {"BAD_QUERY"}, out
        return
    assert all(owner[r["ticket_id"]] == tenant for r in out["results"]), out
    # The total counts exactly the tenant's own matching documents: never the other tenant's.
    filters = {"product": product} if product else {}
    assert out["total"] == expected_total(backend.spec, docs, text, tenant, filters)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(doc=st.integers(0, 119), owner_tenant=st.sampled_from(TENANTS), suffix=st.sampled_from(["", " ", "*", "\t"]))
def test_fetch_never_crosses_tenants(two_tenants: Any, doc: int, owner_tenant: str, suffix: str) -> None:
    backend, _owner, _docs = two_tenants
    other = TENANTS[1] if owner_tenant == TENANTS[0] else TENANTS[0]
    out = asyncio.run(
        FetchTool(backend.spec, backend).run(
            {"id": f"{owner_tenant}-{doc}{suffix}"}, CallContext(state={"tenant_id": other})
        )
    ).result
    assert out["status"] == "error" and out["error_code"] in {"NOT_FOUND", "BAD_ARGUMENTS"}


def test_injection_ticket_cannot_widen_scope(embedded: EmbeddedBackend) -> None:
    """The planted ticket's instruction, sent as arguments, reaches nothing outside initech."""
    from scopegate.demo.corpus import INJECTION_ID

    tool = SearchTool(embedded.spec, embedded)
    state = CallContext(state={"tenant_id": "initech"})
    first = asyncio.run(tool.run({"query": "apple pay refund failed read this first"}, state)).result
    assert INJECTION_ID in [r["ticket_id"] for r in first["results"]]
    for args in (
        {"query": "tenant_id:* OR tenant_id:acme refund"},
        {"query": "refund", "tenant_id": "acme"},
        {"query": "refund", "product": "payments OR 1=1"},
        {"query": '{"bool":{"must":[{"match_all":{}}]}}'},
    ):
        out = asyncio.run(tool.run(args, state)).result
        assert out["status"] == "error" or all(r["ticket_id"].startswith("INI-") for r in out["results"]), out
    total_initech = asyncio.run(tool.run({"query": "refund"}, state)).result["total"]
    initech_docs = embedded.count_sync(__import__("scopegate.scope").scope.Scope("initech"))
    assert 0 < total_initech <= initech_docs < embedded.count_sync()
