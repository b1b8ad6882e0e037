"""What the OpenSearch and Elasticsearch backends share: index lifecycle, ingest, search, fetch.

A subclass supplies its client (``_connect``) and a handful of engine calls
(``_search``, ``_bulk``, alias and index admin); request bodies come from
:mod:`scopegate.backends.dsl`, so both engines receive the same queries.

Partial results (engine ``timeout`` reached, failed shards) are returned
flagged (``RawResult.partial``) by default, or raised as a retryable
:class:`BackendError` with ``on_partial="error"``. A search that hits the
engine timeout before collecting anything fails on the engine side
(``time_exceeded_exception``), which also becomes a retryable BackendError.

Index layout: documents live in ``<index>-v<N>``; agents search the alias
``<index>-read``, which is also the write alias (``is_write_index``), or
their own read alias ``<index>-read-<agent>`` (``agent=``, optionally
filtered with ``alias_filter=``). A reindex fills ``<index>-v<N+1>`` and moves
every alias in one atomic ``_aliases`` call, so a search never sees a
half-built index (:mod:`scopegate.config.reindex` verifies before the move).

On a cluster: ``shards``/``replicas`` size the index; ``routing="tenant"``
sends each tenant's documents to one shard and each of its requests (search,
fetch, count, ingest, delete) to that shard only (:func:`dsl.doc_address`);
``coordinating_url`` gives searches and fetches their own client on the
coordinating-only nodes while writes and admin calls use ``url``. With more
than one host the client marks a node that refuses connections (or answers
502/503/504) dead for ``dead_timeout_s`` (doubling up to 8x while it stays
down) and retries such a call once on another node (``failover_retries``);
it never sniffs, so it only ever talks to the URLs it was given.

Many processes, one cluster:

* **Generation** (cache invalidation) comes from the cluster, never from a
  counter in one process: :func:`dsl.generation_from_stats` over
  ``_stats/refresh?level=shards`` of the indices behind the searched alias
  (their uuids, and per shard copy the primary term and the count of
  refreshes that made writes visible). Any writer's refresh changes it; it is
  read before a search, so a result is never labelled newer than what it saw.
* **Writes never hold up searches**: searches, fetches and generation reads
  use :attr:`EngineBackend.search_client` (the coordinating nodes, or their
  own connection pool to ``url``), bulk, delete and admin calls
  :attr:`EngineBackend.client`; encoding a bulk batch runs off the event loop.
* **Documents belong to a tenant**: ``_id`` is :func:`dsl.doc_address` of
  (tenant, id); deletes name the tenant. Indices record the scheme in their
  mapping ``_meta``; one written before it is searchable but refuses writes
  until :meth:`EngineBackend.migrate_keys` has reindexed it.
"""

from __future__ import annotations

import asyncio
import copy
import json
import logging
import time
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from itertools import islice
from typing import Any, Generic, TypeVar

from scopegate.backends import aggs, dsl, layout
from scopegate.backends.base import IngestReport, ProgressCallback
from scopegate.backends.fieldmap import FieldMap, flatten_mapping, resolve
from scopegate.backends.mapping_check import (
    Finding,
    filter_values_body,
    parse_filter_values,
    query_findings,
    spec_findings,
)
from scopegate.backends.outage import FailureLog, host_list, quiet_client_loggers, tls_failure
from scopegate.errors import BackendError, ConfigError, FieldUnavailable, IngestError, MissingIndexError
from scopegate.scope import Scope, ScopeMissing, canonical_id
from scopegate.search.aggregation import AggregationQuery, RawAggregation
from scopegate.search.analysis import analyze, unique_terms
from scopegate.search.fields import embedding_text
from scopegate.search.model import RawHit, RawResult, SearchQuery
from scopegate.search.retrieval import KnnResult, retrieve
from scopegate.search.spec import SearchSpec
from scopegate.validation import format_path
from scopegate.vector.encoder import Encoder, encoder_from_name

log = logging.getLogger(__name__)

MAX_QUERY_TERMS = 32
SCAN_PAGE = 1000
ADMIN_TIMEOUT_S = 30.0
BULK_TIMEOUT_S = 120.0
DEFAULT_URL = "http://127.0.0.1:9200"
DEAD_TIMEOUT_S = 2.0
# With several hosts, a node answering these (e.g. 503 while it rejoins a cluster) is left out
# and the call tried once more on another.
FAILOVER_STATUS = (502, 503, 504)


ClientT = TypeVar("ClientT")


def _fm(fm: FieldMap | None) -> dict[str, FieldMap]:
    """``fm=`` for a dsl builder: the resolved map of an existing index, nothing for a managed one."""
    return {} if fm is None else {"fm": fm}


class EngineBackend(ABC, Generic[ClientT]):
    """A search backend on an Elasticsearch-family engine (see module docstring).

    ``url`` is one node or a list; ``client`` replaces the client built from
    ``url`` and ``client_options`` (passed to the engine's client class). The
    client times out after the spec's ``client_timeout_s``; with several hosts
    it retries a refused connection or a 502/503/504 once on another host, never a
    timeout (see the module docstring).
    """

    engine = "engine"

    def __init__(
        self,
        spec: SearchSpec,
        url: str | list[str] = DEFAULT_URL,
        *,
        client: ClientT | None = None,
        analysis: str = "scopegate_en",
        shards: int = 1,
        replicas: int | None = None,
        routing: dsl.RoutingMode = "none",
        agent: str | None = None,
        alias_filter: layout.AliasFilter | None = None,
        coordinating_url: str | list[str] | None = None,
        failover_retries: int | None = None,
        dead_timeout_s: float = DEAD_TIMEOUT_S,
        refresh_after_write: bool = True,
        bulk_concurrency: int = 2,
        on_partial: str = "flag",
        encoder: Encoder | None = None,
        **client_options: Any,
    ) -> None:
        if on_partial not in ("flag", "error"):
            raise ConfigError("on_partial must be 'flag' or 'error'")
        if routing not in dsl.ROUTING_MODES:
            raise ConfigError(f"routing must be one of {', '.join(dsl.ROUTING_MODES)}, not {routing!r}")
        if shards < 1 or (replicas is not None and replicas < 0):
            raise ConfigError("shards must be at least 1 and replicas at least 0")
        if alias_filter and agent is None:
            raise ConfigError("alias_filter needs an agent: the shared read alias is also the write alias")
        if spec.existing and (agent is not None or routing != "none"):
            raise ConfigError("an existing index is searched as named: agent and routing are for managed indexes")
        self.spec = spec
        self.on_partial = on_partial
        self.names = dsl.IndexNames(spec.index)
        self.analysis = analysis
        self.shards = shards
        self.replicas = replicas
        self.routing: dsl.RoutingMode = routing
        self.agent = agent
        self.agent_alias = layout.agent_alias(self.names.read_alias, agent) if agent is not None else None
        self.alias_filter = layout.alias_filter_query(spec, alias_filter)
        self.refresh_after_write = refresh_after_write
        self.bulk_concurrency = max(1, bulk_concurrency)
        self._ready = False
        self._keys_checked: set[str] = set()
        self._countable: set[tuple[tuple[str, ...], tuple[str, ...]]] = set()
        # Vector and hybrid retrieval: documents are embedded on ingest, queries before each k-NN call,
        # on one private thread (encoding is CPU-bound and must not block the event loop).
        self.encoder: Encoder | None = None
        self._encode_pool: ThreadPoolExecutor | None = None
        if spec.uses_vectors():
            self.encoder = encoder or encoder_from_name(spec.embedder)
            self._encode_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"scopegate-{self.engine}-encode")
        self._target: str | None = None  # pinned(): search this index instead of the alias
        # index_mode existing: the field paths, resolved against the index's mapping on first use
        self._field_map: FieldMap | None = None
        self._owns_clients = True
        hosts = [url] if isinstance(url, str) else list(url)
        quiet_client_loggers()
        self.failures = FailureLog(self.engine, host_list(hosts))
        self.client: ClientT = (
            client if client is not None else self._client_for(hosts, failover_retries, dead_timeout_s, client_options)
        )
        # Searches get their own connection pool (the coordinating nodes, or another pool to the same nodes):
        # a long ingest never takes a search's connection.
        self.search_client: ClientT = self.client
        if coordinating_url is not None:
            search_hosts = [coordinating_url] if isinstance(coordinating_url, str) else list(coordinating_url)
            self.search_client = self._client_for(search_hosts, failover_retries, dead_timeout_s, client_options)
        elif client is None:
            self.search_client = self._client_for(hosts, failover_retries, dead_timeout_s, client_options)

    def _client_for(
        self, hosts: list[str], failover_retries: int | None, dead_timeout_s: float, options: dict[str, Any]
    ) -> ClientT:
        if not hosts:
            raise ConfigError(f"{self.engine} needs at least one URL")
        retries = (1 if len(hosts) > 1 else 0) if failover_retries is None else failover_retries
        if retries < 0 or dead_timeout_s <= 0:
            raise ConfigError("failover_retries must be >= 0 and dead_timeout_s > 0")
        return self._connect(
            hosts, self.spec.client_timeout_s, failover_retries=retries, dead_timeout_s=dead_timeout_s, **options
        )

    @property
    def search_target(self) -> str:
        """What searches and fetches address: a pinned index, the agent's alias, the read alias, or (an
        existing index) the index or alias exactly as the spec names it."""
        if self.spec.existing:
            return self._target or self.spec.index
        return self._target or self.agent_alias or self.names.read_alias

    def pinned(self, index: str) -> EngineBackend[ClientT]:
        """A view of this backend that searches ``index`` itself (same clients; closing it closes nothing)."""
        view = copy.copy(self)
        view._target = index
        view._owns_clients = False
        return view

    # -- engine calls a subclass provides --------------------------------
    @abstractmethod
    def _connect(
        self, hosts: list[str], timeout_s: float, *, failover_retries: int, dead_timeout_s: float, **client_options: Any
    ) -> ClientT:
        """A client for ``hosts``: ``timeout_s`` per request, a refused connection retried
        ``failover_retries`` times on another host, a failed host left out for ``dead_timeout_s``."""

    @abstractmethod
    async def _search(
        self, index: str, body: dict[str, Any], timeout_s: float, routing: str | None = None
    ) -> Mapping[str, Any]:
        """A search with :attr:`search_client`."""

    @abstractmethod
    async def _bulk(self, ndjson: str, timeout_s: float) -> Mapping[str, Any]: ...

    @abstractmethod
    async def _refresh(self, index: str) -> None: ...

    @abstractmethod
    async def _put_template(self, name: str, body: dict[str, Any]) -> None: ...

    @abstractmethod
    async def _create_index(self, name: str, body: dict[str, Any]) -> None: ...

    @abstractmethod
    async def _alias_targets(self, alias: str) -> list[str]:
        """Indices behind ``alias``; [] when the alias does not exist."""

    @abstractmethod
    async def _update_aliases(self, body: dict[str, Any]) -> None: ...

    @abstractmethod
    async def _delete_indices(self, pattern: str) -> None: ...

    @abstractmethod
    async def _health(self, index: str) -> Mapping[str, Any]:
        """``GET /_cluster/health/<index>`` right now (no waiting)."""

    @abstractmethod
    async def _index_names(self, pattern: str) -> list[str]:
        """Names of the indices matching ``pattern`` ([] when none)."""

    @abstractmethod
    async def _aliases_of(self, pattern: str) -> Mapping[str, Any]:
        """``GET /<pattern>/_alias``: ``{index: {"aliases": {name: definition}}}``."""

    @abstractmethod
    async def _delete_template(self, name: str) -> None: ...

    @abstractmethod
    async def _count(self, index: str, body: dict[str, Any], routing: str | None = None) -> Mapping[str, Any]:
        """A ``_count`` with :attr:`search_client`; the engine's response."""

    @abstractmethod
    async def _shard_stats(self, index: str) -> Mapping[str, Any]:
        """``_stats/refresh?level=shards`` of ``index`` filtered to :data:`dsl.STATS_FILTER`."""

    @abstractmethod
    async def _mapping(self, index: str) -> Mapping[str, Any]:
        """The ``_mapping`` response for ``index`` (an alias resolves to the indices behind it)."""

    @abstractmethod
    async def _reindex(self, source: str, dest: str) -> int:
        """Server-side copy of every document; returns how many were copied."""

    async def _mapping_meta(self, index: str) -> dict[str, Any]:
        """The ``_meta`` of the mapping of ``index`` (or of every index behind an alias, merged)."""
        merged: dict[str, Any] = {}
        for body in (await self._mapping(index)).values():
            merged.update(((body or {}).get("mappings") or {}).get("_meta") or {})
        return merged

    @abstractmethod
    def _translate(self, exc: Exception, name: str) -> BackendError | None:
        """The scopegate error for a client exception, or None if it is not a client error."""

    @abstractmethod
    async def _close_client(self, client: ClientT) -> None: ...

    # -- error boundary --------------------------------------------------
    async def _guard(self, name: str, coro: Any, *, report: bool = True) -> Any:
        """Await an engine call; client errors become :class:`BackendError`. A failure the engine's state
        explains (down, overloaded, too slow) is logged as one line unless ``report`` is False (a read
        whose failure the caller absorbs, such as the cache's generation)."""
        try:
            return await coro
        except BackendError:
            raise
        except TimeoutError as exc:
            timed_out = BackendError(f"{self.engine} did not answer in time", retryable=True)
            if report:
                self.failures.failed(name, timed_out, exc)
            raise timed_out from exc
        except Exception as exc:
            translated = self._translate(exc, name)
            if translated is None:
                raise
            # Down or overloaded, or a TLS handshake refused (the operator's to fix): one line, not the traceback.
            if report and (translated.retryable or tls_failure(exc) is not None):
                self.failures.failed(name, translated, exc)
            raise translated from exc

    # -- SearchBackend ----------------------------------------------------
    async def search(self, query: SearchQuery) -> RawResult:
        if self.encoder is None:
            return await self.keyword_search(query)
        return await retrieve(self.spec, query, keyword=self.keyword_search, knn=self.knn, fetch=self.get_many)

    async def _encode(self, texts: list[str], kind: str) -> list[list[float]]:
        assert self.encoder is not None and self._encode_pool is not None
        encoder = self.encoder
        loop = asyncio.get_running_loop()
        vectors = await loop.run_in_executor(
            self._encode_pool, lambda: encoder.encode(texts, kind="query" if kind == "query" else "document")
        )
        return [[float(x) for x in row] for row in vectors]

    async def knn(self, query: SearchQuery, k: int) -> KnnResult:
        """k-NN with scope and filters inside the engine's search (see :func:`dsl.knn_body`)."""
        started = time.perf_counter()
        vector = (await self._encode([query.text], "query"))[0]
        target = self.search_target
        body = dsl.knn_body(self.spec, query, vector, k, engine=self.engine)
        routing = dsl.scope_routing(query.scope, self.routing)
        response = await self._guard(target, self._search(target, body, query.client_timeout_s, routing))
        parsed = dsl.parse_search_response(self.spec, response)
        in_scope: int | None = None
        if len(parsed.hits) < k:
            # An approximate (HNSW) search may return fewer than k although the scope holds more
            # (near-duplicate vectors, filtered graphs): count the scope, so the total says "at least"
            # rather than a wrong "exactly". Only when short: a full answer needs no count.
            counted = {"query": {"bool": {"filter": dsl.query_filters(self.spec, query)}}}
            reply = await self._guard(target, self._count(target, counted, routing))
            in_scope = int(reply.get("count", 0))
        return KnnResult(hits=parsed.hits, in_scope=in_scope, took_ms=(time.perf_counter() - started) * 1000)

    async def get_many(self, doc_ids: Sequence[str], scope: Scope) -> dict[str, dict[str, Any]]:
        target = self.search_target
        fm = await self.field_map()
        body = dsl.ids_body(self.spec, list(doc_ids), scope, timeout_s=self.spec.engine_timeout_s, **_fm(fm))
        routing = dsl.scope_routing(scope, self.routing)  # every id in scope is the tenant's: one shard
        response = await self._guard(target, self._search(target, body, self.spec.client_timeout_s, routing))
        hits: tuple[RawHit, ...] = dsl.parse_search_response(self.spec, response, fm=fm).hits
        return {h.doc_id: h.fields for h in hits}

    # -- an existing index (index_mode: existing) ---------------------------
    async def index_mapping(self) -> Mapping[str, Any]:
        """``GET <search target>/_mapping``: ``{index: {"mappings": ...}}`` for each index behind it (read-only)."""
        target = self.search_target
        response: Mapping[str, Any] = await self._guard(target, self._mapping(target))
        return response

    async def mapped_fields(self) -> dict[str, Any]:
        """The flattened mapping of the indices behind :attr:`search_target` (``path -> MappedField``)."""
        return dict(flatten_mapping(await self.index_mapping()))

    async def mapping_findings(self, *, values: bool = True) -> list[Finding]:
        """The live mapping check of an existing index: each way its mapping fails the spec, and (``values``)
        each configured filter value no document has. Read-only; a missing index raises MissingIndexError."""
        from scopegate.backends.mapping_check import snippet_findings, value_findings

        fields = await self.mapped_fields()
        findings = spec_findings(self.spec, fields) + query_findings(self.spec, fields, self.engine)
        if values and self.spec.filters and not findings:
            fm = resolve(self.spec, fields)
            body = filter_values_body(self.spec, fm.query)
            target = self.search_target
            response = await self._guard(target, self._search(target, body, ADMIN_TIMEOUT_S))
            findings += value_findings(self.spec, parse_filter_values(self.spec, response))
        return findings + snippet_findings(self.spec, fields)

    async def field_map(self) -> FieldMap | None:
        """None for a managed index; for an existing one, its field paths resolved against its mapping (read
        once). A mapping that cannot serve the spec (a missing tenant or text field, a tenant field that is
        text) is an error here, never a silent 0 results."""
        if not self.spec.existing:
            return None
        if self._field_map is None:
            fields = await self.mapped_fields()
            found = spec_findings(self.spec, fields) + query_findings(self.spec, fields, self.engine)
            errors = [f for f in found if f.severity == "error"]
            if errors:
                raise BackendError(
                    f"the index {self.search_target!r} cannot serve {self.spec.name}: "
                    + "; ".join(f"{format_path(f.key)}: {f.message}" for f in errors),
                    retryable=False,
                )
            self._field_map = resolve(self.spec, fields)
        return self._field_map

    def _refuse_write(self, action: str) -> None:
        if self.spec.existing:
            raise IngestError(
                f"{self.spec.name}: index_mode is existing, so scopegate never writes to {self.spec.index!r} "
                f"(refused: {action}); fill it with your own pipeline"
            )

    async def keyword_search(self, query: SearchQuery) -> RawResult:
        fm = await self.field_map()
        body = dsl.search_body(self.spec, query, **_fm(fm), engine=self.engine)
        target = self.search_target
        routing = dsl.scope_routing(query.scope, self.routing)
        response = await self._guard(target, self._search(target, body, query.client_timeout_s, routing))
        result = dsl.parse_search_response(self.spec, response, unique_terms(query.text, MAX_QUERY_TERMS), fm)
        if result.partial and self.on_partial == "error":
            raise BackendError(f"{self.engine} returned partial results: {result.partial_reason}", retryable=True)
        return result

    async def get(self, doc_id: str, scope: Scope) -> dict[str, Any] | None:
        """The document if it is in scope; None when the engine looked everywhere and it is not there.

        A response that missed shards (a node down, a timeout) and found nothing
        is an error, not "not found": the document may sit on the missing shard.
        """
        target = self.search_target
        fm = await self.field_map()
        body = dsl.fetch_body(self.spec, doc_id, scope, timeout_s=self.spec.engine_timeout_s, **_fm(fm))
        routing = dsl.doc_address(self.spec, scope.tenant_id, doc_id, self.routing).routing
        response = await self._guard(target, self._search(target, body, self.spec.client_timeout_s, routing))
        doc = dsl.parse_fetch_response(response, self.spec, fm)
        reason = dsl.partial_reason(response)
        if doc is None and reason is not None:
            raise BackendError(f"{self.engine} could not look everywhere for the document: {reason}", retryable=True)
        return doc

    async def aggregate(self, query: AggregationQuery) -> RawAggregation:
        """One ``size: 0`` search with a terms or date-histogram aggregation (:mod:`scopegate.backends.aggs`)."""
        target = self.search_target
        fm = await self.field_map()  # an existing index: its fields were checked with the mapping
        if fm is None:
            await self._check_countable([query.field, *([query.date_field] if query.date_field else [])])
        body = aggs.aggregation_body(self.spec, query, **_fm(fm))
        routing = dsl.scope_routing(query.scope, self.routing)  # the tenant's counts live on its shard
        response = await self._guard(target, self._search(target, body, query.client_timeout_s, routing))
        result = aggs.parse_aggregation_response(query, response)
        if result.partial and self.on_partial == "error":
            raise BackendError(f"{self.engine} returned partial counts: {result.partial_reason}", retryable=True)
        return result

    def aggregation_problems(self, fields: Sequence[str]) -> list[str]:
        """Nothing is known without asking the server: :meth:`aggregate` checks the mapping once per index."""
        return []

    async def _check_countable(self, fields: list[str]) -> None:
        """Raise :class:`FieldUnavailable` unless the indices behind the alias map ``fields`` as countable."""
        target = self.search_target
        targets = [target] if self._target else await self._guard(target, self._alias_targets(target))
        if not targets:
            raise MissingIndexError(target)
        key = (tuple(sorted(targets)), tuple(sorted(set(fields))))
        if key in self._countable:
            return
        mapping = await self._guard(target, self._mapping(target))
        problems = aggs.mapping_problems(self.spec, mapping, sorted(set(fields)))
        if problems:
            raise FieldUnavailable(*problems[0])
        if len(self._countable) > 64:
            self._countable.clear()
        self._countable.add(key)

    async def count(self, scope: Scope) -> int:
        """Documents in ``scope`` (exact; an error when shards are missing)."""
        target = self.search_target
        fm = await self.field_map()
        routing = dsl.scope_routing(scope, self.routing)
        response = await self._guard(target, self._count(target, dsl.count_body(self.spec, scope, **_fm(fm)), routing))
        reason = dsl.partial_reason(response)
        if reason is not None:
            raise BackendError(f"{self.engine} could not count every shard: {reason}", retryable=True)
        return int(response["count"])

    def analyze(self, text: str) -> list[str]:
        """Terms as the engine's ``scopegate_en`` analyser makes them (same chain, run locally)."""
        return analyze(text)

    async def generation(self) -> str:
        """``<indices behind the searched alias>#stats:<digest>``: changes with any writer's visible write
        (module docstring); one request, the alias resolves to its indices."""
        target = self.search_target
        stats = await self._guard(target, self._shard_stats(target), report=False)  # the cache skips on failure
        targets = sorted((stats.get("indices") or {}).keys())
        if not targets:
            raise MissingIndexError(target)
        return f"{','.join(targets)}#{dsl.generation_from_stats(stats)}"

    async def close(self) -> None:
        if not self._owns_clients:
            return  # a pinned() view: the backend it came from owns the clients and the encoder pool
        if self._encode_pool is not None:
            self._encode_pool.shutdown(wait=False, cancel_futures=True)
        await self._close_client(self.client)
        if self.search_client is not self.client:
            await self._close_client(self.search_client)

    # -- index lifecycle --------------------------------------------------
    def template_body(self) -> dict[str, Any]:
        vector = None
        if self.encoder is not None:
            vector = dsl.vector_mapping(self.encoder.dim, engine=self.engine)
        return dsl.index_template_body(
            self.spec,
            analysis=self.analysis,
            shards=self.shards,
            replicas=self.replicas,
            vector=vector,
            knn_setting=vector is not None and self.engine == "opensearch",
            model_id=self.encoder.model_id if self.encoder is not None else None,
            routing=self.routing,
        )

    async def _check_mapping(self, alias: str) -> None:
        """An index built with another combined-field recipe or embedding model would answer wrongly, and one
        whose text fields are stored only cannot be searched field by field: refuse."""
        wanted = dsl.mapping_meta(self.spec, self.encoder.model_id if self.encoder is not None else None)
        # Both layouts serve combined_fields: indexes written before kept per-field postings too.
        wanted.pop(dsl.TEXT_FIELDS_META, None)
        meta = await self._guard(alias, self._mapping_meta(alias))
        stored_only = meta.get(dsl.TEXT_FIELDS_META) == dsl.TEXT_FIELDS_STORED
        if stored_only and self.spec.field_combination != "combined_fields":
            raise ConfigError(
                f"index behind {alias!r} was built for combined_fields (its text fields are stored, not searchable "
                f"one by one), the spec asks for {self.spec.field_combination}: re-index with reindex(documents)"
            )
        for key, value in wanted.items():
            if meta.get(key) != value:
                what = "embedding model" if key == "scopegate_embedder" else "combined-field weights"
                raise ConfigError(
                    f"index behind {alias!r} was built with {what} {meta.get(key)!r}, the spec wants {value!r}: "
                    "re-embed/re-index with reindex(documents)"
                )

    def _agent_alias_definition(self) -> dict[str, Any]:
        return layout.alias_definition(filter_query=self.alias_filter)

    async def ensure_index(self) -> str:
        """Create the template, ``<index>-v1``, the read alias and the agent's alias unless they exist.

        Returns the write index.
        """
        self._refuse_write("ensure_index")
        alias = self.names.read_alias
        targets = await self._guard(alias, self._alias_targets(alias))
        if targets:
            await self._check_keys(sorted(targets))
            await self._check_mapping(alias)
            current = str(sorted(targets)[-1])
            if self.agent_alias and not await self._guard(self.agent_alias, self._alias_targets(self.agent_alias)):
                add = {"add": {"index": current, "alias": self.agent_alias, **self._agent_alias_definition()}}
                await self._guard(self.agent_alias, self._update_aliases({"actions": [add]}))
            self._ready = True
            return current
        await self._guard(alias, self._put_template(self.names.template, self.template_body()))
        first = self.names.version(1)
        aliases: dict[str, Any] = {alias: {"is_write_index": True}}
        if self.agent_alias:
            aliases[self.agent_alias] = self._agent_alias_definition()
        await self._guard(first, self._create_index(first, {"aliases": aliases}))
        self._ready = True
        return first

    async def wait_for_health(self, index: str | None = None, *, status: str = "green", timeout_s: float = 60.0) -> str:
        """Poll the health of ``index`` (default: the read alias) until ``status`` or better and no shard
        of it is moving between nodes; returns the last status seen.

        After an ingest on a cluster, replicas may still be copying and the
        balancer may still be moving shards (a search that meets a shard without
        replica just as it moves loses that shard): ``green`` then means every
        copy of every shard is started where it will stay.
        """
        target = index or self.names.read_alias
        want = layout.health_rank(status)
        deadline = time.monotonic() + timeout_s
        while True:
            health = await self._guard(target, self._health(target))
            seen = str(health.get("status"))
            settled = layout.health_rank(seen) >= want and not health.get("relocating_shards")
            if settled or time.monotonic() >= deadline:
                return seen
            await asyncio.sleep(0.25)

    async def alias_state(self) -> layout.AliasState:
        """Where the read alias and every agent alias of this spec point now."""
        response = await self._guard(self.names.pattern, self._aliases_of(self.names.pattern))
        return layout.parse_alias_state(response, self.names.read_alias)

    async def versions(self) -> list[tuple[int, str]]:
        """``(version, index)`` of every ``<index>-v<N>`` in the engine, oldest first."""
        names = await self._guard(self.names.pattern, self._index_names(self.names.pattern))
        found = [(self.names.version_of(n), n) for n in names]
        return sorted((v, n) for v, n in found if v is not None)

    async def tenant_counts(self, index: str | None = None) -> dict[str, int]:
        """Documents per tenant in ``index`` (default: what this backend searches); exact, every shard."""
        target = index or self.search_target
        counts: dict[str, int] = {}
        after: Mapping[str, Any] | None = None
        while True:
            body = layout.tenant_counts_body(self.spec, after)
            response = await self._guard(target, self._search(target, body, ADMIN_TIMEOUT_S))
            reason = dsl.partial_reason(response)
            if reason is not None:
                raise BackendError(f"counting documents per tenant in {target} missed shards: {reason}")
            page, after = layout.parse_tenant_counts(response)
            counts.update(page)
            if after is None:
                return counts

    async def refresh(self) -> None:
        self._refuse_write("refresh")
        await self._guard(self.names.read_alias, self._refresh(self.names.read_alias))

    async def _check_keys(self, indices: list[str]) -> None:
        """Refuse to write into an index written before documents were keyed by (tenant, id)."""
        unchecked = [i for i in indices if i not in self._keys_checked]
        if not unchecked:
            return
        legacy = []
        for index in unchecked:
            meta = await self._guard(index, self._mapping_meta(index))
            if meta.get(dsl.KEYS_META) != dsl.KEY_SCHEME:
                legacy.append(index)
        if legacy:
            raise IngestError(
                f"{self.engine} index {', '.join(legacy)} was written by a scopegate that used the document id "
                "alone as _id, so one tenant's write could replace another's; migrate it first "
                "(scopegate migrate, or backend.migrate_keys(): see the docs: Operations, 'Migrating an index')"
            )
        self._keys_checked.update(unchecked)

    async def drop(self) -> None:
        """Delete every versioned index and the template (tests, re-ingest from scratch)."""
        self._refuse_write("drop")
        await self._guard(self.names.pattern, self._delete_indices(self.names.pattern))
        await self._guard(self.names.template, self._delete_template(self.names.template))
        self._ready = False
        self._keys_checked.clear()

    async def build_next_version(self, documents: Iterable[Mapping[str, Any]] | None = None) -> tuple[str, str]:
        """Create and fill ``<index>-v<N+1>`` with this backend's template; the aliases do not move.

        With ``documents`` the new index is filled from them (e.g. after a
        mapping change); without, the engine copies the current index
        (``_reindex``, routing kept). Returns ``(current index, new index)``.
        """
        self._refuse_write("build_next_version")
        alias = self.names.read_alias
        old = await self._guard(alias, self._alias_targets(alias))
        if not old:
            raise MissingIndexError(alias)
        if documents is None:
            await self._check_keys(sorted(old))  # a server-side copy keeps the _ids: never relabel old ones
        newest = max([v for v, _ in await self.versions()] + [self.names.version_of(i) or 0 for i in old])
        new = self.names.version(newest + 1)
        await self._guard(alias, self._put_template(self.names.template, self.template_body()))
        await self._guard(new, self._create_index(new, {}))
        try:
            if documents is None:
                if self.encoder is not None:
                    await self._check_mapping(alias)  # copying vectors of another model would keep them stale
                await self._guard(new, self._reindex(alias, new))
            else:
                await self._ingest_into(new, documents, batch_size=5_000, progress=None)
            await self._guard(new, self._refresh(new))
        except BaseException:
            await self._discard_version(new)
            raise
        return str(sorted(old)[-1]), new

    async def _discard_version(self, index: str) -> None:
        """Delete ``index``, a version this backend just created, after a failed build or swap, unless an
        alias points at it (a swap that went through although its answer was lost). Best effort: the
        original error is what the caller sees; the old index and the aliases are never touched."""
        try:
            await asyncio.shield(self._drop_unaliased(index))
        except BaseException as exc:  # cleanup must not hide the failure being handled
            log.warning("could not delete the unfinished index %s (%s): delete it by hand", index, exc)

    async def _drop_unaliased(self, index: str) -> None:
        state = await self.alias_state()
        if index in state.indices() or index in await self.alias_targets(self.previous_alias):
            return
        await self.drop_index(index)

    async def alias_targets(self, alias: str) -> list[str]:
        """The indices behind ``alias`` ([] when it does not exist)."""
        targets: list[str] = await self._guard(alias, self._alias_targets(alias))
        return targets

    @property
    def previous_alias(self) -> str:
        """The alias left on the version the read aliases moved away from at the last swap."""
        return layout.previous_alias(self.names.read_alias)

    async def swap_to(self, index: str) -> layout.AliasState:
        """Move the read alias and every agent alias to ``index`` in one atomic call (and ``-previous`` to
        the version they leave); returns where they were."""
        self._refuse_write("swap_to")
        before = await self.alias_state()
        previous = await self.alias_targets(self.previous_alias)
        actions = layout.move_aliases_actions(before, index, previous=self.previous_alias, previous_targets=previous)
        if actions["actions"]:
            await self._guard(self.names.read_alias, self._update_aliases(actions))
        return before

    async def reindex(self, documents: Iterable[Mapping[str, Any]] | None = None, *, delete_old: bool = True) -> str:
        """Build ``<index>-v<N+1>`` and swap the aliases to it atomically (unverified; see
        :func:`scopegate.config.reindex.reindex_verified`). Searches hit the old index until the swap.
        """
        _old, new = await self.build_next_version(documents)
        try:
            before = await self.swap_to(new)
        except BaseException:
            await self._discard_version(new)  # kept if an alias reached it after all
            raise
        if delete_old:
            for index in before.indices():
                if index != new:
                    await self.drop_index(index)
        return new

    async def scan(self, page_size: int = SCAN_PAGE) -> AsyncIterator[dict[str, Any]]:
        """Every document's stored fields through the read alias, in (tenant, id) order (an async iterator)."""
        alias = self.names.read_alias
        after: list[Any] | None = None
        while True:
            body = dsl.scan_body(self.spec, page_size, after)
            response = await self._guard(alias, self._search(alias, body, ADMIN_TIMEOUT_S))
            hits = (response.get("hits") or {}).get("hits") or []
            for hit in hits:
                yield dict(hit.get("_source") or {})
            if len(hits) < page_size:
                return
            after = list(hits[-1].get("sort") or [])

    async def migrate_keys(self, *, delete_old: bool = True) -> str:
        """Reindex into ``<index>-v<N+1>`` with tenant-qualified ``_id``s and swap the aliases to it.

        For indices written before documents were keyed by (tenant, id); safe
        on any index. Stop writers meanwhile: searches keep reading the old
        index until the atomic alias swap.
        """
        self._refuse_write("migrate_keys")
        _old, new = await self.build_next_version([])
        try:
            batch: list[dict[str, Any]] = []
            async for doc in self.scan():
                batch.append(doc)
                if len(batch) >= SCAN_PAGE * 5:
                    await self._ingest_into(new, batch, batch_size=SCAN_PAGE * 5, progress=None)
                    batch = []
            if batch:
                await self._ingest_into(new, batch, batch_size=SCAN_PAGE * 5, progress=None)
            await self._guard(new, self._refresh(new))
            before = await self.swap_to(new)
        except BaseException:
            await self._discard_version(new)
            raise
        if delete_old:
            for index in before.indices():
                if index != new:
                    await self.drop_index(index)
        self._keys_checked.clear()
        return new

    async def drop_index(self, index: str) -> None:
        """Delete one index (e.g. a version no alias points at any more)."""
        self._refuse_write("drop_index")
        await self._guard(index, self._delete_indices(index))

    # -- writes -----------------------------------------------------------
    async def ingest(
        self,
        documents: Iterable[Mapping[str, Any]],
        *,
        batch_size: int = 10_000,
        progress: ProgressCallback | None = None,
    ) -> IngestReport:
        """Upsert by id through the write alias, ``bulk_concurrency`` bulk requests in flight."""
        self._refuse_write("ingest")
        if batch_size < 1:
            raise IngestError("batch_size must be at least 1")
        if not self._ready:
            await self.ensure_index()
        else:
            await self._check_keys(await self._guard(self.names.read_alias, self._alias_targets(self.names.read_alias)))
        report = await self._ingest_into(self.names.read_alias, documents, batch_size=batch_size, progress=progress)
        if self.refresh_after_write:
            await self.refresh()
        return report

    async def _ingest_into(
        self,
        index: str,
        documents: Iterable[Mapping[str, Any]],
        *,
        batch_size: int,
        progress: ProgressCallback | None,
    ) -> IngestReport:
        report = IngestReport()
        started = time.perf_counter()
        iterator = iter(documents)
        Sent = tuple[int, Mapping[str, Any], dict[str, str]]
        in_flight: set[asyncio.Task[Sent]] = set()

        async def send(ndjson: str, sent: int, ids: dict[str, str]) -> Sent:
            return sent, await self._guard(index, self._bulk(ndjson, BULK_TIMEOUT_S)), ids

        def absorb(task: asyncio.Task[Sent]) -> None:
            sent, response, ids = task.result()
            failed, errors = dsl.bulk_errors(response, limit=max(0, 1000 - len(report.errors)), ids=ids)
            report.failed += failed
            report.errors.extend(errors)
            report.indexed += sent - failed
            report.commits += 1
            if progress:
                progress(sent - failed)

        def read() -> list[Mapping[str, Any]]:
            return list(islice(iterator, batch_size))

        def encode(
            batch: list[Mapping[str, Any]], vectors: list[list[float]] | None
        ) -> tuple[list[tuple[str, int]], list[tuple[str, str]], dict[str, str]]:
            """A batch as NDJSON bodies under the engine's request limit (:func:`dsl.bulk_bodies`).

            Reading and encoding run off the event loop: they take a while.
            """
            lines, refused = dsl.bulk_operations(self.spec, batch, index, vectors, routing=self.routing)
            # engine _id -> document id, to report failures by the id the user knows
            pairs = zip(lines[::2], lines[1::2], strict=True)
            ids = {str(action["index"]["_id"]): str(doc.get(self.spec.id_field)) for action, doc in pairs}
            return dsl.bulk_bodies(lines), refused, ids

        try:
            while True:
                batch = await asyncio.to_thread(read)
                if not batch:
                    break
                vectors = None
                if self.encoder is not None:
                    vectors = await self._encode([embedding_text(self.spec, r) for r in batch], "document")
                bodies, refused, ids = await asyncio.to_thread(encode, batch, vectors)
                report.failed += len(refused)
                report.errors.extend(refused[: max(0, 1000 - len(report.errors))])
                for ndjson, count in bodies:
                    while len(in_flight) >= self.bulk_concurrency:
                        done, _ = await asyncio.wait(in_flight, return_when=asyncio.FIRST_COMPLETED)
                        for task in done:
                            in_flight.discard(task)
                            absorb(task)
                    in_flight.add(asyncio.create_task(send(ndjson, count, ids)))
            for outcome in await asyncio.gather(*in_flight, return_exceptions=True):
                if isinstance(outcome, BaseException):
                    raise outcome
            for task in in_flight:
                absorb(task)
            in_flight.clear()
        finally:
            for task in in_flight:
                task.cancel()
        report.seconds = time.perf_counter() - started
        return report

    async def delete(self, doc_ids: Iterable[str], *, tenant: str) -> int:
        """Delete the documents ``(tenant, id)``; another tenant's document with the same id is untouched."""
        self._refuse_write("delete")
        try:
            owner = canonical_id(tenant, "tenant")
        except ScopeMissing as exc:
            raise IngestError(f"cannot delete: {exc}") from exc
        alias = self.names.read_alias
        ids = [d.strip() for d in doc_ids if isinstance(d, str) and d.strip()]
        if not ids:
            return 0
        await self._check_keys(await self._guard(alias, self._alias_targets(alias)))
        lines = dsl.delete_operations(self.spec, ids, alias, tenant=owner, routing=self.routing)
        ndjson = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
        await self._guard(alias, self._bulk(ndjson, BULK_TIMEOUT_S))
        if self.refresh_after_write:
            await self.refresh()
        return len(ids)
