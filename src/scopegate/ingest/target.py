"""Which spec an ingest uses, and where it writes: one source of truth for the spec.

* ``--config FILE --tool NAME``: the search tool's spec from the config ``scopegate serve`` reads, and
  (for an embedded backend) the index folder it serves;
* ``--spec FILE``: a spec file (the keys of a ``search_tools`` entry, without ``backend``);
* neither: the spec stored with an existing index (``scopegate-spec.json``), so a re-ingest keeps the
  index's own spec; only a new folder without either gets the demo ticket spec.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from scopegate.errors import ConfigError
from scopegate.search.spec import SearchSpec

SpecOrigin = Literal["config", "spec", "stored", "demo"]


@dataclass(frozen=True)
class IngestTarget:
    spec: SearchSpec
    index: Path
    origin: SpecOrigin


def config_tool(config_path: str | os.PathLike[str], tool: str | None) -> tuple[SearchSpec, Path | None]:
    """The spec of the search tool ``tool`` (may be omitted when the config has one) and its embedded index
    folder (None for OpenSearch/Elasticsearch backends)."""
    from scopegate.config.loader import load_config
    from scopegate.config.model import EmbeddedBackendConfig

    config = load_config(config_path)
    names = [t.spec.name for t in config.search_tools]
    if not names:
        raise ConfigError(f"{config_path} has no search_tools to ingest into")
    if tool is None:
        if len(names) > 1:
            raise ConfigError(f"{config_path} has several search tools; name one with --tool ({', '.join(names)})")
        tool = names[0]
    chosen = next((t for t in config.search_tools if t.spec.name == tool), None)
    if chosen is None:
        raise ConfigError(f"{config_path} has no search tool {tool!r}; its search tools are: {', '.join(names)}")
    backend = config.backends[chosen.backend]
    index = backend.index_path(chosen.spec.index) if isinstance(backend, EmbeddedBackendConfig) else None
    return chosen.spec, index


def stored_spec(index: str | os.PathLike[str]) -> SearchSpec | None:
    """The spec stored beside an existing embedded index, or None when the folder holds none."""
    from scopegate.backends.embedded_storage import SPEC_FILE, read_stored_spec

    path = Path(index) / SPEC_FILE
    return read_stored_spec(path) if path.exists() else None


def resolve_target(
    index: str | os.PathLike[str] | None,
    *,
    spec_file: str | os.PathLike[str] | None = None,
    config: str | os.PathLike[str] | None = None,
    tool: str | None = None,
    default_spec: SearchSpec | None = None,
) -> IngestTarget:
    """The spec and index folder of an ingest (see the module docstring); ConfigError when they do not fit.
    ``default_spec`` is for a new folder given no spec (the command line passes the demo's)."""
    if spec_file is not None and config is not None:
        raise ConfigError("give --spec or --config, not both")
    if tool is not None and config is None:
        raise ConfigError("--tool names a search tool of --config FILE")
    if config is not None:
        spec, served = config_tool(config, tool)
        where = index if index is not None else served
        if where is None:
            raise ConfigError(
                f"the tool {spec.name!r} is served from an OpenSearch/Elasticsearch backend; "
                "scopegate ingest writes embedded indexes: give an INDEX folder"
            )
        return IngestTarget(spec, Path(where), "config")
    if index is None:
        raise ConfigError("give an INDEX folder (or --config FILE, whose embedded backend says where)")
    if spec_file is not None:
        from scopegate.search.spec_file import load_spec_file

        return IngestTarget(load_spec_file(spec_file), Path(index), "spec")
    stored = stored_spec(index)
    if stored is not None:
        return IngestTarget(stored, Path(index), "stored")
    if default_spec is None:
        raise ConfigError(f"{index} holds no index yet: give its spec (--spec FILE, or --config FILE --tool NAME)")
    return IngestTarget(default_spec, Path(index), "demo")
