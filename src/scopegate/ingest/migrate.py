"""Move an index written before documents were keyed by (tenant, id) onto the tenant-qualified key scheme.

Wave-1 indexes used the document id alone as the engine key, so a tenant
writing id ``INV-1`` replaced another tenant's ``INV-1``. Today every backend
keys documents by ``(tenant, id)`` (:func:`scopegate.scope.document_key`) and
refuses to write into an old index; searches on it keep working meanwhile.

* Embedded: :func:`migrate_folder` copies the index into a new folder keyed
  by (tenant, id); point the servers at the new folder (or swap the folders
  while they are stopped). The old folder is left as it was.
* OpenSearch / Elasticsearch: :func:`migrate_tool` reindexes the alias into
  ``<index>-v<N+1>`` with the new ``_id``s and swaps the read alias atomically
  (:meth:`EngineBackend.migrate_keys`); searches see the old index until the swap.

Stop writers (ingest jobs) while migrating: writes made during it are not copied.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from scopegate.backends.base import IngestReport


def migrate_folder(source: str | os.PathLike[str], dest: str | os.PathLike[str]) -> IngestReport:
    """Copy the embedded index ``source`` into the new folder ``dest`` with (tenant, id) keys."""
    from scopegate.backends.embedded import migrate_index

    return migrate_index(Path(source), Path(dest))


async def migrate_tool(config_path: str | os.PathLike[str], tool: str) -> dict[str, Any]:
    """Reindex the OpenSearch/Elasticsearch index of the search tool ``tool`` of a config with (tenant, id) keys."""
    from scopegate.backends.engine_common import EngineBackend
    from scopegate.config.builder import build_search_backend
    from scopegate.config.loader import load_config
    from scopegate.errors import ConfigError, UnknownNameError

    config = load_config(config_path)
    names = [t.name for t in config.search_tools]
    entry = next((t for t in config.search_tools if t.name == tool), None)
    if entry is None:
        raise UnknownNameError("search tool", tool, names)
    backend = build_search_backend(entry, config)
    try:
        if not isinstance(backend, EngineBackend):
            raise ConfigError(
                f"{tool} is on an embedded backend: migrate its folder into a new one with "
                "`scopegate migrate SOURCE DEST`, then point the config at DEST"
            )
        index = await backend.migrate_keys()
        return {"tool": tool, "index": index, "alias": backend.names.read_alias}
    finally:
        await backend.close()
