"""OpenSearch backend on ``opensearch-py``'s ``AsyncOpenSearch``.

Every request carries a client-side timeout (the spec's ``client_timeout_s``
for searches and fetches). With one host the client never retries: a dead node
costs one bounded attempt, and the next call after the node is back simply
succeeds. With several hosts a refused connection or a 502/503/504 (a node
still joining the cluster answers 503) marks that host dead (left out for
``dead_timeout_s``, doubling up to 8x while it stays down) and the call is
retried once on another; timeouts are never retried, and the client never sniffs.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any

from opensearchpy import AsyncOpenSearch
from opensearchpy.exceptions import (
    ConnectionError as OSConnectionError,
)
from opensearchpy.exceptions import (
    NotFoundError,
    OpenSearchException,
    TransportError,
)

from scopegate.backends import dsl
from scopegate.backends.engine_common import ADMIN_TIMEOUT_S, FAILOVER_STATUS, EngineBackend
from scopegate.backends.outage import tls_failure
from scopegate.errors import BackendError, MissingIndexError

RETRYABLE_STATUS = frozenset({408, 429, 500, 502, 503, 504})


def error_type(exc: TransportError) -> str:
    info = exc.info if isinstance(exc.info, Mapping) else {}
    error = info.get("error")
    return str(error.get("type", "")) if isinstance(error, Mapping) else ""


class OpenSearchBackend(EngineBackend[AsyncOpenSearch]):
    """Searches ``<spec.index>-read``; writes go to the index behind it (see :mod:`engine_common`)."""

    engine = "opensearch"

    def _connect(
        self, hosts: list[str], timeout_s: float, *, failover_retries: int, dead_timeout_s: float, **client_options: Any
    ) -> AsyncOpenSearch:
        return AsyncOpenSearch(
            hosts=hosts,
            timeout=timeout_s,
            max_retries=failover_retries,
            retry_on_timeout=False,
            retry_on_status=FAILOVER_STATUS if failover_retries else (),
            dead_timeout=dead_timeout_s,
            timeout_cutoff=3,
            **client_options,
        )

    # -- engine calls -----------------------------------------------------
    async def _search(
        self, index: str, body: dict[str, Any], timeout_s: float, routing: str | None = None
    ) -> Mapping[str, Any]:
        params: dict[str, Any] = {"request_timeout": timeout_s}
        if routing is not None:
            params["routing"] = routing
        response: Mapping[str, Any] = await self.search_client.search(index=index, body=body, params=params)
        return response

    async def _bulk(self, ndjson: str, timeout_s: float) -> Mapping[str, Any]:
        response: Mapping[str, Any] = await self.client.bulk(body=ndjson, params={"request_timeout": timeout_s})
        return response

    async def _refresh(self, index: str) -> None:
        await self.client.indices.refresh(index=index, params={"request_timeout": ADMIN_TIMEOUT_S})

    async def _shard_stats(self, index: str) -> Mapping[str, Any]:
        response: Mapping[str, Any] = await self.search_client.indices.stats(
            index=index,
            metric="refresh",
            params={"level": "shards", "filter_path": dsl.STATS_FILTER, "request_timeout": self.spec.client_timeout_s},
        )
        return response

    async def _put_template(self, name: str, body: dict[str, Any]) -> None:
        await self.client.indices.put_index_template(name=name, body=body, params={"request_timeout": ADMIN_TIMEOUT_S})

    async def _create_index(self, name: str, body: dict[str, Any]) -> None:
        await self.client.indices.create(
            index=name, body=body, params={"request_timeout": ADMIN_TIMEOUT_S, "wait_for_active_shards": "1"}
        )

    async def _alias_targets(self, alias: str) -> list[str]:
        try:
            response = await self.search_client.indices.get_alias(
                name=alias, params={"request_timeout": ADMIN_TIMEOUT_S}
            )
        except NotFoundError:
            return []
        return sorted(response.keys())

    async def _aliases_of(self, pattern: str) -> Mapping[str, Any]:
        try:
            response: Mapping[str, Any] = await self.client.indices.get_alias(
                index=pattern, params={"request_timeout": ADMIN_TIMEOUT_S}
            )
        except NotFoundError:
            return {}
        return response

    async def _health(self, index: str) -> Mapping[str, Any]:
        response: Mapping[str, Any] = await self.client.cluster.health(
            index=index, params={"request_timeout": ADMIN_TIMEOUT_S}
        )
        return response

    async def _index_names(self, pattern: str) -> list[str]:
        response = await self.client.indices.get(
            index=pattern,
            params={
                "request_timeout": ADMIN_TIMEOUT_S,
                "ignore_unavailable": "true",
                "allow_no_indices": "true",
                "filter_path": "*.settings.index.uuid",
            },
        )
        return sorted(response.keys())

    async def _update_aliases(self, body: dict[str, Any]) -> None:
        await self.client.indices.update_aliases(body=body, params={"request_timeout": ADMIN_TIMEOUT_S})

    async def _delete_indices(self, pattern: str) -> None:
        await self.client.indices.delete(
            index=pattern,
            params={"request_timeout": ADMIN_TIMEOUT_S, "ignore_unavailable": "true", "allow_no_indices": "true"},
        )

    async def _delete_template(self, name: str) -> None:
        with contextlib.suppress(NotFoundError):
            await self.client.indices.delete_index_template(name=name, params={"request_timeout": ADMIN_TIMEOUT_S})

    async def _count(self, index: str, body: dict[str, Any], routing: str | None = None) -> Mapping[str, Any]:
        params: dict[str, Any] = {"request_timeout": ADMIN_TIMEOUT_S}
        if routing is not None:
            params["routing"] = routing
        response: Mapping[str, Any] = await self.search_client.count(index=index, body=body, params=params)
        return response

    async def _mapping(self, index: str) -> Mapping[str, Any]:
        response: Mapping[str, Any] = await self.client.indices.get_mapping(
            index=index, params={"request_timeout": ADMIN_TIMEOUT_S}
        )
        return response

    async def _reindex(self, source: str, dest: str) -> int:
        response = await self.client.reindex(
            body={"source": {"index": source}, "dest": {"index": dest}},
            params={"request_timeout": 600, "refresh": "true", "wait_for_completion": "true"},
        )
        failures = response.get("failures") or []
        if failures:
            raise BackendError(f"reindex into {dest} failed for {len(failures)} documents", retryable=False)
        return int(response.get("created", 0)) + int(response.get("updated", 0))

    def _translate(self, exc: Exception, name: str) -> BackendError | None:
        if isinstance(exc, NotFoundError) and error_type(exc) in ("index_not_found_exception", "aliases_not_found"):
            return MissingIndexError(name)
        if isinstance(exc, OSConnectionError):  # includes ConnectionTimeout
            tls = tls_failure(exc)
            if tls is not None:
                return BackendError(f"the TLS handshake with OpenSearch failed ({tls})", retryable=False)
            return BackendError(f"cannot reach OpenSearch ({type(exc).__name__})", retryable=True)
        if isinstance(exc, TransportError):
            status = exc.status_code if isinstance(exc.status_code, int) else 0
            kind = error_type(exc) or "error"
            return BackendError(f"OpenSearch answered {status} {kind}", retryable=status in RETRYABLE_STATUS)
        if isinstance(exc, OpenSearchException):
            return BackendError(f"OpenSearch client error ({type(exc).__name__})", retryable=False)
        return None

    async def _close_client(self, client: AsyncOpenSearch) -> None:
        await client.close()

    # -- extras ------------------------------------------------------------
    async def ping(self) -> bool:
        try:
            return bool(await self.search_client.ping(params={"request_timeout": self.spec.client_timeout_s}))
        except OpenSearchException:
            return False
