"""Read a config file (YAML, TOML or JSON), expand ``${ENV}`` references, validate it.

Every problem is reported with the path of the bad key
(``search_tools[0].filters[1].allowed: [] should be non-empty``), all at once,
so one ``scopegate check`` run shows everything to fix.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

from scopegate.config.schema import CONFIG_SCHEMA
from scopegate.errors import ConfigError

MAX_CONFIG_BYTES = 4_000_000
MAX_PROBLEMS = 50
_ENV_REF = re.compile(r"\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a config: where (``a.b[0].c``) and what."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


class ConfigValidationError(ConfigError):
    """A config file is invalid; ``problems`` lists every problem found, each with its key path."""

    def __init__(self, source: str, problems: Sequence[Problem]) -> None:
        self.source = source
        self.problems = list(problems)
        shown = self.problems[:MAX_PROBLEMS]
        more = len(self.problems) - len(shown)
        lines = [f"{source}: {len(self.problems)} problem(s)"] + [f"  - {p}" for p in shown]
        if more > 0:
            lines.append(f"  ... and {more} more")
        super().__init__("\n".join(lines))


def format_path(parts: Iterable[str | int]) -> str:
    """``["search_tools", 0, "filters"]`` -> ``search_tools[0].filters``; empty -> ``(top level)``."""
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out or "(top level)"


# -- parsing ------------------------------------------------------------------------------
class _UniqueKeyLoader(yaml.SafeLoader):
    """SafeLoader that refuses duplicate keys (PyYAML silently keeps the last one)."""


def _construct_mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    seen: set[Any] = set()
    for key_node, _value in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(None, None, f"duplicate key {key!r}", key_node.start_mark)
        seen.add(key)
    return dict(loader.construct_mapping(node, deep=deep))


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _json_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {key!r}")
        out[key] = value
    return out


def parse_config_text(text: str, fmt: str, *, source: str = "<config>") -> Any:
    """Parse ``text`` as ``yaml``, ``toml`` or ``json``; raises ConfigError naming the line."""
    try:
        if fmt == "toml":
            return tomllib.loads(text)
        if fmt == "json":
            return json.loads(text, object_pairs_hook=_json_pairs)
        return yaml.load(text, Loader=_UniqueKeyLoader)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{source}: not valid TOML: {exc}") from exc
    except yaml.YAMLError as exc:
        raise ConfigError(f"{source}: not valid YAML: {exc}") from exc
    except ValueError as exc:
        raise ConfigError(f"{source}: not valid JSON: {exc}") from exc


def format_of(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix == ".toml":
        return "toml"
    if suffix == ".json":
        return "json"
    if suffix in (".yaml", ".yml"):
        return "yaml"
    raise ConfigError(f"{path}: unknown config format {suffix!r} (use .yaml, .yml, .toml or .json)")


def read_config_file(path: str | os.PathLike[str]) -> Any:
    p = Path(path)
    try:
        size = p.stat().st_size
    except OSError as exc:
        raise ConfigError(f"cannot read config {p}: {exc.strerror or exc}") from exc
    if size > MAX_CONFIG_BYTES:
        raise ConfigError(f"{p}: config is larger than {MAX_CONFIG_BYTES} bytes")
    fmt = format_of(p)
    try:
        text = p.read_text("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read config {p}: {exc}") from exc
    return parse_config_text(text, fmt, source=str(p))


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
                problems.append(Problem(format_path(path), f"environment variable {name} is not set"))
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


# -- schema validation -------------------------------------------------------------------
_VALIDATOR = Draft202012Validator(CONFIG_SCHEMA)


def _allowed_keys(schema: Any) -> list[str]:
    props = schema.get("properties") if isinstance(schema, Mapping) else None
    return sorted(props) if isinstance(props, Mapping) else []


def _describe(error: ValidationError) -> Problem:
    path = format_path(error.absolute_path)
    if error.validator == "additionalProperties" and isinstance(error.instance, Mapping):
        allowed = _allowed_keys(error.schema)
        extra = sorted(str(k) for k in error.instance if k not in allowed)
        hints = []
        for key in extra:
            close = difflib.get_close_matches(key, allowed, n=1)
            hints.append(f"{key!r} (did you mean {close[0]!r}?)" if close else repr(key))
        message = f"unexpected key {', '.join(hints)}; allowed: {', '.join(allowed)}"
        return Problem(path, message)
    if error.validator == "required":
        return Problem(path, error.message.replace("is a required property", "is required"))
    if error.validator in ("anyOf", "oneOf") and error.context:
        # Report the branch that got furthest (deepest path) rather than "valid under none".
        best = max(error.context, key=lambda e: (len(e.absolute_path), -len(e.message)))
        return _describe(best)
    if error.validator == "enum":
        allowed = error.validator_value if isinstance(error.validator_value, list) else []
        return Problem(path, f"{error.instance!r} is not one of {', '.join(repr(v) for v in allowed)}")
    return Problem(path, error.message)


def schema_problems(data: Any) -> list[Problem]:
    """Every schema violation of ``data``, sorted by key path."""
    errors = sorted(_VALIDATOR.iter_errors(data), key=lambda e: [str(p) for p in e.absolute_path])
    seen: set[tuple[str, str]] = set()
    out: list[Problem] = []
    for error in errors:
        problem = _describe(error)
        if (problem.path, problem.message) not in seen:
            seen.add((problem.path, problem.message))
            out.append(problem)
    return out


def load_raw(path: str | os.PathLike[str], environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Parse, expand and schema-validate a config file; raises :class:`ConfigValidationError`."""
    source = str(path)
    data = read_config_file(path)
    if not isinstance(data, Mapping):
        raise ConfigValidationError(source, [Problem("(top level)", "a config must be a mapping of keys")])
    expanded, problems = expand_env(data, os.environ if environ is None else environ)
    problems += schema_problems(expanded)
    if problems:
        raise ConfigValidationError(source, problems)
    return dict(expanded)
