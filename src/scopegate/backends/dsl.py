"""Request and response shapes shared by the OpenSearch and Elasticsearch backends. No I/O.

Everything here is a plain function from a :class:`SearchSpec` (and a query,
scope or document) to a JSON-able dict, or from an engine response back to a
:class:`RawResult`, so both backends send byte-identical bodies and the
bodies are pinned by snapshot tests.

Query shape (``search_body``)::

    bool
      must:   multi_match  best_fields, operator "or", fields "subject^3", "body", query = plain text
      filter: term tenant | terms groups (when the spec has a group field) | term per chosen filter
    from/size, timeout, track_total_hits, _source, sort (score, then id for stable pages)

The model's words only ever reach ``multi_match.query``, which analyses them
as text: no ``query_string`` or ``simple_query_string``, so ``tenant_id:*``,
``OR`` or quotes are just words. Scope and filters are ``filter`` clauses, so
they never change scores and totals count only in-scope documents.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from scopegate.scope import Scope
from scopegate.search.model import RawHit, RawResult, SearchQuery, TotalRelation
from scopegate.search.spec import SearchSpec

ANALYZER = "scopegate_en"

# The analyser of the embedded engine (scopegate.search.analysis), rebuilt with
# analysis-common parts: \w+ words (Unicode), tokens of 64+ chars dropped,
# lowercase, Lucene's English stopwords, Snowball English (porter2) stemming.
# Over the demo corpus vocabulary plus a stemming word list it produced the
# same terms as tantivy for 429 of 431 words ("organization": organ vs organiz);
# the built-in "english" analyser (Porter 1) differed on 17. Same terms mean
# the same matching documents, so totals agree with the embedded engine and
# snippets (analysed locally with tantivy) highlight what the engine matched.
SCOPEGATE_EN_ANALYSIS: dict[str, Any] = {
    "tokenizer": {
        "scopegate_words": {"type": "pattern", "pattern": r"\w+", "group": 0, "flags": "UNICODE_CHARACTER_CLASS"}
    },
    "filter": {
        "scopegate_long": {"type": "length", "max": 63},
        "scopegate_stop": {"type": "stop", "stopwords": "_english_"},
        "scopegate_stem": {"type": "stemmer", "language": "porter2"},
    },
    "analyzer": {
        ANALYZER: {
            "type": "custom",
            "tokenizer": "scopegate_words",
            "filter": ["scopegate_long", "lowercase", "scopegate_stop", "scopegate_stem"],
        }
    },
}

# Core-only fallback (no analysis-common module, e.g. Elasticsearch's
# integ-test distribution): standard tokenizer, lowercase, English stopwords,
# no stemming. Matching is then a little stricter than the embedded engine's.
STANDARD_ANALYSIS: dict[str, Any] = {
    "analyzer": {ANALYZER: {"type": "standard", "stopwords": "_english_", "max_token_length": 63}}
}

ANALYSIS_PROFILES: dict[str, dict[str, Any]] = {"scopegate_en": SCOPEGATE_EN_ANALYSIS, "standard": STANDARD_ANALYSIS}


@dataclass(frozen=True)
class IndexNames:
    """The alias agents search and the versioned indices behind it."""

    base: str

    @property
    def read_alias(self) -> str:
        return f"{self.base}-read"

    @property
    def pattern(self) -> str:
        return f"{self.base}-v*"

    @property
    def template(self) -> str:
        return f"{self.base}-template"

    def version(self, number: int) -> str:
        return f"{self.base}-v{number}"

    def version_of(self, index: str) -> int | None:
        prefix = f"{self.base}-v"
        if index.startswith(prefix) and index[len(prefix) :].isdigit():
            return int(index[len(prefix) :])
        return None


def format_timeout(seconds: float) -> str:
    """Engine time value, rounded up to whole milliseconds (never "0ms", which means no timeout)."""
    return f"{max(1, math.ceil(seconds * 1000 - 1e-9))}ms"


# -- queries ---------------------------------------------------------------


def scope_filters(spec: SearchSpec, scope: Scope) -> list[dict[str, Any]]:
    """Filter clauses that confine a request to ``scope``.

    With a group field, a scope without groups sees no group-restricted
    document (``terms`` with an empty list matches nothing), as in the embedded engine.
    """
    clauses: list[dict[str, Any]] = [{"term": {spec.tenant_field: scope.tenant_id}}]
    if spec.group_field:
        clauses.append({"terms": {spec.group_field: sorted(set(scope.group_ids))}})
    return clauses


def text_fields(spec: SearchSpec) -> list[str]:
    return [t.name if t.boost == 1.0 else f"{t.name}^{t.boost:g}" for t in spec.text_fields]


def search_body(spec: SearchSpec, query: SearchQuery) -> dict[str, Any]:
    """The ``_search`` body for ``query``: text in ``must``, scope and filters in ``filter``."""
    filters = scope_filters(spec, query.scope)
    for name, value in query.filters:
        filters.append({"term": {name: value}})
    return {
        "query": {
            "bool": {
                "must": [
                    {
                        "multi_match": {
                            "query": query.text,
                            "type": "best_fields",
                            "fields": text_fields(spec),
                            "operator": "or",
                        }
                    }
                ],
                "filter": filters,
            }
        },
        "from": query.offset,
        "size": query.limit,
        "timeout": format_timeout(query.engine_timeout_s),
        "track_total_hits": query.track_total_up_to,
        "_source": list(spec.hit_source_fields()),
        # Ties broken by id: pages do not shuffle between calls or replicas.
        "sort": ["_score", {spec.id_field: "asc"}],
    }


def fetch_body(spec: SearchSpec, doc_id: str, scope: Scope, *, timeout_s: float | None = None) -> dict[str, Any]:
    """One document by id, only if it is in scope: the scope is part of the request.

    The id is matched as a ``term`` on the spec's keyword id field rather than
    ``ids`` on ``_id``: it works for indices that other pipelines filled with
    their own ``_id`` values, and scopegate's own ingest uses the id as ``_id`` anyway.
    """
    body: dict[str, Any] = {
        "query": {"bool": {"filter": [{"term": {spec.id_field: doc_id}}, *scope_filters(spec, scope)]}},
        "size": 1,
        "track_total_hits": False,
        "_source": list(spec.stored_fields()),
    }
    if timeout_s is not None:
        body["timeout"] = format_timeout(timeout_s)
    return body


def count_body(spec: SearchSpec, scope: Scope) -> dict[str, Any]:
    """``_count`` body: every document inside ``scope``."""
    return {"query": {"bool": {"filter": scope_filters(spec, scope)}}}


# -- index ----------------------------------------------------------------


def mappings(spec: SearchSpec) -> dict[str, Any]:
    """Keyword fields as ``keyword``, text fields with the scopegate analyser; nothing dynamic."""
    props: dict[str, Any] = {spec.id_field: {"type": "keyword"}, spec.tenant_field: {"type": "keyword"}}
    if spec.group_field:
        props[spec.group_field] = {"type": "keyword"}
    for name in spec.all_keyword_fields():
        props[name] = {"type": "keyword"}
    for t in spec.text_fields:
        # Frequencies without positions: scopegate never runs phrase queries.
        props[t.name] = {"type": "text", "analyzer": ANALYZER, "index_options": "freqs"}
    return {"dynamic": "strict", "properties": props}


def index_settings(
    *, analysis: str = "scopegate_en", shards: int = 1, replicas: int | None = None, refresh_interval: str = "1s"
) -> dict[str, Any]:
    if analysis not in ANALYSIS_PROFILES:
        raise ValueError(f"unknown analysis profile {analysis!r}; known: {sorted(ANALYSIS_PROFILES)}")
    index: dict[str, Any] = {"number_of_shards": shards, "refresh_interval": refresh_interval}
    if replicas is not None:
        index["number_of_replicas"] = replicas
    return {"index": index, "analysis": ANALYSIS_PROFILES[analysis]}


def index_body(
    spec: SearchSpec, *, analysis: str = "scopegate_en", shards: int = 1, replicas: int | None = None
) -> dict[str, Any]:
    """Body to create one versioned index directly (settings + mappings)."""
    return {
        "settings": index_settings(analysis=analysis, shards=shards, replicas=replicas),
        "mappings": mappings(spec),
    }


def index_template_body(
    spec: SearchSpec, *, analysis: str = "scopegate_en", shards: int = 1, replicas: int | None = None
) -> dict[str, Any]:
    """Composable index template for every ``<index>-v<N>``: a reindex target gets the same mapping."""
    return {
        "index_patterns": [IndexNames(spec.index).pattern],
        "priority": 100,
        "template": {
            "settings": index_settings(analysis=analysis, shards=shards, replicas=replicas),
            "mappings": mappings(spec),
        },
        "_meta": {"managed_by": "scopegate", "spec": spec.name},
    }


def alias_swap_actions(alias: str, old: list[str], new: str) -> dict[str, Any]:
    """One atomic ``_aliases`` call: ``alias`` moves from ``old`` to ``new``."""
    actions: list[dict[str, Any]] = [{"remove": {"index": index, "alias": alias}} for index in old]
    actions.append({"add": {"index": new, "alias": alias, "is_write_index": True}})
    return {"actions": actions}


# -- documents -------------------------------------------------------------


def document_problem(spec: SearchSpec, record: Mapping[str, Any]) -> str | None:
    """Why ``record`` cannot be indexed, or None (same rules as the embedded engine)."""
    doc_id = record.get(spec.id_field)
    if not isinstance(doc_id, str) or not doc_id.strip():
        return f"missing {spec.id_field}"
    if len(doc_id.encode()) > 512:
        return f"{spec.id_field} longer than 512 bytes"
    tenant = record.get(spec.tenant_field)
    if not isinstance(tenant, str) or not tenant.strip():
        return f"missing {spec.tenant_field}"
    return None


def document_source(spec: SearchSpec, record: Mapping[str, Any]) -> dict[str, Any]:
    """The stored fields of ``record`` (spec field names only; blanks dropped; groups as a list)."""
    doc: dict[str, Any] = {}
    for name in spec.stored_fields():
        value = record.get(name)
        if value is None or value == "":
            continue
        if name == spec.group_field:
            doc[name] = [value] if isinstance(value, str) else [str(g) for g in value]
        elif name in (spec.id_field, spec.tenant_field):
            doc[name] = str(value).strip()
        else:
            doc[name] = str(value)
    return doc


def bulk_operations(
    spec: SearchSpec, records: list[Mapping[str, Any]], index: str
) -> tuple[list[dict[str, Any]], list[tuple[str, str]]]:
    """``_bulk`` lines (action, source, action, source, ...) and the records refused before sending."""
    lines: list[dict[str, Any]] = []
    refused: list[tuple[str, str]] = []
    for position, record in enumerate(records, start=1):
        problem = document_problem(spec, record)
        if problem:
            refused.append((str(record.get(spec.id_field) or f"#{position}"), problem))
            continue
        source = document_source(spec, record)
        lines.append({"index": {"_index": index, "_id": source[spec.id_field]}})
        lines.append(source)
    return lines, refused


def bulk_errors(response: Mapping[str, Any], limit: int = 1000) -> tuple[int, list[tuple[str, str]]]:
    """(failed count, (id, reason) pairs) from a ``_bulk`` response."""
    if not response.get("errors"):
        return 0, []
    failed = 0
    out: list[tuple[str, str]] = []
    for item in response.get("items", []):
        result: Mapping[str, Any] = next(iter(item.values()), {})
        error = result.get("error")
        if not error:
            continue
        failed += 1
        if len(out) < limit:
            reason = error.get("reason", "") if isinstance(error, Mapping) else str(error)
            kind = error.get("type", "error") if isinstance(error, Mapping) else "error"
            out.append((str(result.get("_id", "?")), f"{kind}: {str(reason)[:300]}"))
    return failed, out


# -- responses -------------------------------------------------------------


def parse_total(hits: Mapping[str, Any]) -> tuple[int, TotalRelation]:
    total = hits.get("total")
    if isinstance(total, Mapping):
        relation: TotalRelation = "gte" if total.get("relation") == "gte" else "eq"
        return int(total.get("value", 0)), relation
    if isinstance(total, int):  # pre-7 style, or rest_total_hits_as_int
        return total, "eq"
    return len(hits.get("hits", [])), "eq"


def partial_reason(response: Mapping[str, Any]) -> str | None:
    """Why a response is incomplete: engine timeout and/or failed shards."""
    reasons = []
    if response.get("timed_out"):
        reasons.append("engine timeout reached; results are what was found in time")
    shards = response.get("_shards") or {}
    failed = int(shards.get("failed", 0) or 0)
    if failed > 0:
        reasons.append(f"{failed} of {int(shards.get('total', 0) or 0)} shards failed")
    return "; ".join(reasons) or None


def parse_search_response(spec: SearchSpec, response: Mapping[str, Any], terms: tuple[str, ...] = ()) -> RawResult:
    """Engine ``_search`` response -> :class:`RawResult` (hits, honest total, partial flag)."""
    hits_obj = response.get("hits") or {}
    hits = []
    for hit in hits_obj.get("hits", []):
        source = dict(hit.get("_source") or {})
        doc_id = source.get(spec.id_field, hit.get("_id"))
        score = hit.get("_score")
        if score is None:  # sorted responses may carry the score in "sort" only
            sort = hit.get("sort") or [0.0]
            score = sort[0] if isinstance(sort[0], int | float) else 0.0
        hits.append(RawHit(doc_id=str(doc_id), score=float(score), fields=source))
    total, relation = parse_total(hits_obj)
    reason = partial_reason(response)
    took = response.get("took")
    return RawResult(
        hits=tuple(hits),
        total=total,
        total_relation=relation,
        partial=reason is not None,
        partial_reason=reason,
        took_ms=float(took) if isinstance(took, int | float) else None,
        terms=terms,
    )


def parse_fetch_response(response: Mapping[str, Any]) -> dict[str, Any] | None:
    hits = (response.get("hits") or {}).get("hits") or []
    if not hits:
        return None
    return dict(hits[0].get("_source") or {})
