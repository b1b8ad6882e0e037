"""Elasticsearch backend on the official ``elasticsearch`` client (``AsyncElasticsearch``, 8.x/9.x).

Same request bodies as OpenSearch (:mod:`scopegate.backends.dsl`), same
index layout and error mapping (:mod:`scopegate.backends.engine_common`).

``server_major`` selects the REST compatibility version the client asks
for. The 9.x client sends ``compatible-with=9``, which an 8.x server refuses
("Accept version must be either version 8 or 7"); with ``server_major=8``
the headers say ``compatible-with=8`` so the same client talks to an 8.19
cluster (the newest Elasticsearch distribution on Maven Central, which the
tests run). The client still refuses servers that are not Elasticsearch
(missing ``X-Elastic-Product`` header), e.g. an OpenSearch node.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any, cast

from elastic_transport import ConnectionError as TransportConnectionError
from elastic_transport import ConnectionTimeout, TransportError
from elasticsearch import ApiError, AsyncElasticsearch, NotFoundError, UnsupportedProductError

from scopegate.backends import dsl
from scopegate.backends.engine_common import ADMIN_TIMEOUT_S, FAILOVER_STATUS, EngineBackend
from scopegate.backends.outage import tls_failure
from scopegate.errors import BackendError, MissingIndexError

RETRYABLE_STATUS = frozenset({408, 429, 500, 502, 503, 504})
CLIENT_MAJOR = 9


def _error_type(exc: ApiError) -> str:
    body = exc.body if isinstance(exc.body, Mapping) else {}
    error = body.get("error")
    return str(error.get("type", "")) if isinstance(error, Mapping) else ""


class CompatAsyncElasticsearch(AsyncElasticsearch):
    """``AsyncElasticsearch`` that asks for REST compatibility with ``server_major`` (e.g. 8)."""

    server_major: int = CLIENT_MAJOR

    def options(self, **kwargs: Any) -> CompatAsyncElasticsearch:
        copy = super().options(**kwargs)
        copy.server_major = self.server_major  # options() copies only the client's own settings
        return copy

    async def perform_request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        body: Any | None = None,
        endpoint_id: str | None = None,
        path_parts: Mapping[str, Any] | None = None,
    ) -> Any:
        if headers and self.server_major != CLIENT_MAJOR:
            compat = f"compatible-with={self.server_major}"
            headers = {
                key: (
                    value.replace("application/json", f"application/vnd.elasticsearch+json; {compat}").replace(
                        "application/x-ndjson", f"application/vnd.elasticsearch+x-ndjson; {compat}"
                    )
                    if key.lower() in ("accept", "content-type")
                    else value
                )
                for key, value in headers.items()
            }
        return await super().perform_request(
            method, path, params=params, headers=headers, body=body, endpoint_id=endpoint_id, path_parts=path_parts
        )


class ElasticsearchBackend(EngineBackend[AsyncElasticsearch]):
    """Searches ``<spec.index>-read`` on Elasticsearch; see :mod:`engine_common` for the layout.

    Takes :class:`EngineBackend`'s arguments plus ``server_major`` (default
    ``CLIENT_MAJOR``; ignored when ``client`` is given).
    """

    engine = "elasticsearch"

    def _connect(
        self,
        hosts: list[str],
        timeout_s: float,
        *,
        failover_retries: int,
        dead_timeout_s: float,
        server_major: int = CLIENT_MAJOR,
        **client_options: Any,
    ) -> AsyncElasticsearch:
        client = CompatAsyncElasticsearch(
            hosts=hosts,
            request_timeout=timeout_s,
            max_retries=failover_retries,
            retry_on_timeout=False,
            retry_on_status=FAILOVER_STATUS if failover_retries else (),
            dead_node_backoff_factor=dead_timeout_s,
            max_dead_node_backoff=dead_timeout_s * 8,
            **client_options,
        )
        client.server_major = server_major
        return client

    def _with(self, timeout_s: float, *, search: bool = False) -> AsyncElasticsearch:
        return (self.search_client if search else self.client).options(request_timeout=timeout_s)

    # -- engine calls -----------------------------------------------------
    async def _search(
        self, index: str, body: dict[str, Any], timeout_s: float, routing: str | None = None
    ) -> Mapping[str, Any]:
        response = await self._with(timeout_s, search=True).search(index=index, body=body, routing=routing)
        return dict(response.body)

    async def _bulk(self, ndjson: str, timeout_s: float) -> Mapping[str, Any]:
        response = await self._with(timeout_s).bulk(operations=cast(Any, ndjson))
        return dict(response.body)

    async def _refresh(self, index: str) -> None:
        await self._with(ADMIN_TIMEOUT_S).indices.refresh(index=index)

    async def _shard_stats(self, index: str) -> Mapping[str, Any]:
        response = await self._with(self.spec.client_timeout_s, search=True).indices.stats(
            index=index, metric="refresh", level="shards", filter_path=dsl.STATS_FILTER
        )
        return dict(response.body)

    async def _put_template(self, name: str, body: dict[str, Any]) -> None:
        await self._with(ADMIN_TIMEOUT_S).indices.put_index_template(name=name, body=body)

    async def _create_index(self, name: str, body: dict[str, Any]) -> None:
        await self._with(ADMIN_TIMEOUT_S).indices.create(index=name, body=body or None, wait_for_active_shards="1")

    async def _alias_targets(self, alias: str) -> list[str]:
        try:
            response = await self._with(ADMIN_TIMEOUT_S, search=True).indices.get_alias(name=alias)
        except NotFoundError:
            return []
        return sorted(dict(response.body).keys())

    async def _aliases_of(self, pattern: str) -> Mapping[str, Any]:
        try:
            response = await self._with(ADMIN_TIMEOUT_S).indices.get_alias(index=pattern)
        except NotFoundError:
            return {}
        return dict(response.body)

    async def _health(self, index: str) -> Mapping[str, Any]:
        return dict((await self._with(ADMIN_TIMEOUT_S).cluster.health(index=index)).body)

    async def _index_names(self, pattern: str) -> list[str]:
        found = await self._with(ADMIN_TIMEOUT_S).indices.get(
            index=pattern, ignore_unavailable=True, allow_no_indices=True, filter_path="*.settings.index.uuid"
        )
        return sorted(dict(found.body).keys())

    async def _update_aliases(self, body: dict[str, Any]) -> None:
        await self._with(ADMIN_TIMEOUT_S).indices.update_aliases(body=body)

    async def _delete_indices(self, pattern: str) -> None:
        # Elasticsearch refuses wildcard deletes (action.destructive_requires_name): resolve names first.
        names = await self._index_names(pattern)
        if names:
            await self._with(ADMIN_TIMEOUT_S).indices.delete(index=",".join(names), ignore_unavailable=True)

    async def _delete_template(self, name: str) -> None:
        with contextlib.suppress(NotFoundError):
            await self._with(ADMIN_TIMEOUT_S).indices.delete_index_template(name=name)

    async def _count(self, index: str, body: dict[str, Any], routing: str | None = None) -> Mapping[str, Any]:
        response = await self._with(ADMIN_TIMEOUT_S, search=True).count(index=index, body=body, routing=routing)
        return dict(response.body)

    async def _mapping(self, index: str) -> Mapping[str, Any]:
        response = await self._with(ADMIN_TIMEOUT_S).indices.get_mapping(index=index)
        return dict(response.body)

    async def _reindex(self, source: str, dest: str) -> int:
        response = await self._with(600).reindex(
            source={"index": source}, dest={"index": dest}, refresh=True, wait_for_completion=True
        )
        failures = response.get("failures") or []
        if failures:
            raise BackendError(f"reindex into {dest} failed for {len(failures)} documents", retryable=False)
        return int(response.get("created", 0)) + int(response.get("updated", 0))

    def _translate(self, exc: Exception, name: str) -> BackendError | None:
        if isinstance(exc, NotFoundError) and _error_type(exc) in ("index_not_found_exception", "aliases_not_found"):
            return MissingIndexError(name)
        if isinstance(exc, UnsupportedProductError):
            return BackendError("the server is not Elasticsearch (product check failed)", retryable=False)
        if isinstance(exc, ApiError):
            status = exc.meta.status if exc.meta is not None else 0
            kind = _error_type(exc) or "error"
            return BackendError(f"Elasticsearch answered {status} {kind}", retryable=status in RETRYABLE_STATUS)
        if isinstance(exc, TransportConnectionError | ConnectionTimeout):
            tls = tls_failure(exc)
            if tls is not None:
                return BackendError(f"the TLS handshake with Elasticsearch failed ({tls})", retryable=False)
            return BackendError(f"cannot reach Elasticsearch ({type(exc).__name__})", retryable=True)
        if isinstance(exc, TransportError):
            return BackendError(f"Elasticsearch transport error ({type(exc).__name__})", retryable=True)
        return None

    async def _close_client(self, client: AsyncElasticsearch) -> None:
        await client.close()
