"""Cluster layout, pure parts: routing by tenant, document addresses, agent aliases, the alias swap,
per-tenant counts, shard accounting of partial answers, backend options."""

from __future__ import annotations

from typing import Any

import pytest

from scopegate.backends import dsl, layout
from scopegate.backends.opensearch import OpenSearchBackend
from scopegate.demo.corpus import ticket_spec
from scopegate.errors import ConfigError
from scopegate.scope import Scope, document_key
from scopegate.search.spec import SearchSpec

DOC = {"ticket_id": "ACM-1", "tenant_id": "acme", "product": "billing", "subject": "s", "body": "b"}


@pytest.fixture
def spec() -> SearchSpec:
    return ticket_spec()


# -- routing ---------------------------------------------------------------------------
def test_doc_address_routes_by_tenant_only_when_asked(spec: SearchSpec) -> None:
    key = document_key("acme", "ACM-1")  # the _id is tenant-qualified whether routed or not
    assert dsl.doc_address(spec, "acme", "ACM-1") == dsl.DocAddress(key, None)
    routed = dsl.doc_address(spec, "acme", "ACM-1", "tenant")
    assert routed == dsl.DocAddress(key, "acme")
    assert routed.action_meta("t-read") == {"_index": "t-read", "_id": key, "routing": "acme"}
    assert dsl.scope_routing(Scope("acme", ("g",)), "tenant") == "acme"
    assert dsl.scope_routing(Scope("acme"), "none") is None


def test_bulk_and_delete_lines_carry_the_same_routing(spec: SearchSpec) -> None:
    key = document_key("acme", "ACM-1")
    lines, refused = dsl.bulk_operations(spec, [DOC, {"ticket_id": "X"}], "t-read", routing="tenant")
    assert refused == [("X", "missing tenant_id")]
    assert lines[0] == {"index": {"_index": "t-read", "_id": key, "routing": "acme"}}
    plain, _ = dsl.bulk_operations(spec, [DOC], "t-read")
    assert plain[0] == {"index": {"_index": "t-read", "_id": key}}
    assert dsl.delete_operations(spec, ["ACM-1"], "t-read", tenant="acme", routing="tenant") == [
        {"delete": {"_index": "t-read", "_id": key, "routing": "acme"}}
    ]
    assert dsl.delete_operations(spec, ["ACM-1"], "t-read", tenant="acme") == [
        {"delete": {"_index": "t-read", "_id": key}}
    ]


def test_routed_index_requires_routing_on_every_write(spec: SearchSpec) -> None:
    body = dsl.index_template_body(spec, shards=3, replicas=1, routing="tenant")
    assert body["template"]["mappings"]["_routing"] == {"required": True}
    assert body["template"]["settings"]["index"]["number_of_shards"] == 3
    assert body["template"]["settings"]["index"]["number_of_replicas"] == 1
    assert "_routing" not in dsl.index_body(spec)["mappings"]
    with pytest.raises(ConfigError, match="routing"):
        dsl.routed_mappings(spec, "shard")  # type: ignore[arg-type]


# -- partial answers: shards that did not answer -----------------------------------------
@pytest.mark.parametrize(
    ("shards", "reason"),
    [
        ({"total": 3, "successful": 3, "skipped": 0, "failed": 0}, None),
        ({"total": 3, "successful": 1, "skipped": 2, "failed": 0}, None),  # pre-filtered shards are fine
        ({"total": 3, "successful": 2, "skipped": 0, "failed": 1}, "1 of 3 shards failed"),
        ({"total": 3, "successful": 1, "skipped": 0, "failed": 0}, "2 of 3 shards failed"),  # unaccounted for
        ({"total": 1, "successful": 0, "failed": 0}, "1 of 1 shards failed"),
        ({"total": 2, "failed": 1}, "1 of 2 shards failed"),  # no "successful": trust "failed"
        ({}, None),
    ],
)
def test_partial_reason_counts_every_missing_shard(shards: dict[str, int], reason: str | None) -> None:
    assert dsl.partial_reason({"timed_out": False, "_shards": shards}) == reason


# -- agent aliases ---------------------------------------------------------------------------
def test_agent_alias_names_and_filters(spec: SearchSpec) -> None:
    assert layout.agent_alias("tickets-read", "billing-bot") == "tickets-read-billing-bot"
    for bad in ("", "Billing", "a b", "-x", "a" * 65, "é"):
        with pytest.raises(ConfigError, match="agent name"):
            layout.agent_alias("tickets-read", bad)
    assert layout.alias_filter_query(spec, None) is None
    assert layout.alias_filter_query(spec, {"status": "open", "product": ["payments", "billing", "payments"]}) == {
        "bool": {"filter": [{"terms": {"product": ["billing", "payments"]}}, {"terms": {"status": ["open"]}}]}
    }
    for bad_filter in ({"tenant_id": "acme"}, {"subject": "x"}, {"product": []}, {"product": [""]}):
        with pytest.raises(ConfigError):
            layout.alias_filter_query(spec, bad_filter)


def test_alias_swap_moves_every_read_alias_and_records_the_previous_version() -> None:
    response: dict[str, Any] = {
        "t-v1": {
            "aliases": {
                "t-read": {"is_write_index": True},
                "t-read-bot": {"filter": {"term": {"product": "billing"}}},
                "t-previous": {},
                "unrelated": {},
            }
        },
        "t-v0": {"aliases": {}},
    }
    state = layout.parse_alias_state(response, "t-read")
    assert set(state.aliases) == {"t-read", "t-read-bot"} and state.indices() == ["t-v1"]
    body = layout.move_aliases_actions(state, "t-v2", previous="t-previous", previous_targets=["t-v0"])
    assert body == {
        "actions": [
            {"remove": {"index": "t-v1", "alias": "t-read"}},
            {"add": {"index": "t-v2", "alias": "t-read", "is_write_index": True}},
            {"remove": {"index": "t-v1", "alias": "t-read-bot"}},
            {"add": {"index": "t-v2", "alias": "t-read-bot", "filter": {"term": {"product": "billing"}}}},
            {"remove": {"index": "t-v0", "alias": "t-previous"}},
            {"add": {"index": "t-v1", "alias": "t-previous"}},
        ]
    }
    assert layout.move_aliases_actions(state, "t-v1") == {"actions": []}  # already there
    assert layout.previous_alias("tickets-read") == "tickets-previous"


# -- per-tenant counts ------------------------------------------------------------------------
def test_tenant_counts_pages_and_differences(spec: SearchSpec) -> None:
    first = layout.tenant_counts_body(spec)
    assert first["aggs"]["tenants"]["composite"]["sources"] == [{"tenant": {"terms": {"field": "tenant_id"}}}]
    assert "after" not in first["aggs"]["tenants"]["composite"]
    assert layout.tenant_counts_body(spec, {"tenant": "m"})["aggs"]["tenants"]["composite"]["after"] == {"tenant": "m"}
    page = {
        "aggregations": {
            "tenants": {
                "after_key": {"tenant": "b"},
                "buckets": [{"key": {"tenant": "a"}, "doc_count": 3}, {"key": {"tenant": "b"}, "doc_count": 1}],
            }
        }
    }
    assert layout.parse_tenant_counts(page) == ({"a": 3, "b": 1}, {"tenant": "b"})
    assert layout.parse_tenant_counts({"aggregations": {"tenants": {"buckets": []}}}) == ({}, None)
    assert layout.count_differences({"a": 3, "b": 1}, {"a": 3, "c": 2}) == {"b": (1, 0), "c": (0, 2)}


def test_health_rank() -> None:
    assert layout.health_rank("green") > layout.health_rank("yellow") > layout.health_rank("red")
    assert layout.health_rank(None) == layout.health_rank("purple") == 0


# -- backend options ------------------------------------------------------------------------
def test_backend_refuses_bad_layout_options(spec: SearchSpec) -> None:
    url = "http://127.0.0.1:9"  # nothing is sent: the checks run in the constructor
    with pytest.raises(ConfigError, match="routing"):
        OpenSearchBackend(spec, url, routing="shard")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="agent"):
        OpenSearchBackend(spec, url, alias_filter={"product": "billing"})
    with pytest.raises(ConfigError, match="keyword field"):
        OpenSearchBackend(spec, url, agent="a", alias_filter={"tenant_id": "acme"})
    with pytest.raises(ConfigError, match="agent name"):
        OpenSearchBackend(spec, url, agent="Bad Name")
    with pytest.raises(ConfigError, match="shards"):
        OpenSearchBackend(spec, url, shards=0)
    with pytest.raises(ConfigError, match="URL"):
        OpenSearchBackend(spec, [])
    with pytest.raises(ConfigError, match="dead_timeout_s"):
        OpenSearchBackend(spec, url, dead_timeout_s=0)


async def test_backend_targets_and_clients(spec: SearchSpec) -> None:
    one = OpenSearchBackend(spec, "http://127.0.0.1:9")
    assert one.search_target == "tickets-read"
    assert one.search_client is not one.client  # searches have their own pool: an ingest never takes it
    assert one.client.transport.max_retries == 0  # one host: nothing to fail over to
    agent = OpenSearchBackend(
        spec,
        ["http://127.0.0.1:9", "http://127.0.0.1:10"],
        agent="bot",
        coordinating_url=["http://127.0.0.1:11", "http://127.0.0.1:12"],
        dead_timeout_s=1.5,
    )
    assert agent.search_target == "tickets-read-bot"
    assert agent.search_client is not agent.client
    transport = agent.search_client.transport
    assert transport.max_retries == 1 and transport.retry_on_timeout is False
    assert tuple(transport.retry_on_status) == (502, 503, 504)
    assert transport.kwargs["dead_timeout"] == 1.5 and transport.sniff_on_start is False
    assert [h["port"] for h in transport.hosts] == [11, 12]  # searches only ever go to the coordinating nodes
    assert [h["port"] for h in agent.client.transport.hosts] == [9, 10]
    pinned = agent.pinned("tickets-v7")
    assert pinned.search_target == "tickets-v7" and pinned.client is agent.client
    # (its generation comes from the engine, the pinned index's shard stats: see the multi-process tests)
    await pinned.close()  # a view closes nothing ...
    assert agent._owns_clients
    await agent.close()  # ... the backend closes both clients
    await one.close()
