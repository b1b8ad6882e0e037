"""Issue 35, the pure parts: field paths, request bodies and the mapping check of an existing index."""

from __future__ import annotations

import json
from typing import Any

import pytest

from scopegate.backends import dsl
from scopegate.backends.fieldmap import configured_map, flatten_mapping, read_path, resolve
from scopegate.backends.mapping_check import query_findings, snippet_findings, spec_findings, value_findings
from scopegate.config.loader import parse_config
from scopegate.errors import ConfigError
from scopegate.scope import Scope
from scopegate.search.model import SearchQuery
from scopegate.search.spec import COMBINED_FIELD, SearchSpec
from scopegate.validation import ConfigValidationError

MAPPING: dict[str, Any] = {
    "bugs-2024": {
        "mappings": {
            "properties": {
                "key": {"type": "keyword"},
                "org_id": {"type": "keyword"},
                "title": {"type": "text", "analyzer": "bug_text", "fields": {"keyword": {"type": "keyword"}}},
                "description": {"type": "text", "analyzer": "bug_text"},
                "status": {"type": "text", "fields": {"keyword": {"type": "keyword"}}},
                "meta": {"properties": {"component": {"type": "keyword"}}},
                "comments": {"type": "nested", "properties": {"author": {"type": "keyword"}}},
            }
        }
    }
}


def spec(**overrides: Any) -> SearchSpec:
    fields: dict[str, Any] = {
        "name": "search_bugs",
        "description": "Bugs.",
        "index": "bugs-read",
        "index_mode": "existing",
        "text_fields": ("title^3", "description"),
        "snippet_field": "description",
        "tenant_field": "tenant",
        "filters": ({"name": "component", "allowed": ("ui", "storage")}, {"name": "status", "allowed": ("open",)}),
        "result_fields": ("title", "component", "status"),
        "field_paths": {"id": "key", "tenant": "org_id", "component": "meta.component"},
    }
    fields.update(overrides)
    return SearchSpec(**fields)


def query(text: str = "segfault", filters: tuple[tuple[str, str], ...] = ()) -> SearchQuery:
    return SearchQuery(text, Scope("acme"), filters, 0, 5, 10_000, 1.0, 2.5)


def test_the_body_uses_engine_paths_and_never_the_catch_all_field() -> None:
    s = spec()
    fm = resolve(s, flatten_mapping(MAPPING))
    body = dsl.search_body(s, query(filters=(("component", "ui"), ("status", "open"))), fm, engine="opensearch")
    text = json.dumps(body)
    assert COMBINED_FIELD not in text
    must = body["query"]["bool"]["must"][0]["multi_match"]
    assert must["type"] == "cross_fields" and must["fields"] == ["title^1.44225", "description"]  # 3 ** (1/3)
    assert body["query"]["bool"]["filter"] == [
        {"term": {"org_id": "acme"}},
        {"term": {"meta.component": "ui"}},
        {"term": {"status.keyword": "open"}},  # the keyword sub-field of a text field, from the mapping
    ]
    assert body["sort"] == ["_score", {"key": "asc"}]
    # The long text field is not shipped: its snippet is the highlighter's one fragment.
    assert body["_source"] == ["key", "title", "meta.component", "status"]
    highlight = body["highlight"]["fields"]["description"]
    assert highlight["number_of_fragments"] == 1 and highlight["no_match_size"] == 400
    assert "boundary_scanner" not in highlight  # "word" would make each word its own passage
    es = dsl.search_body(s, query(), fm, engine="elasticsearch")["query"]["bool"]["must"][0]
    assert es == {"combined_fields": {"query": "segfault", "fields": ["title^3", "description"], "operator": "or"}}


def test_local_snippets_fetch_the_field_instead() -> None:
    s = spec(snippets="local")
    body = dsl.search_body(s, query(), resolve(s, flatten_mapping(MAPPING)))
    assert "highlight" not in body and "description" in body["_source"]


def with_description(index: str = "bugs-2024", **options: str) -> dict[str, Any]:
    mapping = json.loads(json.dumps(MAPPING))
    mapping["bugs-2024"]["mappings"]["properties"]["description"].update(options)
    return {index: mapping["bugs-2024"]}


def test_term_vectors_with_offsets_choose_the_fast_vector_highlighter() -> None:
    s = spec()
    for options, kind in (
        ({}, "unified"),
        ({"index_options": "offsets"}, "unified"),  # the unified highlighter reads the postings by itself
        ({"term_vector": "with_positions"}, "unified"),  # no offsets: fvh would refuse the field
        ({"term_vector": "with_positions_offsets"}, "fvh"),
        ({"term_vector": "with_positions_offsets_payloads"}, "fvh"),
    ):
        fm = resolve(s, flatten_mapping(with_description(**options)))
        highlight = dsl.search_body(s, query(), fm)["highlight"]["fields"]["description"]
        assert highlight["type"] == kind, options
        # the same window either way: one plain-text fragment, the head when the field did not match
        assert highlight["fragment_size"] == 400 and highlight["number_of_fragments"] == 1
        assert highlight["no_match_size"] == 400 and highlight["pre_tags"] == highlight["post_tags"] == [""]
        assert dsl.search_body(s, SearchQuery("", Scope("acme"), (), 0, 5, 10_000, 1.0, 2.5), fm)["highlight"] == {
            "fields": {"description": highlight}
        }


def test_one_index_without_term_vectors_keeps_the_unified_highlighter() -> None:
    # fvh fails the search on an index whose field has no term vectors: the weakest index behind the alias decides
    both = {**with_description("bugs-2024", term_vector="with_positions_offsets"), **with_description("bugs-2023")}
    fm = resolve(spec(), flatten_mapping(both))
    assert fm.snippet_offsets == "analysis"
    assert dsl.search_body(spec(), query(), fm)["highlight"]["fields"]["description"]["type"] == "unified"


def test_the_snippet_cost_is_an_info_finding_until_term_vectors() -> None:
    (note,) = snippet_findings(spec(), flatten_mapping(MAPPING))
    assert (note.severity, note.key, note.field) == ("info", ("snippet_field",), "description")
    assert "re-analyses" in note.message and "with_positions_offsets" in note.message
    (note,) = snippet_findings(spec(), flatten_mapping(with_description(index_options="offsets")))
    assert "postings" in note.message
    assert snippet_findings(spec(), flatten_mapping(with_description(term_vector="with_positions_offsets"))) == []
    assert snippet_findings(spec(snippets="local"), flatten_mapping(MAPPING)) == []  # no highlighter then


@pytest.mark.parametrize(
    ("weight", "sent"),
    [(1, "title"), (2, "title^1.25992"), (3, "title^1.44225"), (5, "title^1.70998"), (0.5, "title^0.793701")],
)
def test_the_opensearch_stand_in_reads_a_weight_as_bm25f_does(weight: float, sent: str) -> None:
    # BM25F (combined_fields) raises a field's term frequency by its weight before saturation; cross_fields
    # multiplies the score: the stand-in gets the cube root and a small tie_breaker (bench/results/cross_fields_fit.md).
    s = spec(text_fields=(f"title^{weight:g}", "description"))
    clause = dsl.text_query(s, "segfault", resolve(s, flatten_mapping(MAPPING)), engine="opensearch")
    assert clause == {"multi_match": {"query": "segfault", "type": "cross_fields", "operator": "or",
                                      "fields": [sent, "description"], "tie_breaker": 0.1}}  # fmt: skip
    es = dsl.text_query(s, "segfault", resolve(s, flatten_mapping(MAPPING)), engine="elasticsearch")
    title = "title" if weight == 1 else f"title^{weight:g}"  # Elasticsearch's own BM25F query takes it as given
    assert es == {"combined_fields": {"query": "segfault", "fields": [title, "description"], "operator": "or"}}


def test_a_configured_tie_breaker_wins_over_the_stand_ins() -> None:
    s = spec(tie_breaker=0.3)
    clause = dsl.text_query(s, "x", configured_map(s), engine="opensearch")
    assert clause["multi_match"]["tie_breaker"] == 0.3


def test_configured_query_types_keep_their_weights() -> None:
    # best_fields and most_fields are the engine's own queries: the weight is the engine's boost, as written.
    for combination in ("best_fields", "most_fields"):
        clause = dsl.text_query(spec(field_combination=combination), "x", configured_map(spec()), engine="opensearch")
        assert clause == {"multi_match": {"query": "x", "type": combination, "fields": ["title^3", "description"],
                                          "operator": "or"}}  # fmt: skip
    managed = SearchSpec(
        name="search_t", description="d", text_fields=("subject^3", "body"), field_combination="best_fields"
    )
    assert dsl.text_query(managed, "x")["multi_match"]["fields"] == ["subject^3", "body"]


def test_best_and_most_fields_stay_multi_match_on_an_existing_index() -> None:
    s = spec(field_combination="best_fields", tie_breaker=0.3)
    clause = dsl.text_query(s, "x", configured_map(s), engine="elasticsearch")
    assert clause["multi_match"]["type"] == "best_fields" and clause["multi_match"]["tie_breaker"] == 0.3


def test_a_managed_spec_keeps_its_bodies() -> None:
    managed = SearchSpec(name="search_t", description="d", text_fields=("subject^3", "body"))
    body = dsl.search_body(managed, query())
    assert body["query"]["bool"]["must"] == [{"match": {COMBINED_FIELD: {"query": "segfault", "operator": "or"}}}]
    assert "highlight" not in body and "body" in body["_source"]


def test_hits_are_read_back_by_spec_names() -> None:
    s = spec()
    fm = resolve(s, flatten_mapping(MAPPING))
    response = {
        "hits": {
            "total": {"value": 1, "relation": "eq"},
            "hits": [
                {
                    "_id": "acme:BUG-1",
                    "_score": 2.0,
                    "_source": {"key": "BUG-1", "title": "t", "status": "open", "meta": {"component": "ui"}},
                    "highlight": {"description": ["a crash here"]},
                }
            ],
        }
    }
    hit = dsl.parse_search_response(s, response, (), fm).hits[0]
    assert hit.doc_id == "BUG-1"
    assert hit.fields == {
        "id": "BUG-1",
        "title": "t",
        "status": "open",
        "component": "ui",
        "description": "a crash here",
    }


def test_read_path_reaches_objects_lists_and_literal_dotted_keys() -> None:
    assert read_path({"meta": {"component": "ui"}}, "meta.component") == "ui"
    assert read_path({"meta.component": "ui"}, "meta.component") == "ui"
    assert read_path({"meta": [{"x": 1}, {"component": "db"}]}, "meta.component") == "db"
    assert read_path({"meta": "flat"}, "meta.component") is None


def test_a_configured_keyword_sub_field_is_read_from_its_parent() -> None:
    s = spec(field_paths={"id": "key", "tenant": "org_id", "component": "meta.component", "status": "status.keyword"})
    fm = resolve(s, flatten_mapping(MAPPING))
    assert fm.q("status") == "status.keyword" and fm.s("status") == "status"


MISTAKES: list[tuple[dict[str, Any], str, str]] = [
    ({"org_id": None}, "field_paths.tenant", "tenant field 'org_id' does not exist"),
    ({"org_id": {"type": "text"}}, "field_paths.tenant", "tenant field 'org_id' is text"),
    ({"key": None}, "field_paths.id", "id field 'key' does not exist"),
    ({"meta": {"properties": {"component": {"type": "text"}}}}, "field_paths.component", "without a keyword sub-field"),
    ({"description": {"type": "keyword"}}, "text_fields.1", "text field 'description' is keyword, not text"),
    ({"description": None}, "text_fields.1", "text field 'description' does not exist"),
]


@pytest.mark.parametrize("change,key,words", MISTAKES)
def test_each_mapping_mistake_is_one_finding(change: dict[str, Any], key: str, words: str) -> None:
    mapping = json.loads(json.dumps(MAPPING))
    props = mapping["bugs-2024"]["mappings"]["properties"]
    for name, value in change.items():
        if value is None:
            del props[name]
        else:
            props[name] = value
    findings = [f for f in spec_findings(spec(), flatten_mapping(mapping)) if f.severity == "error"]
    assert [".".join(map(str, f.key)) for f in findings] == [key], findings
    assert words in findings[0].message


def test_a_good_mapping_has_no_finding_and_unseen_values_warn() -> None:
    fields = flatten_mapping(MAPPING)
    assert spec_findings(spec(), fields) == []
    warnings = value_findings(spec(), {"component": ["ui"], "status": ["open"]})
    assert [(w.severity, w.key) for w in warnings] == [("warning", ("filters", 0, "allowed"))]
    assert "'storage'" in warnings[0].message


def test_fields_in_nested_objects_are_refused() -> None:
    s = spec(field_paths={"id": "key", "tenant": "comments.author", "component": "meta.component"})
    findings = spec_findings(s, flatten_mapping(MAPPING))
    assert findings[0].key == ("field_paths", "tenant") and "nested" in findings[0].message


def test_elasticsearch_combined_fields_needs_one_analyzer() -> None:
    mapping = json.loads(json.dumps(MAPPING))
    mapping["bugs-2024"]["mappings"]["properties"]["description"]["analyzer"] = "english"
    fields = flatten_mapping(mapping)
    assert query_findings(spec(), fields, "opensearch") == []  # cross_fields copes
    (finding,) = query_findings(spec(), fields, "elasticsearch")
    assert finding.key == ("field_combination",) and "bug_text, english" in finding.message
    assert query_findings(spec(field_combination="best_fields"), fields, "elasticsearch") == []


def test_spec_rules() -> None:
    with pytest.raises(ConfigValidationError, match="field_paths is for index_mode: existing"):
        spec(index_mode="managed")
    with pytest.raises(ConfigValidationError, match="field_paths names fields the spec does not have: owner"):
        spec(field_paths={"owner": "x"})
    with pytest.raises(ConfigValidationError, match="supports retrieval: keyword"):
        spec(retrieval="hybrid")


def test_config_refuses_existing_mode_on_an_embedded_backend() -> None:
    tool = {"backend": "local", "name": "search_bugs", "description": "d", "text_fields": ["title"],
            "snippet_field": "title", "index_mode": "existing"}  # fmt: skip
    data = {"version": 1, "backends": {"local": {"type": "embedded", "path": "./data"}}, "search_tools": [tool]}
    with pytest.raises(ConfigError, match=r"search_tools\[0\]\.index_mode"):
        parse_config(data)
