"""``scopegate serve --demo-data``: fill empty embedded indexes with the demo ticket corpus.

Only for trying the server out: the generated multi-tenant tickets (with the
planted prompt-injection ticket) go into every embedded search index that is
still empty. Indexes that hold documents are never touched.
"""

from __future__ import annotations

from collections.abc import Callable

from scopegate.backends.embedded import EmbeddedBackend
from scopegate.config.builder import ToolApp
from scopegate.demo.corpus import generate_tickets
from scopegate.errors import ConfigError


async def ensure_demo_data(app: ToolApp, *, per_tenant: int = 400, say: Callable[[str], None] | None = None) -> int:
    """Ingest the demo corpus into each empty embedded index; returns how many documents were added."""
    added = 0
    for tool_cfg, backend in zip(app.config.search_tools, app.backends, strict=True):
        if not isinstance(backend, EmbeddedBackend) or backend.path is None or backend.count_sync() > 0:
            continue
        report = await backend.ingest(generate_tickets(per_tenant=per_tenant), batch_size=5000)
        if report.indexed == 0:
            raise ConfigError(
                f"demo data does not fit search tool {tool_cfg.spec.name!r}: {report.errors[:1]} "
                "(the demo corpus has ticket_id, tenant_id, product, status, subject, body)"
            )
        added += report.indexed
        if say is not None:
            say(f"demo data: {report.indexed} tickets into {backend.path}")
    return added
