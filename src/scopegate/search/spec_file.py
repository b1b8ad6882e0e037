"""A search spec in a file (``scopegate ingest|spec --spec FILE``), and what it shows a model.

The file is JSON, YAML or TOML with the keys of :class:`scopegate.search.spec.SearchSpec`: the keys
of one ``search_tools`` entry of a config, without ``backend``/``fetch``/``aggregate`` (the same form as
``scopegate-spec.json`` beside an embedded index). A config file is refused with a pointer to
``--config FILE --tool NAME``. It is read by the
config loader, so the same parser, size limit and duplicate-key rules apply, and every
problem names its key and line.
"""

from __future__ import annotations

import os
from typing import Any

from scopegate.errors import ConfigError
from scopegate.search.spec import SearchSpec, spec_to_dict
from scopegate.validation import ConfigValidationError, with_lines


def load_spec_file(path: str | os.PathLike[str]) -> SearchSpec:
    """The spec in ``path``; every problem is a ConfigError naming the file (and the line of its key)."""
    from scopegate.documents import read_config_document

    document = read_config_document(path)
    if not isinstance(document.data, dict):
        raise ConfigError(f"{path}: a search spec must be a mapping of keys, not {type(document.data).__name__}")
    if {"search_tools", "backends"} & set(document.data):
        raise ConfigError(
            f"{path} is a scopegate config (what `scopegate serve` reads), not a spec file: "
            f"use --config {path} --tool NAME"
        )
    try:
        return SearchSpec.from_dict(document.data, source=str(path))
    except ConfigValidationError as exc:
        raise ConfigValidationError(exc.source, with_lines(exc.problems, document.line_of)) from None


def spec_declarations(spec: SearchSpec) -> dict[str, Any]:
    """The JSON schemas the model sees for the search and fetch tools, and the normalised spec."""
    return {"search": spec.json_schema(), "fetch": spec.fetch_json_schema(), "spec": spec_to_dict(spec)}
