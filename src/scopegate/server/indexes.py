"""The state of a config's embedded indexes: present, documents, and drift from the config's spec.

``scopegate serve`` refuses to start on a missing or empty index (a wrong ``backends.*.path`` used to
serve an empty index with only a warning); ``scopegate check --deep`` opens every index and names how
its stored spec differs from the config's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from scopegate.config.model import AppConfig, EmbeddedBackendConfig
from scopegate.errors import ConfigError


@dataclass(frozen=True)
class IndexState:
    tool: str
    path: Path
    present: bool
    documents: int | None = None
    drift: list[str] = field(default_factory=list)

    @property
    def problem(self) -> str | None:
        if not self.present:
            return f"{self.tool}: the embedded index {self.path} does not exist"
        if self.drift:
            return f"{self.tool}: the index {self.path} differs from the config: {'; '.join(self.drift)}"
        if self.documents == 0:
            return f"{self.tool}: the embedded index {self.path} is empty"
        return None


def embedded_index_states(config: AppConfig, *, deep: bool = False) -> list[IndexState]:
    """Each embedded search tool's index: whether it exists; with ``deep``, its document count and drift
    (the index is opened read-only with its stored spec: nothing is created or written)."""
    from scopegate.backends.embedded_storage import SPEC_FILE, mapping_drift, read_stored_spec

    states = []
    for tool in config.search_tools:
        backend = config.backends[tool.backend]
        if not isinstance(backend, EmbeddedBackendConfig):
            continue
        path = backend.index_path(tool.spec.index)
        spec_file = path / SPEC_FILE
        if not ((path / "meta.json").exists() and spec_file.exists()):
            states.append(IndexState(tool.spec.name, path, present=False))
            continue
        if not deep:
            states.append(IndexState(tool.spec.name, path, present=True))
            continue
        stored = read_stored_spec(spec_file)
        states.append(IndexState(tool.spec.name, path, True, _count(path), mapping_drift(stored, tool.spec)))
    return states


def _count(path: Path) -> int:
    import tantivy

    from scopegate.backends.embedded_storage import reading_folder

    try:
        # Through a read-only view when the folder cannot be written: a server may read a read-only mount.
        with reading_folder(path) as where:
            index = tantivy.Index.open(str(where))
            return int(index.searcher().num_docs)
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot open the embedded index at {path}: {exc}") from exc


def refuse_unready(config: AppConfig, *, config_path: str) -> None:
    """ConfigError naming every embedded index that is missing, empty or built with another mapping."""
    # A changed mapping is refused when the backend opens (naming the drift); here: what would serve nothing.
    unready = [s for s in embedded_index_states(config, deep=True) if not s.present or s.documents == 0]
    problems = [p for p in (s.problem for s in unready) if p]
    if problems:
        raise ConfigError(
            "; ".join(problems)
            + f". Fill it with `scopegate ingest FILE --config {config_path} --tool {unready[0].tool}` "
            "(or serve --demo-data for the demo corpus); --allow-empty serves anyway"
        )
