"""The live mapping check of a config's OpenSearch and Elasticsearch indexes (``check --deep``, ``serve``).

For every search tool on a remote backend it reads the mapping of the index or
alias the tool searches (read-only: ``GET <index>/_mapping`` and one
``size: 0`` search for the filter values) and reports each problem as one
line naming the config key and the mapping field
(:mod:`scopegate.backends.mapping_check`). Errors make ``check`` exit 1 and
``serve`` refuse to start (``--allow-index-problems`` serves with them as warnings); notes (info) are only reported.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from scopegate.backends.base import SearchBackend
from scopegate.backends.engine_common import EngineBackend
from scopegate.config.model import AppConfig, RemoteBackendConfig
from scopegate.errors import BackendError, MissingIndexError
from scopegate.validation import format_path


@dataclass
class RemoteIndexState:
    tool: str
    engine: str
    target: str
    indices: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # info: works as configured, the mapping could make it cheaper

    def report(self) -> dict[str, Any]:
        return {
            "tool": self.tool,
            "engine": self.engine,
            "index": self.target,
            "indices": self.indices,
            "errors": self.errors,
            "warnings": self.warnings,
            "notes": self.notes,
        }


async def remote_index_states(config: AppConfig, backends: list[SearchBackend]) -> list[RemoteIndexState]:
    """One state per search tool on an OpenSearch/Elasticsearch backend (``backends``: in config order)."""
    states = []
    for i, (tool, backend) in enumerate(zip(config.search_tools, backends, strict=True)):
        cfg = config.backends[tool.backend]
        if not isinstance(cfg, RemoteBackendConfig) or not isinstance(backend, EngineBackend):
            continue
        at = ("search_tools", i)
        state = RemoteIndexState(tool.name, cfg.type, backend.search_target)
        try:
            state.indices = sorted((await backend.index_mapping()).keys())
            for finding in await backend.mapping_findings():
                line = f"{format_path((*at, *finding.key))}: {finding.message} (mapping field {finding.field})"
                {"error": state.errors, "warning": state.warnings, "info": state.notes}[finding.severity].append(line)
        except MissingIndexError:
            line = f"{format_path((*at, 'index'))}: the index or alias {backend.search_target!r} does not exist "
            if tool.index_mode == "existing":
                state.errors.append(line + f"on {', '.join(cfg.url)}")
            else:  # a managed index is created by the first ingest
                state.warnings.append(line + f"yet (scopegate ingest --config CONFIG --tool {tool.name} creates it)")
        except BackendError as exc:
            state.errors.append(f"{format_path((*at, 'backend'))}: cannot read the mapping: {exc}")
        states.append(state)
    return states
