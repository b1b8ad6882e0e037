"""Deterministic, sanitised names for tools and arguments.

Tool names: letters, digits and underscores, at most ``max_length``
characters *including* the prefix, unique (case-insensitively) across the
whole spec and independent of which operations are selected, so adding an
operation to an allowlist never renames another tool. Names that are too long,
or that collide after sanitising, get a short hash suffix of the operation's
identity (operationId, or ``METHOD /path`` when the id is absent or shared).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence

from scopegate.openapi.errors import OpenAPIError
from scopegate.openapi.model import OperationInfo

MAX_NAME_LENGTH = 64
HASH_CHARS = 8
_INVALID = re.compile(r"[^A-Za-z0-9_]+")
_UNDERSCORES = re.compile(r"_{2,}")
_PREFIX = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def sanitize(text: str) -> str:
    """Replace runs of other characters by one ``_``; strip leading/trailing ``_``."""
    return _UNDERSCORES.sub("_", _INVALID.sub("_", text)).strip("_")


def short_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:HASH_CHARS]


def _fit(name: str, identity: str, max_length: int, force_hash: bool) -> str:
    if len(name) <= max_length and not force_hash:
        return name
    head = name[: max_length - HASH_CHARS - 1].rstrip("_")
    return f"{head}_{short_hash(identity)}"


def base_name(info: OperationInfo) -> str:
    name = sanitize(info.operation_id) if info.operation_id else ""
    if not name:
        name = sanitize(f"{info.method.lower()}_{info.path}") or "op"
    if name[0].isdigit():
        name = "op_" + name
    return name


def check_prefix(prefix: str, max_length: int = MAX_NAME_LENGTH) -> None:
    if prefix and not _PREFIX.match(prefix):
        raise OpenAPIError(f"tool name prefix {prefix!r} must match [A-Za-z_][A-Za-z0-9_]*")
    if len(prefix) > max_length - HASH_CHARS - 4:
        raise OpenAPIError(f"tool name prefix {prefix!r} is too long for {max_length}-character names")


def tool_names(infos: Sequence[OperationInfo], prefix: str = "", max_length: int = MAX_NAME_LENGTH) -> dict[str, str]:
    """``{operation key ("METHOD /path"): tool name}`` for every operation given."""
    check_prefix(prefix, max_length)
    id_counts: dict[str, int] = {}
    for info in infos:
        if info.operation_id:
            id_counts[info.operation_id] = id_counts.get(info.operation_id, 0) + 1

    def identity(info: OperationInfo) -> str:
        if info.operation_id and id_counts.get(info.operation_id) == 1:
            return info.operation_id
        return info.key

    candidates = {info.key: _fit(prefix + base_name(info), identity(info), max_length, False) for info in infos}
    groups: dict[str, list[OperationInfo]] = {}
    for info in infos:
        groups.setdefault(candidates[info.key].lower(), []).append(info)
    names = dict(candidates)
    for members in groups.values():
        if len(members) > 1:
            for info in members:
                names[info.key] = _fit(prefix + base_name(info), identity(info), max_length, True)
    seen: dict[str, str] = {}
    for key, name in names.items():
        other = seen.get(name.lower())
        if other is not None:
            raise OpenAPIError(f"tool names for {other!r} and {key!r} collide as {name!r}")
        seen[name.lower()] = key
    return names


def argument_name(original: str, max_length: int = MAX_NAME_LENGTH) -> str:
    """A model-facing argument name for a parameter or body property."""
    name = sanitize(original) or "arg"
    if name[0].isdigit():
        name = "p_" + name
    return _fit(name, original, max_length, False)


class ArgumentNamer:
    """Hands out unique argument names in call order; collisions get a location prefix, then a number."""

    def __init__(self, max_length: int = MAX_NAME_LENGTH, reserved: Iterable[str] = ()) -> None:
        self._taken: set[str] = {r.lower() for r in reserved}
        self._max = max_length

    def claim(self, original: str, location: str) -> str:
        base = argument_name(original, self._max)
        for candidate in (base, argument_name(f"{location}_{base}", self._max)):
            if candidate.lower() not in self._taken:
                self._taken.add(candidate.lower())
                return candidate
        n = 2
        while True:
            candidate = argument_name(f"{location}_{base}_{n}", self._max)
            if candidate.lower() not in self._taken:
                self._taken.add(candidate.lower())
                return candidate
            n += 1
