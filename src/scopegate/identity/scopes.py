"""Which OAuth scopes a tool needs, and whether a token's scopes are enough (pure).

Rules, from the config's ``auth.scopes``:

* ``required``: needed for any access at all (the ``scope`` of a 401 challenge);
* ``tools``: by tool name or tool family (``search``, ``fetch``, ``openapi``); a
  name wins over a family;
* otherwise ``read`` for read-only tools and ``write`` for tools that change state;
* ``implies``: a broader scope grants narrower ones (``orders:admin`` ->
  ``orders:write`` -> ``orders:read``), followed transitively, as the MCP
  authorization spec (2026-07-28) requires servers to account for.

A tool's full requirement is ``required`` plus its own scopes; a token may call
it when the closure of its scopes under ``implies`` contains all of them.

Tools of a family in :data:`PER_ITEM_FAMILIES` (the OpenAPI catalog's find,
describe and call tools) need only ``required`` plus a rule naming them: they
check each operation's own scopes inside, through ``CallContext.may_use``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

# Families whose tools check the scopes of each operation they reach, themselves.
PER_ITEM_FAMILIES = frozenset({"catalog"})


@dataclass(frozen=True)
class ToolScopes:
    required: frozenset[str] = frozenset()
    read: frozenset[str] = frozenset()
    write: frozenset[str] = frozenset()
    tools: Mapping[str, frozenset[str]] = field(default_factory=dict)
    implies: Mapping[str, frozenset[str]] = field(default_factory=dict)

    @classmethod
    def of(
        cls,
        *,
        required: Iterable[str] = (),
        read: Iterable[str] = (),
        write: Iterable[str] = (),
        tools: Mapping[str, Iterable[str]] | None = None,
        implies: Mapping[str, Iterable[str]] | None = None,
    ) -> ToolScopes:
        return cls(
            required=frozenset(required),
            read=frozenset(read),
            write=frozenset(write),
            tools={k: frozenset(v) for k, v in (tools or {}).items()},
            implies={k: frozenset(v) for k, v in (implies or {}).items()},
        )

    @property
    def enabled(self) -> bool:
        return bool(self.required or self.read or self.write or self.tools)

    def needed(self, name: str, family: str, read_only: bool) -> frozenset[str]:
        """Every scope a call of this tool needs."""
        own = self.tools.get(name)
        if own is None and family in PER_ITEM_FAMILIES:
            own = frozenset()
        if own is None:
            own = self.tools.get(family)
        if own is None:
            own = self.read if read_only else self.write
        return self.required | own

    def granted(self, scopes: Iterable[str]) -> frozenset[str]:
        """``scopes`` and everything they imply."""
        out: set[str] = set()
        todo = list(scopes)
        while todo:
            scope = todo.pop()
            if scope not in out:
                out.add(scope)
                todo.extend(self.implies.get(scope, ()))
        return frozenset(out)

    def missing(self, name: str, family: str, read_only: bool, scopes: Iterable[str]) -> tuple[str, ...]:
        """The needed scopes ``scopes`` do not grant, sorted (empty: the call may go ahead)."""
        return tuple(sorted(self.needed(name, family, read_only) - self.granted(scopes)))

    def checker(self, scopes: Iterable[str]) -> Callable[[str, str, bool], bool]:
        """``may_use(name, family, read_only)`` for a token granting ``scopes`` (a ``CallContext.may_use``)."""
        granted = self.granted(scopes)

        def may_use(name: str, family: str, read_only: bool) -> bool:
            return self.needed(name, family, read_only) <= granted

        return may_use

    def supported(self) -> list[str]:
        """Every scope the rules mention (for ``scopes_supported``), sorted."""
        names = set(self.required) | self.read | self.write | set(self.implies)
        for values in (*self.tools.values(), *self.implies.values()):
            names |= values
        return sorted(names)
