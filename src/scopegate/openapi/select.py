"""Choose which operations become tools.

Two ways, combinable:

* an **allowlist** of operationIds, or ``"METHOD /path"`` for operations
  without one. Construction fails listing *every* allowlisted entry missing
  from the spec, so a renamed operation cannot silently drop a capability;
* declarative **rules** (``include`` / ``exclude``) by method, path pattern
  and tag, e.g. ``"GET /repos/**"``, ``"tag:issues"``, ``"GET,HEAD /users/*"``.

State-changing methods (POST, PUT, PATCH, DELETE) are only selected when the
allowlist names them explicitly: an include rule never selects them. An
allowlisted operation that also matches an exclude rule is a contradiction
and an error. Deprecated operations are skipped by rules unless
``include_deprecated`` is set.
"""

from __future__ import annotations

import difflib
import re
import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property

from scopegate.openapi.errors import MissingOperationsError, SelectionError
from scopegate.openapi.model import HTTP_METHODS, OperationInfo

_METHODS = frozenset(m.upper() for m in HTTP_METHODS)


def _glob_to_regex(pattern: str) -> re.Pattern[str]:
    """``*`` matches within one path segment, ``**`` across segments; the rest is literal."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out) + r"\Z")


@dataclass(frozen=True)
class Rule:
    """Matches operations by method set, path glob and tag set (all given parts must match)."""

    methods: frozenset[str] = frozenset()
    path: str | None = None
    tags: frozenset[str] = frozenset()

    @classmethod
    def parse(cls, text: str) -> Rule:
        """Parse ``"GET,POST /repos/**"``, ``"/users/*"``, ``"tag:issues"``, ``"GET tag:a,b"``; a tag with
        spaces is quoted: ``'tag:"DNS Records for a Zone"'``."""
        methods: set[str] = set()
        tags: set[str] = set()
        path: str | None = None
        try:
            words = shlex.split(text)
        except ValueError as exc:  # an unbalanced quote
            raise SelectionError(f"rule {text!r}: {exc}") from None
        if not words:
            raise SelectionError("empty selection rule")
        for word in words:
            if word.startswith("tag:"):
                tags.update(t for t in word[4:].split(",") if t)
            elif word.startswith("/"):
                if path is not None:
                    raise SelectionError(f"rule {text!r} has two paths")
                path = word
            else:
                parts = {m.upper() for m in word.split(",") if m}
                unknown = parts - _METHODS - {"*"}
                if unknown:
                    raise SelectionError(f"rule {text!r}: unknown method(s) {', '.join(sorted(unknown))}")
                methods.update(parts - {"*"})
        return cls(frozenset(methods), path, frozenset(tags))

    @cached_property
    def _regex(self) -> re.Pattern[str] | None:
        return _glob_to_regex(self.path) if self.path is not None else None

    def matches(self, info: OperationInfo) -> bool:
        if self.methods and info.method not in self.methods:
            return False
        if self._regex is not None and not self._regex.match(info.path):
            return False
        return not (self.tags and not self.tags.intersection(info.tags))

    def __str__(self) -> str:
        parts = [",".join(sorted(self.methods))] if self.methods else []
        if self.path:
            parts.append(self.path)
        if self.tags:
            parts.append(shlex.quote("tag:" + ",".join(sorted(self.tags))))
        return " ".join(parts) or "*"


@dataclass(frozen=True)
class Selection:
    """What to select; see the module docstring for the rules."""

    allow: tuple[str, ...] = ()
    include: tuple[Rule, ...] = ()
    exclude: tuple[Rule, ...] = ()
    include_deprecated: bool = False

    @classmethod
    def build(
        cls,
        allow: Iterable[str] = (),
        include: Iterable[str | Rule] = (),
        exclude: Iterable[str | Rule] = (),
        *,
        include_deprecated: bool = False,
    ) -> Selection:
        """Convenience constructor: accepts rule strings; ``allow`` entries may be comma-separated."""
        labels: list[str] = []
        for entry in allow:
            labels.extend(_split_allow(entry))
        return cls(
            allow=tuple(dict.fromkeys(labels)),
            include=tuple(r if isinstance(r, Rule) else Rule.parse(r) for r in include),
            exclude=tuple(r if isinstance(r, Rule) else Rule.parse(r) for r in exclude),
            include_deprecated=include_deprecated,
        )


def _split_allow(entry: str) -> list[str]:
    # "GET /a,b" must not be split inside a path; split on commas only between operationIds.
    entry = entry.strip()
    if not entry:
        return []
    head = entry.split(None, 1)[0]
    if head.upper() in _METHODS and " " in entry:
        return [entry]
    return [part.strip() for part in entry.split(",") if part.strip()]


def normalise_label(label: str) -> str:
    """``"get  /x"`` -> ``"GET /x"``; operationIds are returned unchanged."""
    label = label.strip()
    head, _, rest = label.partition(" ")
    if head.upper() in _METHODS and rest.strip().startswith("/"):
        return f"{head.upper()} {rest.strip()}"
    return label


def select_operations(infos: Sequence[OperationInfo], selection: Selection) -> tuple[OperationInfo, ...]:
    """Apply ``selection`` to the operation index; spec order, no duplicates.

    Raises :class:`MissingOperationsError` listing every missing allowlisted
    entry, and :class:`SelectionError` for ambiguous or contradictory entries.
    """
    by_id: dict[str, list[OperationInfo]] = {}
    by_key: dict[str, OperationInfo] = {}
    for info in infos:
        if info.operation_id:
            by_id.setdefault(info.operation_id, []).append(info)
        by_key[info.key] = info

    chosen: set[str] = set()
    missing: list[str] = []
    problems: list[str] = []
    for raw in selection.allow:
        label = normalise_label(raw)
        found = [by_key[label]] if label in by_key else by_id.get(label, [])
        if not found:
            missing.append(label)
            continue
        if len(found) > 1:
            keys = ", ".join(f.key for f in found)
            problems.append(f"operationId {label!r} is used by several operations ({keys}); name one by METHOD /path")
            continue
        info = found[0]
        clash = [str(r) for r in selection.exclude if r.matches(info)]
        if clash:
            problems.append(f"{label!r} is allowlisted but excluded by rule(s) {', '.join(clash)}")
            continue
        chosen.add(info.key)

    if missing:
        candidates = list(by_id) + list(by_key)
        suggestions = {m: difflib.get_close_matches(m, candidates, n=3, cutoff=0.6) for m in missing}
        unreadable = [i for i in infos if i.problem]
        note = (
            f"{len(unreadable)} operation(s) could not be read, so their operationIds are unknown; "
            f"the first: {unreadable[0].key}: {unreadable[0].problem}"
            if unreadable
            else ""
        )
        raise MissingOperationsError(missing, {k: v for k, v in suggestions.items() if v}, note)
    if problems:
        raise SelectionError("invalid allowlist:\n" + "\n".join(f"  - {p}" for p in problems))

    if selection.include:
        for info in infos:
            if info.key in chosen or info.state_changing:
                continue
            if info.deprecated and not selection.include_deprecated:
                continue
            if not any(r.matches(info) for r in selection.include):
                continue
            if any(r.matches(info) for r in selection.exclude):
                continue
            chosen.add(info.key)

    return tuple(info for info in infos if info.key in chosen)


__all__ = ["Rule", "Selection", "normalise_label", "select_operations"]
