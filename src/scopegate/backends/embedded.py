"""The embedded engine: tantivy on local disk, no server.

Scope and filters are zero-score ``term`` clauses inside the tantivy query,
so totals and pages count only the caller's documents. Query text is analysed
into terms with the index's own analyser and the query is built from term
queries: no query parser ever sees the model's words.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import tantivy

from scopegate.backends.base import IngestReport, ProgressCallback
from scopegate.errors import BackendError, ConfigError, IngestError, MissingIndexError
from scopegate.scope import Scope
from scopegate.search.analysis import ANALYZER_NAME, make_analyzer, unique_terms
from scopegate.search.model import RawHit, RawResult, SearchQuery
from scopegate.search.spec import SearchSpec, spec_from_dict, spec_to_dict

P = ParamSpec("P")
T = TypeVar("T")

SPEC_FILE = "scopegate-spec.json"
WRITER_HEAP_BYTES = 256_000_000
MAX_QUERY_TERMS = 32


def build_schema(spec: SearchSpec) -> tantivy.Schema:
    sb = tantivy.SchemaBuilder()
    sb.add_text_field(spec.id_field, stored=True, tokenizer_name="raw", index_option="basic")
    # The tenant is a fast field so the index can be sorted by it (see EmbeddedBackend.__init__).
    sb.add_text_field(spec.tenant_field, stored=True, tokenizer_name="raw", index_option="basic", fast=True)
    for name in spec.all_keyword_fields():
        sb.add_text_field(name, stored=True, tokenizer_name="raw", index_option="basic")
    if spec.group_field:
        sb.add_text_field(spec.group_field, stored=True, tokenizer_name="raw", index_option="basic")
    for t in spec.text_fields:
        # Term frequencies without positions: we never run phrase queries.
        sb.add_text_field(t.name, stored=True, tokenizer_name=ANALYZER_NAME, index_option="freq")
    return sb.build()


def _first(values: Any) -> Any:
    if isinstance(values, list):
        return values[0] if len(values) == 1 else (values if values else None)
    return values


class EmbeddedBackend:
    """A tantivy index in a folder (or in memory when ``path`` is None).

    Documents are stored sorted by tenant: a tenant's documents are contiguous,
    so the tenant filter lets the engine skip whole blocks of the text match.
    At 1M documents this cut the filtered p95 from about 6 ms to about 1 ms.
    """

    def __init__(self, spec: SearchSpec, path: str | Path | None = None, *, threads: int = 2) -> None:
        self.spec = spec
        self.path = Path(path) if path is not None else None
        self._schema = build_schema(spec)
        self._analyzer = make_analyzer()
        if self.path is not None:
            self.path.mkdir(parents=True, exist_ok=True)
            self._check_spec_file()
            try:
                self._index = tantivy.Index(
                    self._schema, path=str(self.path), reuse=True, sort_by_field=spec.tenant_field
                )
            except (OSError, ValueError) as exc:
                raise ConfigError(f"cannot open embedded index at {self.path}: {exc}") from exc
        else:
            self._index = tantivy.Index(self._schema, sort_by_field=spec.tenant_field)
        self._index.register_tokenizer(ANALYZER_NAME, make_analyzer())
        self._memory_generation = 0
        self._write_lock = threading.Lock()
        # A small private pool: engine calls never block the event loop, and
        # ingest cannot starve searches of the default executor.
        self._pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="scopegate-embedded")

    # -- construction helpers ------------------------------------------
    @classmethod
    def open(cls, path: str | Path) -> EmbeddedBackend:
        """Open an existing index folder with the spec stored beside it."""
        spec_path = Path(path) / SPEC_FILE
        if not spec_path.exists():
            raise MissingIndexError(str(path))
        return cls(spec_from_dict(json.loads(spec_path.read_text("utf-8"))), path)

    def _check_spec_file(self) -> None:
        assert self.path is not None
        spec_path = self.path / SPEC_FILE
        mine = spec_to_dict(self.spec)
        if spec_path.exists():
            stored = json.loads(spec_path.read_text("utf-8"))
            if _index_shape(stored) != _index_shape(mine):
                raise ConfigError(
                    f"index at {self.path} was built with a different mapping; re-ingest into a new folder"
                )
        tmp = spec_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(mine, indent=2, sort_keys=True), "utf-8")
        tmp.replace(spec_path)

    # -- analysis and query building -----------------------------------
    def analyze(self, text: str) -> list[str]:
        return list(self._analyzer.analyze(text))

    def build_query(self, query: SearchQuery) -> tantivy.Query | None:
        """The tantivy query for ``query``: dis_max over boosted fields, scope as zero-score filters."""
        terms = unique_terms(query.text, MAX_QUERY_TERMS)
        if not terms:
            return None
        per_field = []
        for tf in self.spec.text_fields:
            should = [(tantivy.Occur.Should, tantivy.Query.term_query(self._schema, tf.name, t)) for t in terms]
            q = tantivy.Query.boolean_query(should)
            per_field.append(tantivy.Query.boost_query(q, tf.boost) if tf.boost != 1.0 else q)
        text_q = per_field[0] if len(per_field) == 1 else tantivy.Query.disjunction_max_query(per_field)
        return tantivy.Query.boolean_query(
            [(tantivy.Occur.Must, text_q), *self._scope_clauses(query.scope, query.filters)]
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
            searcher = self._index.searcher()
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
        return await self._run(self.search_sync, query)

    def get_sync(self, doc_id: str, scope: Scope) -> dict[str, Any] | None:
        clauses = [
            (tantivy.Occur.Must, tantivy.Query.term_query(self._schema, self.spec.id_field, doc_id)),
            *self._scope_clauses(scope),
        ]
        searcher = self._index.searcher()
        result = searcher.search(tantivy.Query.boolean_query(clauses), 1, count=False)
        if not result.hits:
            return None
        return {k: _first(v) for k, v in searcher.doc(result.hits[0][1]).to_dict().items()}

    async def get(self, doc_id: str, scope: Scope) -> dict[str, Any] | None:
        return await self._run(self.get_sync, doc_id, scope)

    def count_sync(self, scope: Scope | None = None) -> int:
        searcher = self._index.searcher()
        if scope is None:
            return int(searcher.num_docs)
        q = tantivy.Query.boolean_query([(tantivy.Occur.Must, tantivy.Query.all_query()), *self._scope_clauses(scope)])
        return int(getattr(searcher.search(q, 1, count=True), "count", 0) or 0)

    # -- ingest ----------------------------------------------------------
    def _document(self, record: Mapping[str, Any]) -> str:
        doc: dict[str, Any] = {}
        for name in self.spec.stored_fields():
            value = record.get(name)
            if value is None or value == "":
                continue
            if name == self.spec.group_field:
                groups = [value] if isinstance(value, str) else [str(g) for g in value]
                doc[name] = groups
            else:
                doc[name] = str(value)
        return json.dumps(doc, ensure_ascii=False)

    def _record_problem(self, record: Mapping[str, Any]) -> str | None:
        doc_id = record.get(self.spec.id_field)
        if not isinstance(doc_id, str) or not doc_id.strip():
            return f"missing {self.spec.id_field}"
        tenant = record.get(self.spec.tenant_field)
        if not isinstance(tenant, str) or not tenant.strip():
            return f"missing {self.spec.tenant_field}"
        return None

    def ingest_sync(
        self,
        documents: Iterable[Mapping[str, Any]],
        *,
        batch_size: int = 10_000,
        progress: ProgressCallback | None = None,
        on_commit: Callable[[int], None] | None = None,
    ) -> IngestReport:
        """Upsert by id in batches; each batch is one atomic commit.

        A crash between commits loses at most the uncommitted batch: tantivy
        publishes a commit by atomically replacing its meta file.
        """
        if batch_size < 1:
            raise IngestError("batch_size must be at least 1")
        report = IngestReport()
        started = time.perf_counter()
        with self._write_lock:
            try:
                writer = self._index.writer(WRITER_HEAP_BYTES, 2)
            except (OSError, ValueError) as exc:
                raise IngestError(f"cannot open an index writer (another process writing?): {exc}") from exc
            pending = 0
            try:
                for position, record in enumerate(documents, start=1):
                    problem = self._record_problem(record)
                    if problem:
                        report.failed += 1
                        if len(report.errors) < 1000:
                            report.errors.append((str(record.get(self.spec.id_field) or f"#{position}"), problem))
                        continue
                    doc_id = str(record[self.spec.id_field]).strip()
                    writer.delete_documents_by_term(self.spec.id_field, doc_id)
                    writer.add_json(self._document({**record, self.spec.id_field: doc_id}))
                    pending += 1
                    if pending >= batch_size:
                        self._commit(writer, report, pending, progress, on_commit)
                        pending = 0
                if pending or report.commits == 0:
                    self._commit(writer, report, pending, progress, on_commit)
                writer.wait_merging_threads()
            except BaseException:
                with contextlib.suppress(Exception):  # the original error matters more
                    writer.rollback()
                raise
        self._index.reload()
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
        writer.commit()
        report.commits += 1
        report.indexed += pending
        self._memory_generation += 1
        if progress:
            progress(pending)
        if on_commit:
            on_commit(report.indexed)

    async def ingest(
        self,
        documents: Iterable[Mapping[str, Any]],
        *,
        batch_size: int = 10_000,
        progress: ProgressCallback | None = None,
    ) -> IngestReport:
        return await self._run(lambda: self.ingest_sync(documents, batch_size=batch_size, progress=progress))

    def delete_sync(self, doc_ids: Iterable[str]) -> int:
        count = 0
        with self._write_lock:
            writer = self._index.writer(WRITER_HEAP_BYTES, 1)
            for doc_id in doc_ids:
                writer.delete_documents_by_term(self.spec.id_field, doc_id)
                count += 1
            writer.commit()
            writer.wait_merging_threads()
            self._memory_generation += 1
        self._index.reload()
        return count

    async def delete(self, doc_ids: Iterable[str]) -> int:
        ids = list(doc_ids)
        return await self._run(self.delete_sync, ids)

    # -- housekeeping ----------------------------------------------------
    async def generation(self) -> str:
        """Changes with every commit, from this process or another (meta file opstamp)."""
        if self.path is None:
            return f"mem:{self._memory_generation}"
        return await self._run(self._disk_generation)

    def _disk_generation(self) -> str:
        assert self.path is not None
        try:
            meta = json.loads((self.path / "meta.json").read_text("utf-8"))
            return f"opstamp:{meta.get('opstamp', 0)}"
        except (OSError, ValueError):
            return "opstamp:none"

    def reload(self) -> None:
        self._index.reload()

    async def _run(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, lambda: fn(*args, **kwargs))

    async def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


def _index_shape(spec_dict: Mapping[str, Any]) -> tuple[Any, ...]:
    """The parts of a spec that decide the on-disk schema."""
    texts = tuple(str(t).partition("^")[0] for t in spec_dict.get("text_fields", ()))
    filters = tuple(sorted(f["name"] for f in spec_dict.get("filters", ())))
    return (
        spec_dict.get("id_field"),
        spec_dict.get("tenant_field"),
        spec_dict.get("group_field"),
        texts,
        filters,
        tuple(sorted(spec_dict.get("keyword_fields", ()))),
    )
