"""Read a spec document (JSON or YAML) from a path, a string or bytes.

Both go through :mod:`scopegate.documents`, the one parser path of scopegate: bounded size,
strict UTF-8, safe YAML (1.2 core schema: dates and ``yes``/``no`` stay strings, so every value is
JSON-serialisable), bounded alias expansion and nesting, and duplicate keys refused with the lines
of both occurrences (none of the 3,412 YAML files under ../shared/data/openapi has one, and a
duplicate means the author wrote two definitions of which only one would survive). A failure is
a :class:`SpecLoadError` naming the file and line; nothing here can end the process.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from scopegate.documents import DocumentError, Limits, parse_json, parse_yaml, read_bytes
from scopegate.openapi.errors import SpecLoadError

# The largest shared spec is 3.8 MB with 160k nodes, 28 levels deep and a 27,530-character scalar.
SPEC_LIMITS = Limits(max_bytes=64 * 1024 * 1024, max_depth=200, max_nodes=5_000_000, max_scalar_chars=1_000_000)
MAX_SPEC_BYTES = SPEC_LIMITS.max_bytes


def parse_text(text: str | bytes, *, name: str = "<string>") -> Any:
    """Parse JSON (fast path) or YAML text. Raises :class:`SpecLoadError`."""
    try:
        stripped = text.lstrip()
        if stripped[:1] in ("{", b"{", "[", b"["):
            try:
                return parse_json(text, name, SPEC_LIMITS, label="JSON or YAML").data
            except DocumentError as exc:
                if "not valid" not in exc.problem:
                    raise
                # JSON is YAML for practical purposes (comments, trailing commas): let YAML decide.
        return parse_yaml(text, name, SPEC_LIMITS, label="JSON or YAML").data
    except DocumentError as exc:
        raise SpecLoadError(str(exc)) from exc


def parse_file(path: Path) -> Any:
    """Read and parse one file. Raises :class:`SpecLoadError`."""
    try:
        data = read_bytes(path, SPEC_LIMITS, what="spec", name=repr(path.name))
    except DocumentError as exc:
        raise SpecLoadError(str(exc)) from exc
    return parse_text(data, name=path.name)
