"""Read a config file (YAML, TOML or JSON), expand ``${ENV}`` references, validate it into :class:`AppConfig`.

Every problem is reported with the path of the bad key and, where the file format lets the
loader know it, its line (``scopegate.yaml:12: search_tools[0].filters[1].allowed: [] should be
non-empty``), all at once, so one ``scopegate check`` run shows everything to fix. Lines are exact
for YAML and JSON and best effort for TOML (table headers and ``key =`` lines).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from scopegate.config.model import AppConfig
from scopegate.documents import CONFIG_LIMITS, Document, parse, read_config_document
from scopegate.documents import format_of as _format_of
from scopegate.validation import ConfigValidationError, Problem, ProblemsFound, format_path, problems_of, with_lines

__all__ = [
    "CONFIG_LIMITS",
    "ConfigValidationError",
    "Problem",
    "expand_env",
    "format_of",
    "format_path",
    "load_config",
    "load_raw",
    "parse_config",
    "parse_config_text",
    "read_config_file",
]

MAX_CONFIG_BYTES = CONFIG_LIMITS.max_bytes
_ENV_REF = re.compile(r"\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_ADAPTER: TypeAdapter[AppConfig] = TypeAdapter(AppConfig)


def parse_config_text(text: str | bytes, fmt: str, *, source: str = "<config>") -> Any:
    """Parse ``text`` as ``yaml``, ``toml`` or ``json``; raises a ConfigError naming the line."""
    return parse(text, fmt, source, CONFIG_LIMITS).data


def format_of(path: str | os.PathLike[str]) -> str:
    return _format_of(path, what="config")


def read_config_file(path: str | os.PathLike[str]) -> Any:
    return read_config_document(path).data


# -- ${ENV} expansion --------------------------------------------------------------------
def expand_env(data: Any, environ: Mapping[str, str], *, path: tuple[str | int, ...] = ()) -> tuple[Any, list[Problem]]:
    """Replace ``${VAR}`` / ``${VAR:-default}`` in every string value (``$$`` is a literal ``$``).

    Keys are never expanded. Returns the new data and a problem per unset variable.
    """
    problems: list[Problem] = []
    if isinstance(data, str):

        def sub(match: re.Match[str]) -> str:
            if match.group(0) == "$$":
                return "$"
            name, default = match.group(1), match.group(2)
            value = environ.get(name)
            if value is None or value == "":
                if default is not None:
                    return default
                problems.append(Problem.at(path, f"environment variable {name} is not set"))
                return ""
            return value

        return _ENV_REF.sub(sub, data), problems
    if isinstance(data, Mapping):
        out: dict[Any, Any] = {}
        for key, value in data.items():
            out[key], sub_problems = expand_env(value, environ, path=(*path, str(key)))
            problems += sub_problems
        return out, problems
    if isinstance(data, list):
        items = []
        for i, value in enumerate(data):
            item, sub_problems = expand_env(value, environ, path=(*path, i))
            items.append(item)
            problems += sub_problems
        return items, problems
    return data, problems


# -- validation --------------------------------------------------------------------------
def _validate(
    document: Document, environ: Mapping[str, str] | None, base_dir: Path, *, source: str | None
) -> tuple[AppConfig, dict[str, Any]]:
    """Expand (unless ``environ`` is None), validate and type; every problem at once, with lines."""
    if not isinstance(document.data, Mapping):
        raise ConfigValidationError(document.source, [Problem.at((), "a config must be a mapping of keys")])
    expanded, problems = expand_env(document.data, environ) if environ is not None else (document.data, [])
    context = {"base_dir": base_dir, **({"source": source} if source is not None else {})}
    config: AppConfig | None = None
    try:
        config = _ADAPTER.validate_python(expanded, context=context)
    except ValidationError as exc:
        problems += problems_of(exc, AppConfig)
    except ProblemsFound as exc:  # the cross-key checks, raised once every key is valid
        problems += exc.problems
    except RecursionError:
        problems.append(Problem.at((), "nested too deeply"))
    if problems or config is None:
        located = with_lines(problems, document.line_of)
        raise ConfigValidationError(document.source, sorted(located, key=lambda p: (p.line is None, p.line or 0)))
    return config, dict(expanded)


def _load(path: str | os.PathLike[str], environ: Mapping[str, str] | None) -> tuple[AppConfig, dict[str, Any]]:
    document = read_config_document(path)
    env = os.environ if environ is None else environ
    return _validate(document, env, Path(path).resolve().parent, source=str(path))


def load_raw(path: str | os.PathLike[str], environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Parse, expand and validate a config file; returns the expanded data (raises like :func:`load_config`)."""
    return _load(path, environ)[1]


def load_config(path: str | os.PathLike[str], environ: Mapping[str, str] | None = None) -> AppConfig:
    """Read, expand ``${ENV}``, validate and type a config file (YAML, TOML or JSON)."""
    return _load(path, environ)[0]


def parse_config(
    data: Mapping[str, Any], *, base_dir: str | os.PathLike[str] = ".", source: str = "<config>"
) -> AppConfig:
    """Already-parsed data -> :class:`AppConfig` (no ``${ENV}`` expansion); raises ConfigValidationError."""
    named = None if source == "<config>" else source
    return _validate(Document(data, source), None, Path(base_dir), source=named)[0]
