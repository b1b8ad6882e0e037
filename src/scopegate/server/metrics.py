"""Server-level Prometheus metrics and the ``/metrics`` exposition.

The guard owns the tool metrics (calls, errors, latency, cache, zero results);
the server adds what only it sees: refused bearer tokens by reason and the
outcome of confirmation questions. ``/metrics`` serves both registries.
"""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry, Counter, generate_latest

from scopegate.server.mcp_server import McpEvents

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class ServerMetrics(McpEvents):
    def __init__(self, registry: CollectorRegistry | None = None, *, namespace: str = "scopegate") -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        self.auth_failures = Counter(
            f"{namespace}_mcp_auth_failures", "Bearer tokens refused by reason", ["reason"], registry=self.registry
        )
        self.confirmations = Counter(
            f"{namespace}_mcp_confirmations", "Confirmation questions by outcome", ["outcome"], registry=self.registry
        )

    def auth_failure(self, reason: str) -> None:
        self.auth_failures.labels(reason).inc()

    def confirmation(self, outcome: str) -> None:
        self.confirmations.labels(outcome).inc()


def exposition(server: ServerMetrics, guard: Any) -> bytes:
    """The text format of the server's registry, then the guard's (when it keeps metrics)."""
    body = generate_latest(server.registry)
    metrics = getattr(guard, "metrics", None) if guard is not None else None
    if metrics is not None:
        body += metrics.exposition()
    return body
