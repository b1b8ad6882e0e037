"""Prometheus counters of the identity room: JWKS fetches, introspection requests, token exchanges.

A collector reading the counters the identity objects keep, so the provider's
load is visible on ``/metrics`` (``scopegate_identity_jwks_fetches_total``,
``..._jwks_refreshes_refused_total`` for unknown ``kid``\\ s answered from the
cache, ``..._introspections_total``, ``..._token_exchanges_total`` by outcome).
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import CounterMetricFamily
from prometheus_client.registry import Collector

from scopegate.config.identity import IdentityServices


class IdentityCollector(Collector):
    def __init__(self, identity: IdentityServices, *, namespace: str = "scopegate") -> None:
        self.identity = identity
        self.prefix = f"{namespace}_identity"

    def collect(self) -> Iterator[CounterMetricFamily]:
        keys = self.identity.keys
        if keys is not None:
            yield CounterMetricFamily(f"{self.prefix}_jwks_fetches", "JWKS fetches", value=keys.stats.fetches)
            yield CounterMetricFamily(
                f"{self.prefix}_jwks_fetch_failures", "JWKS fetches that failed", value=keys.stats.failures
            )
            yield CounterMetricFamily(
                f"{self.prefix}_jwks_refreshes_refused",
                "Unknown key ids answered from the cache (refresh rate limit)",
                value=keys.stats.refreshes_refused,
            )
        if self.identity.introspector is not None:
            yield CounterMetricFamily(
                f"{self.prefix}_introspections", "Introspection requests", value=self.identity.introspector.requests
            )
        if self.identity.exchangers:
            family = CounterMetricFamily(
                f"{self.prefix}_token_exchanges", "Token exchanges by outcome", labels=["outcome"]
            )
            stats = [e.stats for e in self.identity.exchangers]
            family.add_metric(["exchanged"], sum(s.exchanges for s in stats))
            family.add_metric(["cache_hit"], sum(s.cache_hits for s in stats))
            family.add_metric(["refused"], sum(s.refused for s in stats))
            family.add_metric(["unavailable"], sum(s.unavailable for s in stats))
            yield family
