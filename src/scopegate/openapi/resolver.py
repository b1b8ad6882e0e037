"""Schema ``$ref`` resolution and normalisation to JSON Schema 2020-12, memoised.

Every reference target is resolved **once** per document and then shared (the
result is a DAG of read-only dicts). A reference met again while its own
target is still being resolved is a recursion: it becomes a back-edge
``{"$ref": "#/$defs/<Name>"}`` and the target's resolved form is kept as a
definition. A top-level result that uses definitions carries them under
``$defs``, so it is a self-contained 2020-12 schema that any validator reads.
Because a back-edge names a definition instead of depending on what is being
resolved around it, every memoised result is valid in any context: shared
and mutually recursive schemas (an "expandable field" web, where dozens of
schemas point at each other through ``anyOf: [string, $ref]``) cost one
resolution each instead of growing with the number of paths through them.

Normalisation (so the runtime can validate with any 2020-12 validator):

* ``nullable: true`` (OAS 3.0) and ``x-nullable`` (Swagger 2.0) add ``"null"``
  to ``type`` (and ``None`` to ``enum``);
* boolean ``exclusiveMinimum``/``exclusiveMaximum`` (OAS 3.0) become numeric;
* Swagger ``type: file`` becomes ``{"type": "string", "format": "binary"}``;
* array-form ``items`` becomes ``prefixItems``;
* ``example``/``examples``, ``x-*`` extensions, ``$defs``/``definitions`` and
  malformed ``required`` values are dropped;
* ``$ref`` siblings (3.1) override keys of the target;
* ``$recursiveRef``/``$dynamicRef`` point at the nearest enclosing named schema;
* a ``discriminator`` on a ``oneOf``/``anyOf`` gets ``x-variant-tags``: the
  discriminator values of each variant, in order (from ``mapping`` or from
  the referenced schema's name).

How deep a recursive schema is shown to a model is the translator's choice
(:mod:`scopegate.openapi.simplify`), not the resolver's.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from scopegate.openapi.errors import RefError, SpecLoadError
from scopegate.openapi.refs import Documents, RefKey, ref_name, unescape_pointer_token

__all__ = [
    "DEFS_PREFIX",
    "Resolver",
    "canonical",
    "def_name_of",
    "recursive_placeholder",
    "ref_name",
    "unescape_pointer_token",
]

DEFS_PREFIX = "#/$defs/"
_MAP_KEYWORDS = frozenset({"properties", "patternProperties", "dependentSchemas"})
_LIST_KEYWORDS = frozenset({"allOf", "anyOf", "oneOf", "prefixItems"})
_SINGLE_KEYWORDS = frozenset(
    {
        "not",
        "if",
        "then",
        "else",
        "contains",
        "propertyNames",
        "additionalProperties",
        "unevaluatedProperties",
        "unevaluatedItems",
        "items",
        "additionalItems",
        "contentSchema",
    }
)
_DROP_KEYWORDS = frozenset(
    {"example", "examples", "$defs", "definitions", "$recursiveAnchor", "$dynamicAnchor", "$anchor", "$id", "$schema"}
)
_NAME_CHARS = re.compile(r"[^A-Za-z0-9_.-]+")
MAX_NESTING = 256
# A reference met this many references deep is resolved on its own, as a definition, instead of inline:
# a web of N mutually referring schemas can be N deep, which no recursion limit should see.
MAX_INLINE_REFS = 24


def recursive_placeholder(name: str) -> dict[str, Any]:
    """What a model is shown in place of a recursive schema once the expansion depth is reached."""
    return {
        "type": "object",
        "description": f"Recursive schema {name}: nested fields are not expanded here.",
    }


def def_name_of(node: Any) -> str | None:
    """``"Node"`` for a back-edge ``{"$ref": "#/$defs/Node"}``, else ``None``."""
    if isinstance(node, Mapping):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith(DEFS_PREFIX):
            return unescape_pointer_token(ref[len(DEFS_PREFIX) :])
    return None


@dataclass
class _Frame:
    key: RefKey
    raw: Any
    needs: set[str] = field(default_factory=set)
    recursive: bool = False
    memoisable: bool = True


class ResolverStats:
    """Work counters (for tests and benchmarks): refs resolved fresh, memo hits, nodes built, definitions."""

    __slots__ = ("definitions", "memo_hits", "nodes", "resolved")

    def __init__(self) -> None:
        self.resolved = self.memo_hits = self.nodes = self.definitions = 0

    def __repr__(self) -> str:
        return f"ResolverStats(resolved={self.resolved}, memo_hits={self.memo_hits}, nodes={self.nodes})"


class Resolver:
    """Resolves and normalises the schemas of one spec (all its documents), memoised across calls."""

    def __init__(self, documents: Documents, *, node_budget: int = 2_000_000) -> None:
        self.docs = documents
        self._memo: dict[RefKey, tuple[Any, frozenset[str]]] = {}
        self._defs: dict[str, Any] = {}
        self._def_needs: dict[str, frozenset[str]] = {}
        self._names: dict[RefKey, str] = {}
        self._taken: set[str] = set()
        self._frames: list[_Frame] = []
        self._active: dict[RefKey, int] = {}
        self._budget = node_budget
        self._budget_left = node_budget
        self._deferred: dict[str, tuple[RefKey, str]] = {}
        self.stats = ResolverStats()

    # ------------------------------------------------------------ public
    def schema(self, node: Any, doc: str = "", *, where: str = "") -> Any:
        """Resolve and normalise one schema. Raises :class:`RefError` / :class:`SpecLoadError`.

        The result is shared and read-only. When it uses recursive definitions
        it has a ``$defs`` map (and may itself be ``{"$ref": ..., "$defs": ...}``).
        """
        self.docs.where = where
        self._budget_left = self._budget
        top = _Frame(key=("", "<top>"), raw=None)
        self._frames = [top]
        self._active = {}
        journal_memo = len(self._memo)
        journal_defs = set(self._defs)
        try:
            result = self._schema(node, doc, 0)
            self._resolve_deferred()
        except (RefError, SpecLoadError, RecursionError):
            self._rollback(journal_memo, journal_defs)
            self._deferred.clear()
            raise
        finally:
            self._frames = []
            self._active = {}
        needs = self._closure(top.needs)
        if not needs or not isinstance(result, Mapping):
            return result
        out = dict(result)
        out["$defs"] = {name: self._defs[name] for name in sorted(needs)}
        return out

    def definition(self, name: str) -> Any:
        return self._defs[name]

    # ---------------------------------------------------------- internals
    def _rollback(self, memo_size: int, defs_before: set[str]) -> None:
        # Results memoised during a failed call may point at definitions that were never finished.
        for key in list(self._memo)[memo_size:]:
            del self._memo[key]
        for name in set(self._defs) - defs_before:
            del self._defs[name]
            self._def_needs.pop(name, None)

    def _resolve_deferred(self) -> None:
        """Resolve, each from the top, the references that were met too deep to inline."""
        while self._deferred:
            name, (key, ref) = next(iter(self._deferred.items()))
            del self._deferred[name]
            if name in self._defs:
                continue
            memo = self._memo.get(key)
            if memo is not None and def_name_of(memo[0]) != name:
                body, needs = memo
            else:
                frame = _Frame(key=key, raw=None)
                self._frames = [_Frame(key=("", "<deferred>"), raw=None), frame]
                self._active = {key: 1}
                frame.raw = self.docs.lookup(key, ref)
                body = self._schema(frame.raw, key[0], 1)
                needs = frozenset(frame.needs)
                self.stats.resolved += 1
            self._defs[name] = body
            self._def_needs[name] = frozenset(needs) | ({name} if def_name_of(body) else frozenset())
            self._memo[key] = ({"$ref": DEFS_PREFIX + _escape(name)}, frozenset({name}))
            self.stats.definitions += 1

    def _closure(self, needs: set[str]) -> set[str]:
        out: set[str] = set()
        todo = list(needs)
        while todo:
            name = todo.pop()
            if name in out:
                continue
            out.add(name)
            todo.extend(self._def_needs.get(name, ()))
        return out

    def _name_for(self, key: RefKey, ref: str) -> str:
        name = self._names.get(key)
        if name is None:
            base = _NAME_CHARS.sub("_", ref_name(ref)).strip("_") or "schema"
            name, n = base, 2
            while name in self._taken:
                name, n = f"{base}_{n}", n + 1
            self._taken.add(name)
            self._names[key] = name
        return name

    def _tick(self) -> None:
        self.stats.nodes += 1
        self._budget_left -= 1
        if self._budget_left < 0:
            raise SpecLoadError(f"schema too large to resolve (more than {self._budget} nodes) in {self.docs.where}")

    def _schema(self, node: Any, doc: str, level: int) -> Any:
        if not isinstance(node, Mapping):
            return node
        if level > MAX_NESTING:
            raise SpecLoadError(f"schema nested more than {MAX_NESTING} levels in {self.docs.where}")
        self._tick()
        ref = node.get("$ref")
        if isinstance(ref, str):
            return self._with_siblings(self._ref(self.docs.locate(ref, doc), ref, level), node, doc, level, "$ref")
        for dyn in ("$recursiveRef", "$dynamicRef"):
            if isinstance(node.get(dyn), str):
                key = self._dynamic_target(node[dyn], doc)
                return self._with_siblings(self._ref(key, node[dyn], level), node, doc, level, dyn)
        return self._body(node, doc, level)

    def _with_siblings(self, resolved: Any, node: Mapping[str, Any], doc: str, level: int, ref_key: str) -> Any:
        if len(node) == 1 or not isinstance(resolved, Mapping):
            return resolved
        siblings = {k: v for k, v in node.items() if k != ref_key}
        extra = self._body(siblings, doc, level)
        if not extra:
            return resolved
        merged = dict(resolved)
        merged.update(extra)
        return merged

    def _dynamic_target(self, ref: str, doc: str) -> RefKey:
        # Nearest enclosing named schema that declares a recursive/dynamic anchor, else the nearest one.
        frames = self._frames[1:]
        chosen: int | None = None
        for i in range(len(frames) - 1, -1, -1):
            raw = frames[i].raw
            if isinstance(raw, Mapping) and (raw.get("$recursiveAnchor") or raw.get("$dynamicAnchor")):
                chosen = i
                break
        if chosen is None and frames:
            chosen = len(frames) - 1
        if chosen is not None:
            # What this resolves to depends on the frames around it: do not memoise the frames above.
            for frame in frames[chosen + 1 :]:
                frame.memoisable = False
            return frames[chosen].key
        if ref.startswith("#"):
            return (doc, ref[1:])
        raise RefError(ref, "dynamic reference outside any named schema", where=self.docs.where)

    def _ref(self, key: RefKey, ref: str, level: int) -> Any:
        current = self._frames[-1]
        memo = self._memo.get(key)
        if memo is not None:
            self.stats.memo_hits += 1
            current.needs |= memo[1]
            return memo[0]
        index = self._active.get(key)
        if index is not None:  # recursion: a back-edge to a definition
            frame = self._frames[index]
            frame.recursive = True
            name = self._name_for(key, ref)
            current.needs.add(name)
            return {"$ref": DEFS_PREFIX + _escape(name)}
        if len(self._frames) > MAX_INLINE_REFS:  # too deep to inline: a definition, resolved later
            name = self._name_for(key, ref)
            if name not in self._defs:
                self._deferred.setdefault(name, (key, ref))
            current.needs.add(name)
            return {"$ref": DEFS_PREFIX + _escape(name)}
        target = self.docs.lookup(key, ref)
        frame = _Frame(key=key, raw=target)
        self._frames.append(frame)
        self._active[key] = len(self._frames) - 1
        try:
            body = self._schema(target, key[0], level + 1)
        finally:
            self._frames.pop()
            del self._active[key]
        self.stats.resolved += 1
        if frame.recursive and def_name_of(body) is not None and len(body) == 1:
            raise RefError(ref, "reference loop (the schema is only a reference to itself)", where=self.docs.where)
        if frame.recursive:
            name = self._name_for(key, ref)
            self._defs[name] = body
            self._def_needs[name] = frozenset(frame.needs)
            self.stats.definitions += 1
            result: Any = {"$ref": DEFS_PREFIX + _escape(name)}
            needs = frozenset({name})
        else:
            result, needs = body, frozenset(frame.needs)
        if frame.memoisable:
            self._memo[key] = (result, needs)
        current.needs |= needs
        return result

    def _body(self, node: Mapping[str, Any], doc: str, level: int) -> dict[str, Any]:
        out: dict[str, Any] = {}
        nullable = False
        for raw_key, value in node.items():
            k = raw_key if isinstance(raw_key, str) else str(raw_key)
            if k.startswith("x-"):
                if k == "x-nullable" and value is True:
                    nullable = True
                continue
            if k in _DROP_KEYWORDS:
                continue
            if k in _MAP_KEYWORDS:
                map_doc = doc
                if isinstance(value, Mapping) and len(value) == 1 and isinstance(value.get("$ref"), str):
                    # The map itself given by a $ref (DigitalOcean: `properties: {$ref: 'attributes.yml#/…'}`).
                    # A property *named* "$ref" has a schema as its value, never a string.
                    value, map_doc = self.docs.deref(value, doc)
                if isinstance(value, Mapping):
                    out[k] = {str(pk): self._schema(pv, map_doc, level + 1) for pk, pv in value.items()}
            elif k in _LIST_KEYWORDS:
                if isinstance(value, list):
                    out[k] = [self._schema(v, doc, level + 1) for v in value]
            elif k in _SINGLE_KEYWORDS:
                if k == "items" and isinstance(value, list):
                    out["prefixItems"] = [self._schema(v, doc, level + 1) for v in value]
                elif isinstance(value, Mapping | bool):
                    out[k] = self._schema(value, doc, level + 1)
            elif k == "nullable":
                nullable = value is True
            elif k == "required":
                if isinstance(value, list) and all(isinstance(v, str) for v in value):
                    out[k] = list(dict.fromkeys(value))
            elif k == "discriminator":
                if isinstance(value, Mapping) and isinstance(value.get("propertyName"), str):
                    out[k] = self._discriminator(value, node, doc)
            else:
                out[k] = value
        _normalise_keywords(out, nullable)
        return out

    def _discriminator(self, disc: Mapping[str, Any], node: Mapping[str, Any], doc: str) -> dict[str, Any]:
        result: dict[str, Any] = {"propertyName": disc["propertyName"]}
        mapping = disc.get("mapping")
        if isinstance(mapping, Mapping):
            result["mapping"] = {str(k): str(v) for k, v in mapping.items()}
        variants = node.get("oneOf") if isinstance(node.get("oneOf"), list) else node.get("anyOf")
        if not isinstance(variants, list):
            return result
        targets = {tag: self._safe_locate(target, doc) for tag, target in result.get("mapping", {}).items()}
        tags: list[list[str]] = []
        for variant in variants:
            vref = variant.get("$ref") if isinstance(variant, Mapping) else None
            if not isinstance(vref, str):
                tags.append([])
                continue
            vkey = self._safe_locate(vref, doc)
            found = [
                tag
                for tag, target in result.get("mapping", {}).items()
                if target == vref or target == ref_name(vref) or (vkey is not None and targets[tag] == vkey)
            ]
            tags.append(found or [ref_name(vref)])
        result["x-variant-tags"] = tags
        return result

    def _safe_locate(self, ref: str, doc: str) -> RefKey | None:
        if "#" not in ref and "/" not in ref and "." not in ref:
            return None  # a bare schema name in a discriminator mapping
        try:
            return self.docs.locate(ref, doc)
        except RefError:
            return None


def _escape(name: str) -> str:
    return name.replace("~", "~0").replace("/", "~1")


def _normalise_keywords(out: dict[str, Any], nullable: bool) -> None:
    t = out.get("type")
    if t == "file":
        out["type"] = "string"
        out.setdefault("format", "binary")
    for bound, exclusive in (("minimum", "exclusiveMinimum"), ("maximum", "exclusiveMaximum")):
        flag = out.get(exclusive)
        if isinstance(flag, bool):
            if flag and isinstance(out.get(bound), int | float):
                out[exclusive] = out.pop(bound)
            else:
                del out[exclusive]
    if nullable:
        t = out.get("type")
        if isinstance(t, str) and t != "null":
            out["type"] = [t, "null"]
        elif isinstance(t, list) and "null" not in t:
            out["type"] = [*t, "null"]
        enum = out.get("enum")
        if isinstance(enum, list) and None not in enum:
            out["enum"] = [*enum, None]


def canonical(schema: Any) -> str:
    """A stable text form of a schema, for equality checks and hashing."""
    return json.dumps(schema, sort_keys=True, separators=(",", ":"), default=str)
