"""Read a spec document (JSON or YAML) from a path, a string or bytes.

YAML is read with ``yaml_rs`` (a Rust YAML 1.2 parser, about 10x faster than
libyaml on a 3 MB spec, with alias-expansion limits) when it is installed, else
with PyYAML's libyaml ``CSafeLoader``. Either way timestamps stay strings so
every value is JSON-serialisable. A document ``yaml_rs`` refuses (e.g. for a
duplicate key, which YAML forbids but many specs contain) is re-read with
PyYAML, which keeps the last value.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from scopegate.openapi.errors import SpecLoadError

_yaml_rs: Any
try:  # optional fast path
    import yaml_rs as _yaml_rs
except ImportError:  # pragma: no cover - depends on the environment
    _yaml_rs = None

MAX_SPEC_BYTES = 64 * 1024 * 1024

_BaseLoader: type[Any] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _SpecLoader(_BaseLoader):  # type: ignore[misc]
    """Safe loader without the timestamp resolver (dates stay strings)."""


_SpecLoader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in _BaseLoader.yaml_implicit_resolvers.items()
}


def parse_text(text: str | bytes, *, name: str = "<string>") -> Any:
    """Parse JSON (fast path) or YAML text. Raises :class:`SpecLoadError`."""
    if len(text) > MAX_SPEC_BYTES:
        raise SpecLoadError(f"{name}: spec larger than {MAX_SPEC_BYTES} bytes")
    stripped = text.lstrip()
    looks_json = stripped[:1] in ("{", b"{", "[", b"[")
    if looks_json:
        try:
            return json.loads(text)
        except (ValueError, RecursionError):
            pass  # JSON is a YAML subset for practical purposes; let YAML report the error
    if _yaml_rs is not None:
        try:
            source = text.decode("utf-8") if isinstance(text, bytes) else text
        except UnicodeDecodeError:
            raise SpecLoadError(f"{name}: not UTF-8 text") from None
        try:
            return _yaml_rs.loads(
                source, parse_datetime=False, duplicate_key_policy=_yaml_rs.DuplicateKeyPolicy.LastWins
            )
        except Exception as exc:  # any other refusal: let PyYAML decide and report
            if "alias" in str(exc):
                raise SpecLoadError(f"{name}: too many YAML alias expansions") from None
    try:
        data = yaml.load(text, Loader=_SpecLoader)
        _check_expanded_size(data, name)
        return data
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or type(exc).__name__
        raise SpecLoadError(f"{name}: not valid JSON or YAML{where}: {problem}") from None
    except RecursionError:
        raise SpecLoadError(f"{name}: document nested too deeply") from None


MAX_EXPANDED_NODES = 20_000_000


def _check_expanded_size(data: Any, name: str) -> None:
    """Refuse documents whose YAML aliases expand to a huge tree ("billion laughs")."""
    sizes: dict[int, int] = {}

    def size(node: Any) -> int:
        if not isinstance(node, dict | list):
            return 1
        known = sizes.get(id(node))
        if known is not None:
            return known
        sizes[id(node)] = 1  # provisional, breaks self-referencing aliases
        children = node.values() if isinstance(node, dict) else node
        total = 1
        for child in children:
            total += size(child) if isinstance(child, dict | list) else 1
            if total > MAX_EXPANDED_NODES:
                raise SpecLoadError(f"{name}: too many YAML alias expansions")
        sizes[id(node)] = total
        return total

    size(data)


def parse_file(path: Path) -> Any:
    """Read and parse one file. Raises :class:`SpecLoadError`."""
    try:
        size = path.stat().st_size
        if size > MAX_SPEC_BYTES:
            raise SpecLoadError(f"{path.name}: spec larger than {MAX_SPEC_BYTES} bytes")
        data = path.read_bytes()
    except OSError as exc:
        raise SpecLoadError(f"cannot read spec {path.name!r}: {exc.strerror or exc}") from None
    return parse_text(data, name=path.name)
