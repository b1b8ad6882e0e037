"""Request and response shapes shared by the OpenSearch and Elasticsearch backends. No I/O.

Everything here is a plain function from a :class:`SearchSpec` (and a query,
scope or document) to a JSON-able dict, or from an engine response back to a
:class:`RawResult`, so both backends send byte-identical bodies and the
bodies are pinned by snapshot tests.

Query shape (``search_body``)::

    bool
      must:   text_query: match on the combined field (combined_fields, BM25F), or
              multi_match best_fields (+ tie_breaker) / most_fields over "subject^3", "body"; operator "or"
      filter: term tenant | terms groups (when the spec has a group field) | term per chosen filter
    from/size, timeout, track_total_hits, _source, sort (score, then id for stable pages)

The model's words only ever reach ``multi_match.query``, which analyses them
as text: no ``query_string`` or ``simple_query_string``, so ``tenant_id:*``,
``OR`` or quotes are just words. Scope and filters are ``filter`` clauses, so
they never change scores and totals count only in-scope documents.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from scopegate.backends.base import document_problem
from scopegate.backends.fieldmap import IDENTITY, FieldMap
from scopegate.errors import ConfigError
from scopegate.scope import Scope, document_key
from scopegate.search.dates import normalise_date
from scopegate.search.fields import combined_text
from scopegate.search.model import RawHit, RawResult, SearchQuery, TotalRelation
from scopegate.search.spec import COMBINED_FIELD, VECTOR_FIELD, SearchSpec

ANALYZER = "scopegate_en"
# Recorded in every index's mapping ``_meta``: documents are addressed by (tenant, id).
# An index without it was written with ``_id`` = the id alone and must be migrated before writes.
KEYS_META = "scopegate_keys"
KEY_SCHEME = "tenant-id-v1"
# An index built for combined_fields keeps its text fields in _source only (mapping ``index: false``).
TEXT_FIELDS_META = "scopegate_text_fields"
TEXT_FIELDS_STORED = "stored"

# How documents are spread over shards: by the engine's default (the ``_id``) or by tenant,
# so one tenant's documents share one shard and its searches touch that shard only.
RoutingMode = Literal["none", "tenant"]
ROUTING_MODES: tuple[RoutingMode, ...] = ("none", "tenant")

# The analyser of the embedded engine (scopegate.search.analysis), rebuilt with
# analysis-common parts: \w+ words (Unicode), tokens of 64+ chars dropped,
# lowercase, Lucene's English stopwords, Snowball English (porter2) stemming.
# Over the demo corpus vocabulary plus a stemming word list it produced the
# same terms as tantivy for 429 of 431 words ("organization": organ vs organiz);
# the built-in "english" analyser (Porter 1) differed on 17. Same terms mean
# the same matching documents, so totals agree with the embedded engine and
# snippets (analysed locally with tantivy) highlight what the engine matched.
#
# One rule differs: the revision of Snowball English in tantivy keeps the double of a stem that is
# exactly a, e or o and a doubled consonant ("adding", "added" -> add; "erring" -> err); Lucene's older
# porter2 makes them "ad", "er", so a search for "add" would miss "adding" on OpenSearch only. The
# override gives those forms tantivy's stems before the stemmer sees them (indexes created before keep
# the analysis they were created with).
KEPT_DOUBLE_STEMS = tuple(
    vowel + double for vowel in "aeo" for double in ("bb", "dd", "ff", "gg", "mm", "nn", "pp", "rr", "tt")
)
KEPT_DOUBLE_SUFFIXES = ("ing", "ed", "ings", "eds", "ingly", "edly")
SCOPEGATE_EN_ANALYSIS: dict[str, Any] = {
    "tokenizer": {
        "scopegate_words": {"type": "pattern", "pattern": r"\w+", "group": 0, "flags": "UNICODE_CHARACTER_CLASS"}
    },
    "filter": {
        "scopegate_long": {"type": "length", "max": 63},
        "scopegate_stop": {"type": "stop", "stopwords": "_english_"},
        "scopegate_kept_doubles": {
            "type": "stemmer_override",
            "rules": [
                ", ".join(stem + suffix for suffix in KEPT_DOUBLE_SUFFIXES) + f" => {stem}"
                for stem in KEPT_DOUBLE_STEMS
            ],
        },
        "scopegate_stem": {"type": "stemmer", "language": "porter2"},
    },
    "analyzer": {
        ANALYZER: {
            "type": "custom",
            "tokenizer": "scopegate_words",
            "filter": ["scopegate_long", "lowercase", "scopegate_stop", "scopegate_kept_doubles", "scopegate_stem"],
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


def scope_filters(spec: SearchSpec, scope: Scope, fm: FieldMap = IDENTITY) -> list[dict[str, Any]]:
    """Filter clauses that confine a request to ``scope`` (on the engine paths of ``fm``).

    With a group field, a scope without groups sees no group-restricted
    document (``terms`` with an empty list matches nothing), as in the embedded engine.
    """
    clauses: list[dict[str, Any]] = [{"term": {fm.q(spec.tenant_field): scope.tenant_id}}]
    if spec.group_field:
        clauses.append({"terms": {fm.q(spec.group_field): sorted(set(scope.group_ids))}})
    return clauses


def text_fields(spec: SearchSpec, fm: FieldMap = IDENTITY, *, power: float = 1.0) -> list[str]:
    """``path^weight`` per text field; ``power`` < 1 makes the weights sub-linear (``weight ** power``)."""
    out = []
    for t in spec.text_fields:
        boost = t.boost**power
        out.append(fm.q(t.name) if boost == 1.0 else f"{fm.q(t.name)}^{boost:g}")
    return out


# The query an existing index gets for ``field_combination: combined_fields`` (it has no catch-all field):
# Elasticsearch's own combined_fields query (BM25F over the fields), OpenSearch's nearest, cross_fields
# (term statistics blended across the fields); chosen on SciFact (bench/results/existing_relevance.md).
EXISTING_COMBINED = {"elasticsearch": "combined_fields", "opensearch": "cross_fields"}

# BM25F (combined_fields) multiplies a field's term frequency by its weight before saturation, so a weight
# acts sub-linearly; cross_fields multiplies the field's score. So that one ``text_fields`` config means the
# same on both engines, the cross_fields stand-in gets each weight's cube root and, unless ``tie_breaker`` is
# set, a tie_breaker of 0.1 (BM25F counts a term in every field, not only the best one): the pair whose top
# 10 agree best with Elasticsearch's combined_fields at weights 1-5, fitted on SciFact's 1109 queries
# without relevance judgments (bench/results/existing_relevance.md).
CROSS_FIELDS_POWER = 1 / 3
CROSS_FIELDS_TIE_BREAKER = 0.1


def text_query(spec: SearchSpec, text: str, fm: FieldMap = IDENTITY, *, engine: str = "opensearch") -> dict[str, Any]:
    """The scored part: the model's text as a match query, fields combined as the spec says.

    combined_fields is a ``match`` on the catch-all field that ingest fills
    with each field repeated by its weight (BM25F, see scopegate.search.fields):
    OpenSearch has no ``combined_fields`` query, and the embedded engine uses
    the same field, so the three engines score alike. An existing index has no
    such field: there the query names the text fields themselves (and so can
    never query a field only scopegate's ingest fills), with the index's analyzers.
    """
    combination: str = spec.field_combination
    if combination == "combined_fields" and not spec.existing:
        return {"match": {COMBINED_FIELD: {"query": text, "operator": "or"}}}
    if combination == "combined_fields":
        if EXISTING_COMBINED.get(engine, "cross_fields") == "combined_fields":
            return {"combined_fields": {"query": text, "fields": text_fields(spec, fm), "operator": "or"}}
        return {"multi_match": {"query": text, "type": "cross_fields", "operator": "or",
                                "fields": text_fields(spec, fm, power=CROSS_FIELDS_POWER),
                                "tie_breaker": spec.tie_breaker or CROSS_FIELDS_TIE_BREAKER}}  # fmt: skip
    multi: dict[str, Any] = {
        "query": text,
        "type": combination,
        "fields": text_fields(spec, fm),
        "operator": "or",
    }
    if combination == "best_fields" and spec.tie_breaker:
        multi["tie_breaker"] = spec.tie_breaker
    return {"multi_match": multi}


def query_filters(spec: SearchSpec, query: SearchQuery, fm: FieldMap = IDENTITY) -> list[dict[str, Any]]:
    """Scope and the chosen filters as ``filter`` clauses."""
    filters = scope_filters(spec, query.scope, fm)
    for name, value in query.filters:
        filters.append({"term": {fm.q(name): value}})
    return filters


def listing_sort(spec: SearchSpec, fm: FieldMap = IDENTITY) -> list[Any]:
    """A filter-only listing: newest first by the date field (when the spec has one), ties by id."""
    newest = [{fm.q(spec.date_field): {"order": "desc", "missing": "_last"}}] if spec.date_field else []
    return [*newest, {fm.q(spec.id_field): "asc"}]


def snippet_highlight(spec: SearchSpec, fm: FieldMap = IDENTITY) -> dict[str, Any]:
    """The engine's highlighter cuts the snippet: one fragment around the best match, with the index's own
    analysis (a synonym match too), plain text (empty tags), or the field's head for a hit matched only by
    other fields (``no_match_size``). The shaper then bounds it as any snippet.

    The unified highlighter re-analyses each hit's text (or reads offsets from the postings) and walks every
    occurrence of every query term in it: on 30 KB bodies about as long again as the search itself
    (bench/results/existing_snippets.md). When the index keeps term vectors with offsets for the field,
    the fast vector highlighter cuts the same kind of window from them at a fraction of that cost."""
    fast = fm.snippet_offsets == "term_vectors"
    options: dict[str, Any] = {
        # unified: sentence passages of about fragment_size (its default); the "word" scanner would make every
        # word its own passage: a one-word snippet. fvh: fragment_size characters around the best-scored
        # matches, its edges moved to a nearby space or punctuation (its "chars" scanner).
        "type": "fvh" if fast else "unified",
        "fragment_size": spec.snippet_chars,
        "number_of_fragments": 1,
        "no_match_size": spec.snippet_chars,
        "order": "score",
        "pre_tags": [""],
        "post_tags": [""],
    }
    return {"fields": {fm.s(spec.snippet_field): options}}


def search_body(
    spec: SearchSpec, query: SearchQuery, fm: FieldMap = IDENTITY, *, engine: str = "opensearch"
) -> dict[str, Any]:
    """The ``_search`` body for ``query``: text in ``must``, scope and filters in ``filter``.

    Without text (a listing) the same filters select, and the date field orders. On an existing index the
    snippet comes from the engine's highlighter and the snippet field stays out of ``_source`` (a 30 KB body
    is never shipped to cut 400 characters of it).
    """
    sources = spec.hit_source_fields()
    engine_snippets = spec.existing and spec.snippets == "engine"
    if engine_snippets:
        sources = tuple(n for n in sources if n != spec.snippet_field or n in spec.result_fields)
    if query.listing:
        listing: dict[str, Any] = {
            "query": {"bool": {"filter": query_filters(spec, query, fm)}},
            "from": query.offset,
            "size": query.limit,
            "timeout": format_timeout(query.engine_timeout_s),
            "track_total_hits": query.track_total_up_to,
            "_source": fm.source_paths(sources),
            "sort": listing_sort(spec, fm),
        }
        if engine_snippets:
            listing["highlight"] = snippet_highlight(spec, fm)
        return listing
    body: dict[str, Any] = {
        "query": {
            "bool": {
                "must": [text_query(spec, query.text, fm, engine=engine)],
                "filter": query_filters(spec, query, fm),
            }
        },
        "from": query.offset,
        "size": query.limit,
        "timeout": format_timeout(query.engine_timeout_s),
        "track_total_hits": query.track_total_up_to,
        "_source": fm.source_paths(sources),
        # Ties broken by id: pages do not shuffle between calls or replicas.
        "sort": ["_score", {fm.q(spec.id_field): "asc"}],
    }
    if engine_snippets:
        body["highlight"] = snippet_highlight(spec, fm)
    return body


def knn_body(spec: SearchSpec, query: SearchQuery, vector: list[float], k: int, *, engine: str) -> dict[str, Any]:
    """k nearest in-scope neighbours: scope and filters go *inside* the k-NN search, never after it.

    Elasticsearch: top-level ``knn`` with ``filter`` (Lucene searches the HNSW
    graph restricted to the filter, or exactly when the filter is small).
    OpenSearch k-NN plugin (Lucene engine): a ``knn`` query with ``filter``,
    the same efficient filtering.
    """
    filters = query_filters(spec, query)
    body: dict[str, Any] = {
        "size": k,
        "timeout": format_timeout(query.engine_timeout_s),
        "_source": list(spec.hit_source_fields()),
    }
    if engine == "elasticsearch":
        body["knn"] = {
            "field": VECTOR_FIELD,
            "query_vector": vector,
            "k": k,
            "num_candidates": min(10_000, max(2 * k, 100)),
            "filter": filters,
        }
    else:
        body["query"] = {"knn": {VECTOR_FIELD: {"vector": vector, "k": k, "filter": {"bool": {"filter": filters}}}}}
    return body


def ids_body(
    spec: SearchSpec, doc_ids: list[str], scope: Scope, *, timeout_s: float, fm: FieldMap = IDENTITY
) -> dict[str, Any]:
    """Stored fields of several documents by id, only those in scope."""
    return {
        "query": {"bool": {"filter": [{"terms": {fm.q(spec.id_field): doc_ids}}, *scope_filters(spec, scope, fm)]}},
        "size": len(doc_ids),
        "track_total_hits": False,
        "timeout": format_timeout(timeout_s),
        "_source": fm.source_paths(spec.hit_source_fields()),
    }


def vector_mapping(dim: int, *, engine: str) -> dict[str, Any]:
    """The vector field: unit vectors compared by inner product, HNSW-indexed."""
    if engine == "elasticsearch":
        return {"type": "dense_vector", "dims": dim, "index": True, "similarity": "dot_product"}
    return {
        "type": "knn_vector",
        "dimension": dim,
        "method": {"name": "hnsw", "engine": "lucene", "space_type": "innerproduct"},
    }


def fetch_body(
    spec: SearchSpec, doc_id: str, scope: Scope, *, timeout_s: float | None = None, fm: FieldMap = IDENTITY
) -> dict[str, Any]:
    """One document by id, only if it is in scope: the scope is part of the request.

    The id is matched as a ``term`` on the spec's keyword id field rather than
    ``ids`` on ``_id``: it works for indices that other pipelines filled with
    their own ``_id`` values, and scopegate's own ingest uses the id as ``_id`` anyway.
    """
    body: dict[str, Any] = {
        "query": {"bool": {"filter": [{"term": {fm.q(spec.id_field): doc_id}}, *scope_filters(spec, scope, fm)]}},
        "size": 1,
        "track_total_hits": False,
        "_source": fm.source_paths(spec.stored_fields()),
    }
    if timeout_s is not None:
        body["timeout"] = format_timeout(timeout_s)
    return body


def count_body(spec: SearchSpec, scope: Scope, fm: FieldMap = IDENTITY) -> dict[str, Any]:
    """``_count`` body: every document inside ``scope``."""
    return {"query": {"bool": {"filter": scope_filters(spec, scope, fm)}}}


# -- index ----------------------------------------------------------------


def mappings(spec: SearchSpec, vector: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Keyword fields as ``keyword``, text fields with the scopegate analyser; nothing dynamic."""
    props: dict[str, Any] = {spec.id_field: {"type": "keyword"}, spec.tenant_field: {"type": "keyword"}}
    if spec.group_field:
        props[spec.group_field] = {"type": "keyword"}
    for name in spec.all_keyword_fields():
        props[name] = {"type": "keyword"}
    for t in spec.text_fields:
        if spec.field_combination == "combined_fields":
            # Only the combined field is searched: keep the text in _source, analyse it once (ingest CPU).
            props[t.name] = {"type": "text", "index": False}
        else:
            # Frequencies without positions: scopegate never runs phrase queries.
            props[t.name] = {"type": "text", "analyzer": ANALYZER, "index_options": "freqs"}
    if spec.date_field:
        props[spec.date_field] = {"type": "date", "format": "strict_date_optional_time||epoch_millis"}
    if spec.field_combination == "combined_fields":
        props[COMBINED_FIELD] = {"type": "text", "analyzer": ANALYZER, "index_options": "freqs"}
    if vector is not None:
        props[VECTOR_FIELD] = dict(vector)
    return {"dynamic": "strict", "properties": props}


def index_settings(
    *,
    analysis: str = "scopegate_en",
    shards: int = 1,
    replicas: int | None = None,
    refresh_interval: str = "1s",
    knn: bool = False,
) -> dict[str, Any]:
    if analysis not in ANALYSIS_PROFILES:
        raise ConfigError(f"unknown analysis profile {analysis!r}; known: {sorted(ANALYSIS_PROFILES)}")
    index: dict[str, Any] = {"number_of_shards": shards, "refresh_interval": refresh_interval}
    if knn:  # OpenSearch k-NN plugin: the index holds knn_vector fields
        index["knn"] = True
    if replicas is not None:
        index["number_of_replicas"] = replicas
    return {"index": index, "analysis": ANALYSIS_PROFILES[analysis]}


def routed_mappings(
    spec: SearchSpec, routing: RoutingMode = "none", vector: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """:func:`mappings`, plus ``_routing: required`` on an index routed by tenant.

    The engine then refuses any write without a routing value, so a document
    can never land on a shard its tenant's searches do not look at.
    """
    if routing not in ROUTING_MODES:
        raise ConfigError(f"unknown routing {routing!r}; known: {', '.join(ROUTING_MODES)}")
    body = mappings(spec, vector)
    if routing == "tenant":
        body = {"_routing": {"required": True}, **body}
    return body


def index_body(
    spec: SearchSpec,
    *,
    analysis: str = "scopegate_en",
    shards: int = 1,
    replicas: int | None = None,
    routing: RoutingMode = "none",
) -> dict[str, Any]:
    """Body to create one versioned index directly (settings + mappings, the key scheme in ``_meta``)."""
    return {
        "settings": index_settings(analysis=analysis, shards=shards, replicas=replicas),
        "mappings": {**routed_mappings(spec, routing), "_meta": {KEYS_META: KEY_SCHEME}},
    }


def index_template_body(
    spec: SearchSpec,
    *,
    analysis: str = "scopegate_en",
    shards: int = 1,
    replicas: int | None = None,
    vector: Mapping[str, Any] | None = None,
    knn_setting: bool = False,
    model_id: str | None = None,
    routing: RoutingMode = "none",
) -> dict[str, Any]:
    """Composable index template for every ``<index>-v<N>``: a reindex target gets the same mapping.

    With vectors, the embedding model's id is kept in the mapping's ``_meta``
    (like the spec beside an embedded index), so a model change is detected;
    so is the document key scheme (:data:`KEY_SCHEME`), always.
    """
    body_mappings = routed_mappings(spec, routing, vector)
    body_mappings["_meta"] = {**mapping_meta(spec, model_id), KEYS_META: KEY_SCHEME}
    return {
        "index_patterns": [IndexNames(spec.index).pattern],
        "priority": 100,
        "template": {
            "settings": index_settings(analysis=analysis, shards=shards, replicas=replicas, knn=knn_setting),
            "mappings": body_mappings,
        },
        "_meta": {"managed_by": "scopegate", "spec": spec.name},
    }


# -- documents -------------------------------------------------------------


def mapping_meta(spec: SearchSpec, model_id: str | None) -> dict[str, str]:
    """What an index keeps about how it was built: the combined field's recipe (and that its text fields are
    stored, not searchable one by one) and the embedding model."""
    meta: dict[str, str] = {}
    if spec.field_combination == "combined_fields":
        meta["scopegate_combined"] = ",".join(f"{name}^{copies}" for name, copies in spec.combined_weights())
        meta[TEXT_FIELDS_META] = TEXT_FIELDS_STORED
    if model_id:
        meta["scopegate_embedder"] = model_id
    return meta


def document_source(spec: SearchSpec, record: Mapping[str, Any], vector: list[float] | None = None) -> dict[str, Any]:
    """The stored fields of ``record`` (spec field names only; blanks dropped; groups as a list).

    The id loses surrounding whitespace (as on the embedded engine); the tenant
    is stored exactly as given: :func:`document_problem` has refused any tenant
    that breaks the identity rule, so nothing is normalised into another tenant.
    """
    doc: dict[str, Any] = {}
    for name in spec.stored_fields():
        value = record.get(name)
        if value is None or value == "":
            continue
        if name == spec.group_field:
            doc[name] = [value] if isinstance(value, str) else [str(g) for g in value]
        elif name == spec.id_field:
            doc[name] = str(value).strip()
        elif name == spec.date_field:
            doc[name] = normalise_date(value)
        else:
            doc[name] = str(value)
    combined = combined_text(spec, record) if spec.field_combination == "combined_fields" else ""
    if combined:
        doc[COMBINED_FIELD] = combined
    if vector is not None:
        doc[VECTOR_FIELD] = vector
    return doc


@dataclass(frozen=True)
class DocAddress:
    """Where one document lives in the engine: its ``_id`` and its routing value (None: the default)."""

    engine_id: str
    routing: str | None = None

    def action_meta(self, index: str) -> dict[str, Any]:
        """The metadata of a ``_bulk`` action (``index``, ``delete``) on this document."""
        meta: dict[str, Any] = {"_index": index, "_id": self.engine_id}
        if self.routing is not None:
            meta["routing"] = self.routing
        return meta


def doc_address(spec: SearchSpec, tenant: str, doc_id: str, routing: RoutingMode = "none") -> DocAddress:
    """The engine address of document ``doc_id`` of ``tenant``: the one place ingest, fetch and delete get it.

    The ``_id`` is :func:`scopegate.scope.document_key` (tenant-qualified), so
    the same id in another tenant is another document: a write or a delete by
    one tenant never reaches another's. Routing by tenant sends every document
    of a tenant to one shard (and every request of that tenant to it).
    """
    del spec  # every spec uses the same key scheme today
    return DocAddress(document_key(tenant, doc_id), tenant if routing == "tenant" else None)


def scope_routing(scope: Scope, routing: RoutingMode = "none") -> str | None:
    """The ``routing`` parameter of a search or count in ``scope``: the shard its tenant's documents are on."""
    return scope.tenant_id if routing == "tenant" else None


def bulk_operations(
    spec: SearchSpec,
    records: list[Mapping[str, Any]],
    index: str,
    vectors: list[list[float]] | None = None,
    *,
    routing: RoutingMode = "none",
) -> tuple[list[dict[str, Any]], list[tuple[str, str]]]:
    """``_bulk`` lines (action, source, action, source, ...) and the records refused before sending."""
    lines: list[dict[str, Any]] = []
    refused: list[tuple[str, str]] = []
    for position, record in enumerate(records, start=1):
        problem = document_problem(spec, record, spec.date_field)
        if problem:
            refused.append((str(record.get(spec.id_field) or f"#{position}"), problem))
            continue
        source = document_source(spec, record, vectors[position - 1] if vectors is not None else None)
        address = doc_address(spec, source[spec.tenant_field], source[spec.id_field], routing)
        lines.append({"index": address.action_meta(index)})
        lines.append(source)
    return lines, refused


# Engines refuse a request body over ``http.max_content_length`` (100 MB by default) with HTTP 413.
# A count-sized batch of realistic tickets (30 KB bodies, and the combined field repeating them)
# can pass that, so one batch goes out as several bulk bodies of at most this many characters
# (at most 4 bytes each in UTF-8: still under the limit).
MAX_BULK_CHARS = 16_000_000


def bulk_bodies(lines: list[dict[str, Any]], max_chars: int = MAX_BULK_CHARS) -> list[tuple[str, int]]:
    """NDJSON bodies of at most ``max_chars`` characters, each with its document count.

    ``lines`` are (action, source) pairs as :func:`bulk_operations` makes them; a
    pair is never split, and a pair longer than ``max_chars`` goes alone.
    """
    bodies: list[tuple[str, int]] = []
    parts: list[str] = []
    size = 0
    for k in range(0, len(lines), 2):
        pair = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines[k : k + 2])
        if parts and size + len(pair) > max_chars:
            bodies.append(("".join(parts), len(parts)))
            parts, size = [], 0
        parts.append(pair)
        size += len(pair)
    if parts:
        bodies.append(("".join(parts), len(parts)))
    return bodies


def delete_operations(
    spec: SearchSpec, doc_ids: list[str], index: str, *, tenant: str, routing: RoutingMode = "none"
) -> list[dict[str, Any]]:
    """``_bulk`` delete lines for the documents ``(tenant, id)``."""
    return [{"delete": doc_address(spec, tenant, d, routing).action_meta(index)} for d in doc_ids]


def bulk_errors(
    response: Mapping[str, Any], limit: int = 1000, *, ids: Mapping[str, str] | None = None
) -> tuple[int, list[tuple[str, str]]]:
    """(failed count, (id, reason) pairs) from a ``_bulk`` response; ``ids`` maps engine ``_id``s to document ids."""
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
            engine_id = str(result.get("_id", "?"))
            out.append(((ids or {}).get(engine_id, engine_id), f"{kind}: {str(reason)[:300]}"))
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
    total = int(shards.get("total", 0) or 0)
    if "successful" in shards:
        # Every shard the request covered must have answered or been skipped (pre-filtered
        # as holding no match); the rest is missing from the result even when ``failed`` says 0.
        answered = int(shards.get("successful", 0) or 0) + int(shards.get("skipped", 0) or 0)
        failed = max(failed, total - answered)
    if failed > 0:
        reasons.append(f"{failed} of {total} shards failed")
    return "; ".join(reasons) or None


def hit_fields(spec: SearchSpec, hit: Mapping[str, Any], fm: FieldMap | None) -> dict[str, Any]:
    """A hit's fields by spec name: ``_source`` as is (a managed index), or read through ``fm`` with the
    highlighter's fragment as the snippet field's value (an existing index)."""
    source = dict(hit.get("_source") or {})
    if fm is None:
        return source
    fields = fm.model_fields(source, spec.stored_fields())
    fragments = (hit.get("highlight") or {}).get(fm.s(spec.snippet_field))
    if fragments:
        fields[spec.snippet_field] = str(fragments[0])
    return fields


def parse_search_response(
    spec: SearchSpec, response: Mapping[str, Any], terms: tuple[str, ...] = (), fm: FieldMap | None = None
) -> RawResult:
    """Engine ``_search`` response -> :class:`RawResult` (hits, honest total, partial flag); ``fm``: read the
    fields of an existing index by their spec names."""
    hits_obj = response.get("hits") or {}
    hits = []
    for hit in hits_obj.get("hits", []):
        source = hit_fields(spec, hit, fm)
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


def parse_fetch_response(
    response: Mapping[str, Any], spec: SearchSpec | None = None, fm: FieldMap | None = None
) -> dict[str, Any] | None:
    hits = (response.get("hits") or {}).get("hits") or []
    if not hits:
        return None
    if spec is not None and fm is not None:
        return fm.model_fields(dict(hits[0].get("_source") or {}), spec.stored_fields())
    return dict(hits[0].get("_source") or {})


# -- generations and scans ---------------------------------------------------------------------


def generation_from_stats(response: Mapping[str, Any]) -> str:
    """A token from ``_stats/refresh?level=shards`` that changes whenever what searches see changes.

    Per index behind the alias: its name and uuid; per shard copy: the node,
    the primary term (new after a restart or failover, when counters start
    over) and ``refresh.external_total``, which the engine increments after
    each refresh that makes writes visible to searches, never before. Idle
    shards are not refreshed, so the token is stable while nothing is written.
    Hashed, so its length does not grow with the number of shards.
    """
    parts: list[Any] = []
    indices = response.get("indices") or {}
    for name in sorted(indices):
        index = indices[name] or {}
        copies: list[Any] = []
        for shard, entries in sorted((index.get("shards") or {}).items()):
            for entry in entries or []:
                routing = entry.get("routing") or {}
                copies.append(
                    [
                        str(shard),
                        bool(routing.get("primary")),
                        routing.get("node"),
                        (entry.get("retention_leases") or {}).get("primary_term"),
                        (entry.get("refresh") or {}).get("external_total"),
                    ]
                )
        parts.append([name, index.get("uuid"), sorted(copies, key=json.dumps)])
    digest = hashlib.sha256(json.dumps(parts, sort_keys=True).encode("utf-8")).hexdigest()[:32]
    return f"stats:{digest}"


STATS_FILTER = (
    "indices.*.uuid,indices.*.shards.*.routing.primary,indices.*.shards.*.routing.node,"
    "indices.*.shards.*.retention_leases.primary_term,indices.*.shards.*.refresh.external_total"
)


def scan_body(spec: SearchSpec, size: int, after: list[Any] | None = None) -> dict[str, Any]:
    """One page of every document, in (tenant, id) order, continuing ``search_after`` ``after``."""
    body: dict[str, Any] = {
        "query": {"match_all": {}},
        "size": size,
        "sort": [{spec.tenant_field: "asc"}, {spec.id_field: "asc"}],
        "_source": list(spec.stored_fields()),
        "track_total_hits": False,
    }
    if after is not None:
        body["search_after"] = after
    return body
