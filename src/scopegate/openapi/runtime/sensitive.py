"""Sensitive argument values (passwords and the like): found from the schemas, masked. Pure.

A value the user sets through an operation (a ``root_pass`` body field) is
fine to send to the API, but it must never reach the call log, a confirmation
prompt, an error or a debug log. A value is sensitive when

* its schema says ``format: password`` or ``writeOnly: true`` (at any depth of
  a parameter or body schema, through ``allOf``/``anyOf``/``oneOf``, array
  items and map values);
* the operation's policy names it (``OperationPolicy.sensitive``: argument
  names or dotted paths into them, ``"server.root_pass"``, ``*`` for any key);
* its field name is one of the toolset's ``sensitive_fields`` (any depth,
  case-insensitive);
* translation marked the argument ``sensitive`` (a name that looks like a
  secret, e.g. a session-token header no security scheme covers).

:meth:`SensitiveFields.mask` replaces those values in a copy of the arguments;
:meth:`SensitiveFields.values` lists them, so the call's redactor removes them
from anything the API echoes and from library debug logs.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from scopegate.openapi.model import ToolBinding

MASK = "[redacted]"
ANY = "*"
MAX_SCHEMA_DEPTH = 16
DEFAULT_SENSITIVE_FIELDS = (
    "password",
    "passwd",
    "passphrase",
    "root_pass",
    "root_password",
    "secret",
    "client_secret",
    "private_key",
)

Path = tuple[str, ...]


def schema_paths(schema: Any, prefix: Path = ()) -> set[Path]:
    """Paths (``*`` for any item or map key) under ``schema`` whose values are sensitive."""
    out: set[Path] = set()
    _walk(schema, prefix, out, 0, set())
    return out


def _walk(schema: Any, prefix: Path, out: set[Path], depth: int, seen: set[int]) -> None:
    if not isinstance(schema, Mapping) or depth > MAX_SCHEMA_DEPTH or id(schema) in seen:
        return
    if schema.get("format") == "password" or schema.get("writeOnly") is True:
        out.add(prefix)
        return
    seen = seen | {id(schema)}  # per path: a recursive schema stops where it repeats
    for key in ("allOf", "anyOf", "oneOf"):
        for sub in schema.get(key) or ():
            _walk(sub, prefix, out, depth + 1, seen)
    props = schema.get("properties")
    if isinstance(props, Mapping):
        for name, sub in props.items():
            _walk(sub, (*prefix, str(name)), out, depth + 1, seen)
    for key in ("items", "additionalProperties"):
        _walk(schema.get(key), (*prefix, ANY), out, depth + 1, seen)


@dataclass(frozen=True)
class SensitiveFields:
    """The sensitive parts of one operation's arguments."""

    paths: frozenset[Path] = frozenset()
    names: frozenset[str] = frozenset()  # lower-cased field names, sensitive at any depth

    @classmethod
    def build(
        cls, binding: ToolBinding, configured: Iterable[str] = (), names: Collection[str] = DEFAULT_SENSITIVE_FIELDS
    ) -> SensitiveFields:
        paths: set[Path] = {tuple(p.split(".")) for p in configured if p}
        params = binding.parameters_by_key
        body = binding.body_schema or {}
        body_props = body.get("properties") if isinstance(body, Mapping) else None
        for am in binding.arguments:
            if am.sensitive:  # translation marked it (a secret-looking name no security scheme covers)
                paths.add((am.argument,))
                continue
            schema: Any = None
            if am.location == "body":
                schema = body
            elif am.location == "body_property":
                schema = (body_props or {}).get(am.original_name or "")
            else:
                param = params.get((am.location, am.original_name or ""))
                schema = param.schema if param is not None else None
            paths |= schema_paths(schema, (am.argument,))
        return cls(frozenset(paths), frozenset(n.lower() for n in names))

    @property
    def empty(self) -> bool:
        return not (self.paths or self.names)

    def mask(self, args: Mapping[str, Any]) -> dict[str, Any]:
        """A copy of ``args`` with every sensitive value replaced by ``[redacted]``."""
        return {str(k): self._mask(v, (str(k),)) for k, v in args.items()}

    def values(self, args: Mapping[str, Any]) -> tuple[str, ...]:
        """The text of every sensitive value in ``args`` (strings and numbers, at any depth)."""
        found: list[str] = []
        for k, v in args.items():
            self._collect(v, (str(k),), found)
        return tuple(dict.fromkeys(found))

    # ------------------------------------------------------------ internals
    def _hit(self, path: Path) -> bool:
        if path[-1].lower() in self.names:
            return True
        return any(len(p) == len(path) and all(a in (b, ANY) for a, b in zip(p, path, strict=True)) for p in self.paths)

    def _below(self, path: Path) -> bool:
        """Could anything under ``path`` be sensitive?"""
        if self.names:
            return True
        n = len(path)
        return any(len(p) > n and all(a in (b, ANY) for a, b in zip(p[:n], path, strict=True)) for p in self.paths)

    def _mask(self, value: Any, path: Path, depth: int = 0) -> Any:
        if self._hit(path):
            return MASK
        if not self._below(path):
            return value
        if depth > MAX_SCHEMA_DEPTH:
            return MASK  # too deep to tell: hidden rather than risked
        if isinstance(value, Mapping):
            return {str(k): self._mask(v, (*path, str(k)), depth + 1) for k, v in value.items()}
        if isinstance(value, list):
            return [self._mask(v, (*path, str(i)), depth + 1) for i, v in enumerate(value)]
        return value

    def _collect(self, value: Any, path: Path, found: list[str], depth: int = 0, hit: bool = False) -> None:
        if depth > MAX_SCHEMA_DEPTH:
            return
        hit = hit or self._hit(path)
        if not hit and not self._below(path):
            return
        if isinstance(value, Mapping):
            for k, v in value.items():
                self._collect(v, (*path, str(k)), found, depth + 1, hit)
        elif isinstance(value, list):
            for i, v in enumerate(value):
                self._collect(v, (*path, str(i)), found, depth + 1, hit)
        elif hit and isinstance(value, str | int | float) and not isinstance(value, bool):
            found.append(str(value))
