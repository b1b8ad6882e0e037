"""The embedded engine: tantivy on local disk, no server.

Scope and filters are zero-score ``term`` clauses inside the tantivy query,
so totals and pages count only the caller's documents. Query text is analysed
into terms with the index's own analyser and the query is built from term
queries: no query parser ever sees the model's words.

Many processes, one folder (one writer at a time, any number of readers):

* **What a search reads.** The reader is reloaded by this class only (tantivy's
  reload policy is ``manual``), when ``meta.json`` (tantivy's commit point)
  changed since the last reload; every search and fetch checks it first (at
  most every ``reader_check_s``, default 0: every call). :meth:`generation` is
  the digest of the ``meta.json`` read *before* that reload, so a result is
  never labelled with a commit newer than the one it was computed from, and
  every process reading the folder computes the same label.
* **Searches never wait behind writes.** Searches and fetches run on their own
  thread pool; ingest and delete on one writer thread with a bounded queue
  (``max_pending_writes``; past it a write is refused, never queued without end).
  A second writer (another process) waits up to ``writer_wait_s`` for tantivy's
  writer lock, then gets an :class:`IngestError`.
* **Read paths never write.** Opening an existing index writes nothing (a
  read-only folder is opened through a private view, see
  :mod:`.embedded_storage`); the stored spec is written only when an index is
  created or ingested into, atomically.
* **Documents belong to a tenant.** Upserts and deletes go by the key
  ``(tenant, id)`` (:func:`scopegate.scope.document_key`, stored in the field
  ``_scopegate_key``): another tenant's document with the same id is never
  replaced or deleted. An index written before that (no key field) is still
  searchable; writes into it are refused until it is migrated
  (:func:`migrate_index`, ``scopegate migrate``).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import tantivy

from scopegate.backends import embedded_storage as storage
from scopegate.backends.base import IngestReport, ProgressCallback, document_problem
from scopegate.backends.embedded_storage import KEY_FIELD, SPEC_FILE, storage_problem
from scopegate.errors import BackendError, ConfigError, FieldUnavailable, IngestError, MissingIndexError
from scopegate.scope import Scope, ScopeMissing, canonical_id, document_key
from scopegate.search.aggregation import AggregationQuery, RawAggregation, RawBucket
from scopegate.search.analysis import (
    ANALYZER_NAME,
    STORED_ONLY_TOKENIZER,
    WORDS_ANALYZER_NAME,
    analyze,
    make_analyzer,
    make_words_analyzer,
    stored_only_analyzer,
    unique_terms,
    word_runs,
)
from scopegate.search.dates import day_of_epoch_ms, midnight, parse_datetime, roll_up, stored_value
from scopegate.search.fields import combined_text, query_terms
from scopegate.search.model import RawHit, RawResult, SearchQuery
from scopegate.search.retrieval import KnnResult, retrieve
from scopegate.search.spec import COMBINED_FIELD, SearchSpec
from scopegate.vector.encoder import Encoder
from scopegate.vector.ingest import VectorIngest

P = ParamSpec("P")
T = TypeVar("T")

__all__ = ["SPEC_FILE", "EmbeddedBackend", "IndexLayout", "build_schema", "migrate_index"]

log = logging.getLogger("scopegate.embedded")

WRITER_HEAP_BYTES = 256_000_000
MAX_QUERY_TERMS = 32
DEFAULT_MAX_PENDING_WRITES = 4
DEFAULT_WRITER_WAIT_S = 30.0
# How much lower the writer thread's CPU priority is than the searches' (Linux nice steps, per thread).
DEFAULT_WRITER_NICE = 10
WRITER_RETRY_S = 0.05
RELOAD_ATTEMPTS = 5
# The writer thread's per-document Python work holds the GIL; every this many documents it hands it
# to a waiting search at once, instead of after the interpreter's 5 ms switch interval (a lower nice
# value does not help there: the GIL is not the OS scheduler's).
YIELD_EVERY = 2
# tantivy reports I/O trouble (full disk, vanished files) as these.
ENGINE_ERRORS = (OSError, ValueError, RuntimeError)


@dataclass(frozen=True)
class IndexLayout:
    """What an on-disk index holds beyond the spec's names: which keyword fields are fast
    (columnar, so they can be counted by) and whether the date field exists.

    A new index gets every keyword field fast and the spec's date field. An index written by an
    older scopegate keeps its own layout (non-fast keyword fields, no date field): it opens and
    searches as before, and the aggregation tool is refused on it with a clear reason.

    ``text_indexed``: whether each text field has postings of its own. Under ``combined_fields``
    only the catch-all field is searched (the stored spec pins the combination), so a new index
    stores the text fields without analysing them a second time: that analysis was half of the
    ingest CPU on ticket bodies. Indexes written before keep their per-field postings.

    ``words_tokenized``: whether the catch-all field is fed :func:`~scopegate.search.analysis.word_runs`
    output and split by the whitespace tokenizer (``scopegate_en_words``) instead of tantivy's regex
    tokenizer (``scopegate_en``): the same words but for a mark standing alone (no word any more)
    and Unicode-version differences, at a fifth of the analysis cost. Older indexes
    keep the regex tokenizer; ``scopegate migrate`` rebuilds one with the new layout.
    """

    fast: frozenset[str]
    date_field: str | None
    text_indexed: bool = True
    words_tokenized: bool = False

    @classmethod
    def new(cls, spec: SearchSpec) -> IndexLayout:
        combined = spec.field_combination == "combined_fields"
        return cls(frozenset(spec.all_keyword_fields()), spec.date_field, not combined, combined)

    @classmethod
    def on_disk(cls, spec: SearchSpec, fields: Mapping[str, Mapping[str, Any]]) -> IndexLayout:
        fast = {n for n in spec.all_keyword_fields() if (fields.get(n) or {}).get("options", {}).get("fast") is True}
        dates = sorted(name for name, entry in fields.items() if entry.get("type") == "date")
        tokenizers = {
            ((fields.get(t.name) or {}).get("options", {}).get("indexing") or {}).get("tokenizer")
            for t in spec.text_fields
        }
        combined = ((fields.get(COMBINED_FIELD) or {}).get("options", {}).get("indexing") or {}).get("tokenizer")
        return cls(
            frozenset(fast),
            dates[0] if dates else None,
            STORED_ONLY_TOKENIZER not in tokenizers,
            combined == WORDS_ANALYZER_NAME,
        )


def build_schema(spec: SearchSpec, layout: IndexLayout | None = None, *, keyed: bool = True) -> tantivy.Schema:
    """The tantivy schema of ``spec`` (``layout``: fast fields and date field, default a new index's);
    ``keyed=False`` is the layout before (tenant, id) keys (migration only)."""
    layout = layout or IndexLayout.new(spec)
    sb = tantivy.SchemaBuilder()
    sb.add_text_field(spec.id_field, stored=True, tokenizer_name="raw", index_option="basic")
    # The tenant is a fast field so the index can be sorted by it (see EmbeddedBackend.__init__).
    sb.add_text_field(spec.tenant_field, stored=True, tokenizer_name="raw", index_option="basic", fast=True)
    for name in spec.all_keyword_fields():
        # Fast (columnar) keyword fields are what the aggregation tool counts by.
        sb.add_text_field(name, stored=True, tokenizer_name="raw", index_option="basic", fast=name in layout.fast)
    if spec.group_field:
        sb.add_text_field(spec.group_field, stored=True, tokenizer_name="raw", index_option="basic")
    tokenizer = ANALYZER_NAME if layout.text_indexed else STORED_ONLY_TOKENIZER
    for t in spec.text_fields:
        # Term frequencies without positions: we never run phrase queries.
        sb.add_text_field(t.name, stored=True, tokenizer_name=tokenizer, index_option="freq")
    if layout.date_field:
        sb.add_date_field(layout.date_field, stored=True, indexed=True, fast=True)
    if spec.field_combination == "combined_fields":
        combined = WORDS_ANALYZER_NAME if layout.words_tokenized else ANALYZER_NAME
        sb.add_text_field(COMBINED_FIELD, stored=False, tokenizer_name=combined, index_option="freq")
    if keyed:
        sb.add_text_field(KEY_FIELD, stored=False, tokenizer_name="raw", index_option="basic")
    return sb.build()


def lower_priority(steps: int) -> None:
    """Lower the calling thread's CPU priority by ``steps`` nice steps (the writer thread's initializer).

    On Linux nice is per thread and threads inherit it, so tantivy's indexing
    and merge threads, started from the writer thread, run at the lower
    priority too: on a busy machine ingest takes the CPU searches leave,
    instead of sharing it evenly (bench_multiproc). A no-op elsewhere, or
    when the system refuses.
    """
    if steps <= 0 or not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(OSError, AttributeError):
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, min(19, os.getpriority(os.PRIO_PROCESS, tid) + steps))


def _first(values: Any) -> Any:
    if isinstance(values, list):
        values = [stored_value(v) for v in values]
        return values[0] if len(values) == 1 else (values if values else None)
    return stored_value(values)


class EmbeddedBackend:
    """A tantivy index in a folder (or in memory when ``path`` is None); see the module docstring.

    Documents are stored sorted by tenant: a tenant's documents are contiguous,
    so the tenant filter lets the engine skip whole blocks of the text match.
    At 1M documents this cut the filtered p95 from about 6 ms to about 1 ms.

    ``threads`` search threads; ``max_pending_writes`` ingest/delete calls may
    wait for the writer thread; ``writer_wait_s`` is how long a write waits
    for another process's writer lock; ``reader_check_s`` how long a reader
    may go without checking for a newer commit (0: before every search);
    ``writer_nice`` how many nice steps below the searches the writer thread
    (and tantivy's indexing threads) run, 0 to 19 (see :func:`lower_priority`).

    With ``spec.retrieval`` vector or hybrid, a vector store lives beside the
    index (``<path>/vectors``, see :mod:`scopegate.vector.store`): ``encoder``
    replaces the spec's named encoder; vectors of another model are refused
    unless ``reembed`` (re-embed at open); ``vector_store_options`` tunes the
    store (``exact_limit``, ``hnsw_m``, ``ef_search``).
    """

    def __init__(
        self,
        spec: SearchSpec,
        path: str | Path | None = None,
        *,
        threads: int = 2,
        max_pending_writes: int = DEFAULT_MAX_PENDING_WRITES,
        writer_wait_s: float = DEFAULT_WRITER_WAIT_S,
        reader_check_s: float = 0.0,
        writer_nice: int = DEFAULT_WRITER_NICE,
        encoder: Encoder | None = None,
        reembed: bool = False,
        check_vectors: bool = True,
        vector_store_options: Mapping[str, Any] | None = None,
    ) -> None:
        if max_pending_writes < 1:
            raise ConfigError("max_pending_writes must be at least 1")
        if not 0 <= writer_nice <= 19:
            raise ConfigError("writer_nice must be between 0 and 19")
        if spec.existing:
            raise ConfigError("index_mode existing is for OpenSearch/Elasticsearch; an embedded index is managed")
        self.spec = spec
        # Absolute now: a later chdir (a server daemonising, a test harness) must not move the index.
        self.path = Path(path).expanduser().absolute() if path is not None else None
        self.writer_wait_s = max(0.0, writer_wait_s)
        self.reader_check_s = max(0.0, reader_check_s)
        self.writer_nice = writer_nice
        self._view: storage.ReadOnlyView | None = None
        self.legacy_keys = False
        self.layout = IndexLayout.new(spec)  # _open replaces it with what the folder holds
        self._index = self._open() if self.path is not None else self._in_memory()
        self._index.config_reader("manual")
        self._index.register_tokenizer(ANALYZER_NAME, make_analyzer())
        self._index.register_tokenizer(STORED_ONLY_TOKENIZER, stored_only_analyzer())
        self._index.register_tokenizer(WORDS_ANALYZER_NAME, make_words_analyzer())
        self._schema = self._index.schema
        self._memory_generation = 0
        self._served: str | None = None  # digest of the meta.json the reader serves (at least)
        self._checked_at = float("-inf")
        self._reader_lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._spec_stored = False
        self._pending_writes = threading.BoundedSemaphore(max_pending_writes)
        self.max_pending_writes = max_pending_writes
        self._pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="scopegate-search")
        self._writer = ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="scopegate-write", initializer=lower_priority, initargs=(writer_nice,)
        )
        self._refresh_reader(force=True)
        # Vectors (vector and hybrid retrieval): a store beside the index, committed in lockstep.
        self.vectors: VectorIngest | None = None
        if spec.uses_vectors():
            self.vectors = VectorIngest.open(
                spec,
                None if self.path is None else self.path / "vectors",
                encoder,
                self._tantivy_opstamp(),
                vector_store_options,
            )
            if check_vectors:
                self._check_vectors(reembed)

    # -- construction helpers ------------------------------------------
    @classmethod
    def open(cls, path: str | Path, **options: Any) -> EmbeddedBackend:
        """Open an existing index folder with the spec stored beside it (writes nothing; ``options``: see
        ``__init__``)."""
        folder = Path(path)
        spec = storage.read_spec_file(folder) if folder.is_dir() else None
        if spec is None or storage.read_meta(folder) is None:
            raise MissingIndexError(str(path))
        return cls(spec, folder, **options)

    def _in_memory(self) -> tantivy.Index:
        return tantivy.Index(build_schema(self.spec), sort_by_field=self.spec.tenant_field)

    def _open(self) -> tantivy.Index:
        assert self.path is not None
        meta = storage.read_meta(self.path) if self.path.is_dir() else None
        if meta is None:
            return self._create()
        problems = storage.index_problems(self.path, self.spec)
        if problems:
            raise ConfigError(
                f"the index at {self.path} was built with a different mapping ({'; '.join(problems)}); "
                "re-ingest into a new folder"
            )
        self.legacy_keys = storage.legacy_keys(meta)
        self.layout = IndexLayout.on_disk(self.spec, meta.schema)
        if not self.layout.text_indexed and self.spec.field_combination != "combined_fields":
            raise ConfigError(
                f"field_combination: the index at {self.path} was built for combined_fields (its text fields "
                f"are stored, not searchable one by one), the spec asks for {self.spec.field_combination}; "
                "re-ingest into a new folder"
            )
        if self.spec.date_field and self.layout.date_field is None:
            log.warning(
                "the embedded index at %s was built without the date field %r: searches work, dates are not "
                "stored, counting by date is refused; re-ingest into a new folder to add it",
                self.path,
                self.spec.date_field,
            )
        where = self.path
        if not storage.writable(self.path):
            self._view = storage.ReadOnlyView(self.path)
            where = self._view.folder
        try:
            return tantivy.Index.open(str(where))
        except ENGINE_ERRORS as exc:
            self._close_view()
            raise ConfigError(f"cannot open embedded index at {self.path}: {exc}") from exc

    def _create(self) -> tantivy.Index:
        """A new index: the spec file first (created atomically, or checked if a concurrent creator won)."""
        assert self.path is not None
        try:
            self.path.mkdir(parents=True, exist_ok=True)
            if not storage.write_spec_file(self.path, self.spec, replace=False):
                stored = storage.read_spec_file(self.path)
                problems = storage.shape_problems(stored, self.spec) if stored is not None else []
                if problems:
                    raise ConfigError(
                        f"the index at {self.path} is being created with a different mapping ({'; '.join(problems)})"
                    )
            return tantivy.Index(
                build_schema(self.spec), path=str(self.path), reuse=True, sort_by_field=self.spec.tenant_field
            )
        except ENGINE_ERRORS as exc:
            if isinstance(exc, ConfigError):
                raise
            raise ConfigError(f"cannot create embedded index at {self.path}: {exc}") from exc

    def _close_view(self) -> None:
        if self._view is not None:
            self._view.close()
            self._view = None

    @property
    def disk_spec(self) -> SearchSpec:
        """What the stored spec file says: the spec, with the date field the index actually holds."""
        return dataclasses.replace(self.spec, date_field=self.layout.date_field)

    @property
    def read_only(self) -> bool:
        """True when the folder cannot be written by this process (searches work, writes are refused)."""
        return self._view is not None

    # -- the reader ------------------------------------------------------
    def _refresh_reader(self, *, force: bool = False) -> str:
        """Reload the reader if a newer commit point is on disk; return the generation it serves (at least)."""
        if self.path is None:
            return f"mem:{self._memory_generation}"
        now = time.monotonic()
        if not force and self._served is not None and now - self._checked_at < self.reader_check_s:
            return f"meta:{self._served}"
        meta = storage.read_meta(self.path)
        if meta is None:
            raise MissingIndexError(str(self.path))
        if meta.digest != self._served:
            with self._reader_lock:
                if meta.digest != self._served:
                    self._reload()
                    self._served = meta.digest
        self._checked_at = now
        return f"meta:{meta.digest}"

    def _reload(self) -> None:
        for attempt in range(RELOAD_ATTEMPTS):
            try:
                if self._view is not None:
                    self._view.sync()
                self._index.reload()
                return
            except ENGINE_ERRORS as exc:
                # A writer elsewhere committed or collected files between our read and the open: read again.
                if attempt == RELOAD_ATTEMPTS - 1:
                    raise BackendError(f"embedded index reload failed: {exc}", retryable=True) from exc
                time.sleep(0.01 * (attempt + 1))

    def _searcher(self) -> tantivy.Searcher:
        self._refresh_reader()
        return self._index.searcher()

    # -- analysis and query building -----------------------------------
    def analyze(self, text: str) -> list[str]:
        return analyze(text)

    def build_query(self, query: SearchQuery) -> tantivy.Query | None:
        """The tantivy query for ``query``: the text query, scope as zero-score filters."""
        if query.listing:  # filters only: every in-scope document that matches them
            return tantivy.Query.boolean_query(
                [(tantivy.Occur.Must, tantivy.Query.all_query()), *self._scope_clauses(query.scope, query.filters)]
            )
        text_q = self.text_query(query.text)
        if text_q is None:
            return None
        return tantivy.Query.boolean_query(
            [(tantivy.Occur.Must, text_q), *self._scope_clauses(query.scope, query.filters)]
        )

    def text_query(self, text: str) -> tantivy.Query | None:
        """Fields combined as the spec says, with the semantics of Elasticsearch's ``multi_match``.

        One ``should`` term clause per query-term occurrence (a repeated word
        counts twice, as in Lucene's match query). best_fields: dis_max over
        the boosted per-field queries with ``tie_breaker``; most_fields: their
        sum; combined_fields: one BM25F query on the catch-all field.
        """
        terms = query_terms(text)
        if not terms:
            return None
        if self.spec.field_combination == "combined_fields":
            return self._terms_query(COMBINED_FIELD, terms)
        per_field = []
        for tf in self.spec.text_fields:
            q = self._terms_query(tf.name, terms)
            per_field.append(tantivy.Query.boost_query(q, tf.boost) if tf.boost != 1.0 else q)
        if len(per_field) == 1:
            return per_field[0]
        if self.spec.field_combination == "most_fields":
            return tantivy.Query.boolean_query([(tantivy.Occur.Should, q) for q in per_field])
        return tantivy.Query.disjunction_max_query(per_field, self.spec.tie_breaker or None)

    def _terms_query(self, field_name: str, terms: list[str]) -> tantivy.Query:
        return tantivy.Query.boolean_query(
            [(tantivy.Occur.Should, tantivy.Query.term_query(self._schema, field_name, t)) for t in terms]
        )

    def _filter(self, q: tantivy.Query) -> tuple[tantivy.Occur, tantivy.Query]:
        return (tantivy.Occur.Must, tantivy.Query.const_score_query(q, 0.0))

    def _scope_clauses(
        self, scope: Scope, filters: Iterable[tuple[str, str]] = ()
    ) -> list[tuple[tantivy.Occur, tantivy.Query]]:
        clauses = [self._filter(tantivy.Query.term_query(self._schema, self.spec.tenant_field, scope.tenant_id))]
        if self.spec.group_field:
            # No groups in scope means no group-restricted document is visible.
            clauses.append(
                self._filter(tantivy.Query.term_set_query(self._schema, self.spec.group_field, list(scope.group_ids)))
            )
        for name, value in filters:
            clauses.append(self._filter(tantivy.Query.term_query(self._schema, name, value)))
        return clauses

    # -- search ----------------------------------------------------------
    def search_sync(self, query: SearchQuery) -> RawResult:
        started = time.perf_counter()
        tq = self.build_query(query)
        if tq is None:
            return RawResult(hits=(), total=0, terms=())
        try:
            searcher = self._searcher()
            if query.listing and self._stored_date is not None:  # newest first
                result = searcher.search(
                    tq, query.limit, count=True, order_by_field=self._stored_date, offset=query.offset,
                    order=tantivy.Order.Desc,
                )  # fmt: skip
            else:
                result = searcher.search(tq, query.limit, count=True, offset=query.offset)
            hits = []
            for score, address in result.hits:
                fields = {k: _first(v) for k, v in searcher.doc(address).to_dict().items()}
                hits.append(RawHit(doc_id=str(fields.get(self.spec.id_field)), score=float(score), fields=fields))
        except (OSError, ValueError, RuntimeError) as exc:
            raise BackendError(f"embedded search failed: {exc}") from exc
        count = getattr(result, "count", None)
        total = int(count if count is not None else len(hits))
        return RawResult(
            hits=tuple(hits),
            total=total,
            total_relation="eq",
            took_ms=(time.perf_counter() - started) * 1000,
            terms=unique_terms(query.text, MAX_QUERY_TERMS),
        )

    async def search(self, query: SearchQuery) -> RawResult:
        if self.vectors is None:
            return await self._run(self.search_sync, query)
        return await retrieve(
            self.spec,
            query,
            keyword=lambda q: self._run(self.search_sync, q),
            knn=lambda q, k: self._run(self.knn_sync, q, k),
            fetch=lambda ids, scope: self._run(self.get_many_sync, list(ids), scope),
        )

    def knn_sync(self, query: SearchQuery, k: int) -> KnnResult:
        """The ``k`` in-scope nearest neighbours of the query text (encoding included)."""
        assert self.vectors is not None
        started = time.perf_counter()
        self.vectors.store.sync(self._tantivy_opstamp())
        vector = self.vectors.encode_query(query.text)
        found, in_scope = self.vectors.store.search(
            vector, query.scope, query.filters, k, group_field=self.spec.group_field is not None
        )
        hits = tuple(RawHit(doc_id=doc, score=score, fields={}) for doc, score in found)
        return KnnResult(hits=hits, in_scope=in_scope, took_ms=(time.perf_counter() - started) * 1000)

    def get_many_sync(self, doc_ids: list[str] | tuple[str, ...], scope: Scope) -> dict[str, dict[str, Any]]:
        """Stored fields of the in-scope documents among ``doc_ids`` (scope applied by the engine again)."""
        if not doc_ids:
            return {}
        clauses = [
            (tantivy.Occur.Must, tantivy.Query.term_set_query(self._schema, self.spec.id_field, list(doc_ids))),
            *self._scope_clauses(scope),
        ]
        searcher = self._searcher()
        result = searcher.search(tantivy.Query.boolean_query(clauses), len(doc_ids), count=False)
        out: dict[str, dict[str, Any]] = {}
        for _, address in result.hits:
            fields = {k: _first(v) for k, v in searcher.doc(address).to_dict().items()}
            out[str(fields.get(self.spec.id_field))] = fields
        return out

    def _tantivy_opstamp(self) -> int:
        if self.path is None:
            return self._memory_generation
        try:
            meta = storage.read_meta(self.path)
        except ConfigError:
            return 0
        return meta.opstamp if meta is not None else 0

    def _check_vectors(self, reembed: bool) -> None:
        """Vectors made by another model, or documents without vectors: re-embed or refuse."""
        assert self.vectors is not None
        stale = self.vectors.stale_reason(int(self._index.searcher().num_docs))
        if stale is None:
            return
        if not reembed:
            raise ConfigError(f"{stale}; open with reembed=True (CLI: scopegate reembed INDEX) to re-embed")
        self.reembed_sync()

    def reembed_sync(self, *, progress: ProgressCallback | None = None) -> int:
        """Re-embed every stored document with the current encoder (after a model change)."""
        assert self.vectors is not None
        with self._write_lock:
            self._check_writable()
            writer = self._open_writer(1)
            try:
                self.vectors.store.settle(self._tantivy_opstamp())
                searcher = self._searcher()
                total = int(searcher.num_docs)
                records = []
                if total:
                    for _, address in searcher.search(tantivy.Query.all_query(), total, count=False).hits:
                        records.append({k: _first(v) for k, v in searcher.doc(address).to_dict().items()})
                for record in records:
                    self.vectors.add(record)
                self.vectors.stage(writer.commit_opstamp, progress=progress, replace_all=True)
                opstamp = writer.commit()
                self.vectors.store.promote(opstamp)
                writer.wait_merging_threads()
            except BaseException:
                self.vectors.store.discard()
                with contextlib.suppress(Exception):
                    writer.rollback()
                raise
            finally:
                del writer
                self._after_write()
        return len(records)

    def get_sync(self, doc_id: str, scope: Scope) -> dict[str, Any] | None:
        clauses = [
            (tantivy.Occur.Must, tantivy.Query.term_query(self._schema, self.spec.id_field, doc_id)),
            *self._scope_clauses(scope),
        ]
        searcher = self._searcher()
        result = searcher.search(tantivy.Query.boolean_query(clauses), 1, count=False)
        if not result.hits:
            return None
        return {k: _first(v) for k, v in searcher.doc(result.hits[0][1]).to_dict().items()}

    async def get(self, doc_id: str, scope: Scope) -> dict[str, Any] | None:
        return await self._run(self.get_sync, doc_id, scope)

    def count_sync(self, scope: Scope | None = None) -> int:
        searcher = self._searcher()
        if scope is None:
            return int(searcher.num_docs)
        q = tantivy.Query.boolean_query([(tantivy.Occur.Must, tantivy.Query.all_query()), *self._scope_clauses(scope)])
        return int(getattr(searcher.search(q, 1, count=True), "count", 0) or 0)

    # -- aggregation -----------------------------------------------------
    def aggregation_problems(self, fields: Sequence[str]) -> list[str]:
        problems = []
        where = f"the embedded index at {self.path}" if self.path is not None else "the in-memory index"
        for name in fields:
            if name == self.spec.date_field:
                if self._stored_date is None:
                    problems.append(
                        f"{where} was built without the date field {name!r}; re-ingest into a new folder to count by it"
                    )
            elif name not in self.layout.fast:
                problems.append(
                    f"{where} was built before scopegate could count by {name!r} (not a fast field); "
                    "re-ingest into a new folder"
                )
        return problems

    def _aggregation_base(self, query: AggregationQuery) -> tantivy.Query:
        clauses = [(tantivy.Occur.Must, tantivy.Query.all_query()), *self._scope_clauses(query.scope, query.filters)]
        if query.date_field is not None and query.start is not None and query.end is not None:
            window = tantivy.Query.range_query(
                self._schema,
                query.date_field,
                tantivy.FieldType.Date,
                midnight(query.start),
                midnight(query.end),
                include_lower=True,
                include_upper=False,
            )
            clauses.append(self._filter(window))
        return tantivy.Query.boolean_query(clauses)

    def _count(self, searcher: tantivy.Searcher, query: tantivy.Query) -> int:
        return int(getattr(searcher.search(query, 1, count=True), "count", 0) or 0)

    def aggregate_sync(self, query: AggregationQuery) -> RawAggregation:
        """Counts with tantivy's aggregation API: ``terms`` on a fast keyword field (only the
        enumerated values), or a 1-day ``date_histogram`` rolled up into weeks or months."""
        problems = self.aggregation_problems([query.field, *([query.date_field] if query.date_field else [])])
        if problems:
            raise FieldUnavailable(query.field, problems[0])
        started = time.perf_counter()
        base = self._aggregation_base(query)
        try:
            searcher = self._searcher()
            total = self._count(searcher, base)
            if query.kind == "terms":
                spec = {
                    "terms": {"field": query.field, "size": max(1, len(query.values)), "include": list(query.values)}
                }
                found = searcher.aggregate(base, {"g": spec})["g"]
                buckets = tuple(RawBucket(str(b["key"]), int(b["doc_count"])) for b in found.get("buckets", []))
                exists = tantivy.Query.exists_query(query.field)
                present = self._count(
                    searcher, tantivy.Query.boolean_query([(tantivy.Occur.Must, base), (tantivy.Occur.Must, exists)])
                )
                missing = total - present
                error = int(found.get("doc_count_error_upper_bound", 0) or 0)
            else:
                assert query.interval is not None
                found = searcher.aggregate(
                    base, {"g": {"date_histogram": {"field": query.field, "fixed_interval": "1d"}}}
                )["g"]
                days = ((day_of_epoch_ms(b["key"]), int(b["doc_count"])) for b in found.get("buckets", []))
                rolled = roll_up(days, query.interval)
                buckets = tuple(RawBucket(day.isoformat(), count) for day, count in sorted(rolled.items()) if count)
                missing, error = 0, 0
        except (OSError, ValueError, RuntimeError, KeyError, TypeError) as exc:
            raise BackendError(f"embedded aggregation failed: {exc}") from exc
        return RawAggregation(
            total=total,
            buckets=buckets,
            missing=missing,
            error_bound=error,
            took_ms=(time.perf_counter() - started) * 1000,
        )

    async def aggregate(self, query: AggregationQuery) -> RawAggregation:
        return await self._run(self.aggregate_sync, query)

    # -- ingest ----------------------------------------------------------
    def _document(self, record: Mapping[str, Any], doc_id: str) -> tantivy.Document:
        """The tantivy document of ``record``, built from Python values: a JSON text for ``add_json``
        cost three times as much per realistic ticket (encoding non-ASCII text to JSON and back)."""
        doc: dict[str, Any] = {}
        for name in self.spec.stored_fields():
            value = doc_id if name == self.spec.id_field else record.get(name)
            if value is None or value == "":
                continue
            if name == self.spec.group_field:
                doc[name] = [value] if isinstance(value, str) else [str(g) for g in value]
            elif name == self.spec.date_field:
                if self._stored_date is not None:  # an index that predates the field cannot hold it
                    doc[name] = parse_datetime(value)  # aware UTC, whole seconds: what the JSON path stored
            else:
                doc[name] = str(value)
        combined = combined_text(self.spec, record) if self.spec.field_combination == "combined_fields" else ""
        if combined:
            # Words cut in one C pass for the whitespace tokenizer (the regex tokenizer's cost, see analysis).
            doc[COMBINED_FIELD] = word_runs(combined) if self.layout.words_tokenized else combined
        if not self.legacy_keys:
            doc[KEY_FIELD] = document_key(str(record[self.spec.tenant_field]), doc_id)
        return tantivy.Document.from_dict(doc, self._schema)

    def _check_writable(self) -> None:
        if self.path is None:
            return
        if self._view is not None:
            raise IngestError(f"the index folder {self.path} is read-only for this process; nothing was written")
        if self.legacy_keys:
            raise IngestError(
                f"the index at {self.path} was written by a scopegate that keyed documents by id alone, so one "
                "tenant's write could replace another's; migrate it first: scopegate migrate "
                f"{self.path} NEW_FOLDER (see the docs: Operations, 'Migrating an index')"
            )
        if not self._spec_stored:
            try:
                if storage.read_spec_file(self.path) != self.disk_spec:  # written only when it changes
                    storage.write_spec_file(self.path, self.disk_spec, replace=True)
            except OSError as exc:
                raise IngestError(f"cannot store the spec beside the index at {self.path}: {exc}") from exc
            self._spec_stored = True

    def _open_writer(self, threads: int) -> tantivy.IndexWriter:
        """An index writer, waiting up to ``writer_wait_s`` while another process holds the writer lock."""
        deadline = time.monotonic() + self.writer_wait_s
        while True:
            try:
                return self._index.writer(WRITER_HEAP_BYTES, threads)
            except ENGINE_ERRORS as exc:
                locked = "lock" in str(exc).lower()
                if not locked or time.monotonic() >= deadline:
                    hint = f" (another writer held the lock for {self.writer_wait_s:g} s)" if locked else ""
                    raise IngestError(f"cannot open an index writer{hint}: {exc}") from exc
                time.sleep(WRITER_RETRY_S)

    @property
    def _stored_date(self) -> str | None:
        """The spec's date field when the index holds it (an index may predate it, or hold one the spec omits)."""
        date = self.spec.date_field
        return date if date is not None and date == self.layout.date_field else None

    def ingest_sync(
        self,
        documents: Iterable[Mapping[str, Any]],
        *,
        batch_size: int = 10_000,
        progress: ProgressCallback | None = None,
        on_commit: Callable[[int], None] | None = None,
    ) -> IngestReport:
        """Upsert by (tenant, id) in batches; each batch is one atomic commit.

        A crash between commits loses at most the uncommitted batch: tantivy
        publishes a commit by atomically replacing its meta file. An engine
        failure (a full disk, say) rolls back the open batch and raises an
        :class:`IngestError` saying how many documents were committed before it.
        """
        if batch_size < 1:
            raise IngestError("batch_size must be at least 1")
        report = IngestReport()
        started = time.perf_counter()
        with self._write_lock:
            self._check_writable()
            writer = self._open_writer(2)
            pending = 0
            if self.vectors is not None:
                self.vectors.store.settle(self._tantivy_opstamp())
            try:
                for position, record in enumerate(documents, start=1):
                    if position % YIELD_EVERY == 0:
                        time.sleep(0)  # hand the GIL to a waiting search now, not after the 5 ms switch interval
                    problem = document_problem(self.spec, record, self._stored_date)
                    if problem:
                        report.failed += 1
                        if len(report.errors) < 1000:
                            report.errors.append((str(record.get(self.spec.id_field) or f"#{position}"), problem))
                        continue
                    doc_id = str(record[self.spec.id_field]).strip()
                    key = document_key(str(record[self.spec.tenant_field]), doc_id)
                    writer.delete_documents_by_term(KEY_FIELD, key)
                    writer.add_document(self._document(record, doc_id))
                    if self.vectors is not None:
                        self.vectors.add({**record, self.spec.id_field: doc_id})
                    pending += 1
                    if pending >= batch_size:
                        self._commit(writer, report, pending, progress, on_commit)
                        pending = 0
                if pending or report.commits == 0:
                    self._commit(writer, report, pending, progress, on_commit)
                writer.wait_merging_threads()
            except ENGINE_ERRORS as exc:
                if self.vectors is not None:
                    self.vectors.discard()
                if isinstance(exc, IngestError):
                    raise
                with contextlib.suppress(Exception):  # the original error matters more
                    writer.rollback()
                cause = storage_problem(self.path) if self.path is not None else None
                raise IngestError(
                    f"ingest stopped after {report.indexed} documents were committed in {report.commits} commits; "
                    f"the batch in progress was rolled back: {exc}" + (f" ({cause})" if cause else ""),
                    committed=report.indexed,
                    commits=report.commits,
                ) from exc.with_traceback(None)  # its frames hold the writer (and its lock)
            except BaseException:
                if self.vectors is not None:
                    self.vectors.discard()
                with contextlib.suppress(Exception):
                    writer.rollback()
                raise
            finally:
                # Drop the writer now (its lock with it): a traceback kept by the caller must not hold it.
                del writer
                self._after_write()
        if self.vectors is not None:
            self.vectors.store.ensure_graph()
        report.seconds = time.perf_counter() - started
        return report

    def _commit(
        self,
        writer: tantivy.IndexWriter,
        report: IngestReport,
        pending: int,
        progress: ProgressCallback | None,
        on_commit: Callable[[int], None] | None,
    ) -> None:
        if self.vectors is None:
            writer.commit()
        else:
            # Vectors first (pending), then tantivy, then the vectors' manifest: see scopegate.vector.store.
            self.vectors.stage(writer.commit_opstamp, progress=progress)
            self.vectors.store.promote(writer.commit())
        report.commits += 1
        report.indexed += pending
        self._after_write()
        if progress and self.vectors is None:
            progress(pending)
        if on_commit:
            on_commit(report.indexed)

    def _after_write(self) -> None:
        """Make this process's own commits visible to its next search at once (and only then count them)."""
        with contextlib.suppress(*ENGINE_ERRORS):
            if self.path is None:
                self._index.reload()
                self._memory_generation += 1
            else:
                self._refresh_reader(force=True)

    def delete_sync(self, doc_ids: Iterable[str], *, tenant: str) -> int:
        """Delete the documents ``(tenant, id)`` in one commit; returns how many ids were submitted."""
        try:
            owner = canonical_id(tenant, "tenant")
        except ScopeMissing as exc:
            raise IngestError(f"cannot delete: {exc}") from exc
        ids = [d.strip() for d in doc_ids if isinstance(d, str) and d.strip()]
        with self._write_lock:
            self._check_writable()
            writer = self._open_writer(1)
            try:
                if self.vectors is not None:
                    self.vectors.store.settle(self._tantivy_opstamp())
                for doc_id in ids:
                    writer.delete_documents_by_term(KEY_FIELD, document_key(owner, doc_id))
                    if self.vectors is not None:
                        self.vectors.delete(doc_id, owner)
                if self.vectors is None:
                    writer.commit()
                else:
                    self.vectors.stage(writer.commit_opstamp)
                    self.vectors.store.promote(writer.commit())
                writer.wait_merging_threads()
            except ENGINE_ERRORS as exc:
                if self.vectors is not None:
                    self.vectors.discard()
                with contextlib.suppress(Exception):
                    writer.rollback()
                cause = storage_problem(self.path) if self.path is not None else None
                raise IngestError(
                    f"delete failed, nothing was deleted: {exc}" + (f" ({cause})" if cause else ""),
                    committed=0,
                    commits=0,
                ) from exc.with_traceback(None)
            finally:
                # Drop the writer now (its lock with it): a traceback kept by the caller must not hold it.
                del writer
                self._after_write()
        return len(ids)

    async def ingest(
        self,
        documents: Iterable[Mapping[str, Any]],
        *,
        batch_size: int = 10_000,
        progress: ProgressCallback | None = None,
    ) -> IngestReport:
        return await self._write(lambda: self.ingest_sync(documents, batch_size=batch_size, progress=progress))

    async def delete(self, doc_ids: Iterable[str], *, tenant: str) -> int:
        ids = list(doc_ids)
        return await self._write(lambda: self.delete_sync(ids, tenant=tenant))

    # -- housekeeping ----------------------------------------------------
    async def generation(self) -> str:
        """The commit point the reader serves: ``meta:<digest of meta.json>`` (``mem:<n>`` in memory).

        It is read before the reader is brought up to date, so a result
        computed after this call reflects this commit or a later one, never an
        earlier one; every process on the folder derives the same value.
        """
        return await self._run(self._refresh_reader)

    def reload(self) -> None:
        self._refresh_reader(force=True)

    def iter_documents(self) -> Iterator[dict[str, Any]]:
        """Every live document's stored fields, tenant by tenant (for migration and exports)."""
        searcher = self._searcher()
        for tenant, count in searcher.terms_with_prefix(self.spec.tenant_field, ""):
            if count <= 0:
                continue
            query = tantivy.Query.term_query(self._schema, self.spec.tenant_field, tenant)
            for _score, address in searcher.search(query, count, count=False).hits:
                yield {k: _first(v) for k, v in searcher.doc(address).to_dict().items()}

    async def _run(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, lambda: fn(*args, **kwargs))

    async def _write(self, job: Callable[[], T]) -> T:
        """Run ``job`` on the writer thread; refuse it when ``max_pending_writes`` are already waiting."""
        if not self._pending_writes.acquire(blocking=False):
            raise IngestError(
                f"{self.max_pending_writes} writes are already queued for this index; try again when they finish"
            )
        try:
            future: Future[T] = self._writer.submit(job)
        except BaseException:
            self._pending_writes.release()
            raise
        future.add_done_callback(lambda _f: self._pending_writes.release())
        return await asyncio.wrap_future(future)

    def close_sync(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
        self._writer.shutdown(wait=False, cancel_futures=True)
        self._close_view()

    async def close(self) -> None:
        self.close_sync()


def migrate_index(source: str | Path, dest: str | Path, *, batch_size: int = 10_000) -> IngestReport:
    """Copy the index at ``source`` into a new folder ``dest`` keyed by (tenant, id); ``source`` is not changed.

    For indexes written before documents were keyed by tenant (and safe on any
    index: it is a plain copy). Writers must be stopped meanwhile; readers may
    keep searching ``source`` and switch to ``dest`` when it is done.
    """
    target = Path(dest)
    if target.exists() and any(target.iterdir()):
        raise IngestError(f"{target} is not empty: migrate into a new folder")
    old = EmbeddedBackend.open(source)
    try:
        new = EmbeddedBackend(old.spec, target)
        try:
            return new.ingest_sync(old.iter_documents(), batch_size=batch_size)
        finally:
            new.close_sync()
    finally:
        old.close_sync()
