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
``<index>-read``, which is also the write alias (``is_write_index``). A
reindex fills ``<index>-v<N+1>`` and moves the alias in one atomic
``_aliases`` call, so a search never sees a half-built index.
"""

from __future__ import annotations

import asyncio
import json
import time
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from itertools import islice
from typing import Any, Generic, TypeVar

from scopegate.backends import dsl
from scopegate.backends.base import IngestReport, ProgressCallback
from scopegate.errors import BackendError, IngestError, MissingIndexError
from scopegate.scope import Scope
from scopegate.search.analysis import make_analyzer, unique_terms
from scopegate.search.model import RawResult, SearchQuery
from scopegate.search.spec import SearchSpec

MAX_QUERY_TERMS = 32
ADMIN_TIMEOUT_S = 30.0
BULK_TIMEOUT_S = 120.0
DEFAULT_URL = "http://127.0.0.1:9200"

ClientT = TypeVar("ClientT")


class EngineBackend(ABC, Generic[ClientT]):
    """A search backend on an Elasticsearch-family engine (see module docstring).

    ``url`` is one node or a list; ``client`` replaces the client built from
    ``url`` and ``client_options`` (passed to the engine's client class). The
    client never retries and times out after the spec's ``client_timeout_s``.
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
        refresh_after_write: bool = True,
        bulk_concurrency: int = 2,
        on_partial: str = "flag",
        **client_options: Any,
    ) -> None:
        if on_partial not in ("flag", "error"):
            raise ValueError("on_partial must be 'flag' or 'error'")
        self.spec = spec
        self.on_partial = on_partial
        self.names = dsl.IndexNames(spec.index)
        self.analysis = analysis
        self.shards = shards
        self.replicas = replicas
        self.refresh_after_write = refresh_after_write
        self.bulk_concurrency = max(1, bulk_concurrency)
        self._analyzer = make_analyzer()
        self._writes = 0
        self._ready = False
        hosts = [url] if isinstance(url, str) else list(url)
        self.client: ClientT = (
            client if client is not None else self._connect(hosts, spec.client_timeout_s, **client_options)
        )

    # -- engine calls a subclass provides --------------------------------
    @abstractmethod
    def _connect(self, hosts: list[str], timeout_s: float, **client_options: Any) -> ClientT:
        """A client for ``hosts`` that never retries and times out after ``timeout_s``."""

    @abstractmethod
    async def _search(self, index: str, body: dict[str, Any], timeout_s: float) -> Mapping[str, Any]: ...

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
    async def _delete_template(self, name: str) -> None: ...

    @abstractmethod
    async def _count(self, index: str, body: dict[str, Any]) -> int: ...

    @abstractmethod
    async def _reindex(self, source: str, dest: str) -> int:
        """Server-side copy of every document; returns how many were copied."""

    @abstractmethod
    def _translate(self, exc: Exception, name: str) -> BackendError | None:
        """The scopegate error for a client exception, or None if it is not a client error."""

    @abstractmethod
    async def _close_client(self) -> None: ...

    # -- error boundary --------------------------------------------------
    async def _guard(self, name: str, coro: Any) -> Any:
        try:
            return await coro
        except BackendError:
            raise
        except TimeoutError as exc:
            raise BackendError(f"{self.engine} did not answer in time", retryable=True) from exc
        except Exception as exc:
            translated = self._translate(exc, name)
            if translated is None:
                raise
            raise translated from exc

    # -- SearchBackend ----------------------------------------------------
    async def search(self, query: SearchQuery) -> RawResult:
        body = dsl.search_body(self.spec, query)
        alias = self.names.read_alias
        response = await self._guard(alias, self._search(alias, body, query.client_timeout_s))
        result = dsl.parse_search_response(self.spec, response, unique_terms(query.text, MAX_QUERY_TERMS))
        if result.partial and self.on_partial == "error":
            raise BackendError(f"{self.engine} returned partial results: {result.partial_reason}", retryable=True)
        return result

    async def get(self, doc_id: str, scope: Scope) -> dict[str, Any] | None:
        alias = self.names.read_alias
        body = dsl.fetch_body(self.spec, doc_id, scope, timeout_s=self.spec.engine_timeout_s)
        response = await self._guard(alias, self._search(alias, body, self.spec.client_timeout_s))
        return dsl.parse_fetch_response(response)

    async def count(self, scope: Scope) -> int:
        alias = self.names.read_alias
        result: int = await self._guard(alias, self._count(alias, dsl.count_body(self.spec, scope)))
        return result

    def analyze(self, text: str) -> list[str]:
        """Terms as the engine's ``scopegate_en`` analyser makes them (same chain, run locally)."""
        return list(self._analyzer.analyze(text))

    async def generation(self) -> str:
        """The index behind the read alias plus this process's write/refresh counter."""
        targets = await self._guard(self.names.read_alias, self._alias_targets(self.names.read_alias))
        if not targets:
            raise MissingIndexError(self.names.read_alias)
        return f"{','.join(sorted(targets))}#{self._writes}"

    async def close(self) -> None:
        await self._close_client()

    # -- index lifecycle --------------------------------------------------
    def template_body(self) -> dict[str, Any]:
        return dsl.index_template_body(self.spec, analysis=self.analysis, shards=self.shards, replicas=self.replicas)

    async def ensure_index(self) -> str:
        """Create the template, ``<index>-v1`` and the read alias unless they exist; return the write index."""
        alias = self.names.read_alias
        targets = await self._guard(alias, self._alias_targets(alias))
        if targets:
            self._ready = True
            return str(sorted(targets)[-1])
        await self._guard(alias, self._put_template(self.names.template, self.template_body()))
        first = self.names.version(1)
        body = {"aliases": {alias: {"is_write_index": True}}}
        await self._guard(first, self._create_index(first, body))
        self._ready = True
        return first

    async def refresh(self) -> None:
        await self._guard(self.names.read_alias, self._refresh(self.names.read_alias))
        self._writes += 1

    async def drop(self) -> None:
        """Delete every versioned index and the template (tests, re-ingest from scratch)."""
        await self._guard(self.names.pattern, self._delete_indices(self.names.pattern))
        await self._guard(self.names.template, self._delete_template(self.names.template))
        self._ready = False
        self._writes += 1

    async def reindex(self, documents: Iterable[Mapping[str, Any]] | None = None, *, delete_old: bool = True) -> str:
        """Build ``<index>-v<N+1>`` and swap the read alias to it atomically.

        With ``documents`` the new index is filled from them (e.g. after a
        mapping change); without, the engine copies the current index
        (``_reindex``). Searches keep hitting the old index until the swap.
        """
        alias = self.names.read_alias
        old = await self._guard(alias, self._alias_targets(alias))
        if not old:
            raise MissingIndexError(alias)
        version = max((self.names.version_of(i) or 0) for i in old) + 1
        new = self.names.version(version)
        await self._guard(alias, self._put_template(self.names.template, self.template_body()))
        await self._guard(new, self._create_index(new, {}))
        if documents is None:
            await self._guard(new, self._reindex(alias, new))
        else:
            await self._ingest_into(new, documents, batch_size=5_000, progress=None)
        await self._guard(new, self._refresh(new))
        await self._guard(alias, self._update_aliases(dsl.alias_swap_actions(alias, sorted(old), new)))
        if delete_old:
            for index in old:
                await self._guard(index, self._delete_indices(index))
        self._writes += 1
        return new

    # -- writes -----------------------------------------------------------
    async def ingest(
        self,
        documents: Iterable[Mapping[str, Any]],
        *,
        batch_size: int = 10_000,
        progress: ProgressCallback | None = None,
    ) -> IngestReport:
        """Upsert by id through the write alias, ``bulk_concurrency`` bulk requests in flight."""
        if batch_size < 1:
            raise IngestError("batch_size must be at least 1")
        if not self._ready:
            await self.ensure_index()
        report = await self._ingest_into(self.names.read_alias, documents, batch_size=batch_size, progress=progress)
        if self.refresh_after_write:
            await self.refresh()
        self._writes += 1
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
        in_flight: set[asyncio.Task[tuple[int, Mapping[str, Any]]]] = set()

        async def send(ndjson: str, sent: int) -> tuple[int, Mapping[str, Any]]:
            return sent, await self._guard(index, self._bulk(ndjson, BULK_TIMEOUT_S))

        def absorb(task: asyncio.Task[tuple[int, Mapping[str, Any]]]) -> None:
            sent, response = task.result()
            failed, errors = dsl.bulk_errors(response, limit=max(0, 1000 - len(report.errors)))
            report.failed += failed
            report.errors.extend(errors)
            report.indexed += sent - failed
            report.commits += 1
            if progress:
                progress(sent - failed)

        try:
            while True:
                batch = list(islice(iterator, batch_size))
                if not batch:
                    break
                lines, refused = dsl.bulk_operations(self.spec, batch, index)
                report.failed += len(refused)
                report.errors.extend(refused[: max(0, 1000 - len(report.errors))])
                if not lines:
                    continue
                ndjson = "\n".join(json.dumps(line, ensure_ascii=False) for line in lines) + "\n"
                while len(in_flight) >= self.bulk_concurrency:
                    done, _ = await asyncio.wait(in_flight, return_when=asyncio.FIRST_COMPLETED)
                    for task in done:
                        in_flight.discard(task)
                        absorb(task)
                in_flight.add(asyncio.create_task(send(ndjson, len(lines) // 2)))
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

    async def delete(self, doc_ids: Iterable[str]) -> int:
        alias = self.names.read_alias
        ids = [d for d in doc_ids if isinstance(d, str) and d]
        if not ids:
            return 0
        ndjson = "".join(json.dumps({"delete": {"_index": alias, "_id": d}}) + "\n" for d in ids)
        await self._guard(alias, self._bulk(ndjson, BULK_TIMEOUT_S))
        if self.refresh_after_write:
            await self.refresh()
        self._writes += 1
        return len(ids)
