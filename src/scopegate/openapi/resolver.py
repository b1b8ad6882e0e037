"""``$ref`` resolution and schema normalisation to JSON Schema 2020-12.

The resolver is lazy: nothing is resolved until an operation asks for it, and
every acyclic ``$ref`` target is resolved once and then shared.

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

A recursive schema is expanded ``recursion_depth`` times, then replaced by
:func:`recursive_placeholder`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from scopegate.openapi.errors import RefError, SpecLoadError

RefKey = tuple[str, str]  # (document key, JSON pointer fragment)

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
MAX_NESTING = 256
MAX_REF_HOPS = 64


def recursive_placeholder(name: str) -> dict[str, Any]:
    """What replaces a recursive schema once the expansion depth is reached."""
    return {
        "type": "object",
        "description": f"Recursive schema {name}: nested fields are not expanded here.",
    }


def unescape_pointer_token(token: str) -> str:
    """JSON-pointer token unescaping (RFC 6901), after URI percent-decoding."""
    return unquote(token).replace("~1", "/").replace("~0", "~")


def ref_name(ref: str) -> str:
    """Last pointer segment of a ref: ``#/components/schemas/Pet`` -> ``Pet``."""
    fragment = ref.partition("#")[2]
    tail = fragment.rsplit("/", 1)[-1] if fragment else ref.rsplit("/", 1)[-1]
    return unescape_pointer_token(tail) or ref


def _lookup_pointer(doc: Any, fragment: str) -> Any:
    if fragment in ("", "/"):
        return doc
    if not fragment.startswith("/"):
        raise KeyError(f"not a JSON pointer: {fragment!r}")
    node = doc
    for raw in fragment[1:].split("/"):
        token = unescape_pointer_token(raw)
        if isinstance(node, Mapping):
            if token in node:
                node = node[token]
            elif token.isdigit() and int(token) in node:  # YAML integer keys (e.g. responses 200)
                node = node[int(token)]
            else:
                raise KeyError(token)
        elif isinstance(node, list):
            if not token.isdigit() or int(token) >= len(node):
                raise KeyError(token)
            node = node[int(token)]
        else:
            raise KeyError(token)
    return node


class Resolver:
    """Resolves refs of one spec document (and, if allowed, files next to it)."""

    def __init__(
        self,
        root: Mapping[str, Any],
        *,
        base_dir: Path | None = None,
        allow_external_refs: bool = False,
        recursion_depth: int = 1,
        parse_file: Callable[[Path], Any] | None = None,
        node_budget: int = 2_000_000,
    ) -> None:
        if recursion_depth < 1:
            raise ValueError("recursion_depth must be >= 1")
        self._docs: dict[str, Any] = {"": root}
        self._base_dir = base_dir.resolve() if base_dir is not None else None
        self._allow_external = allow_external_refs
        self._depth = recursion_depth
        self._parse_file = parse_file
        self._cache: dict[RefKey, Any] = {}
        self._stack: list[RefKey] = []
        self._raw_stack: list[Any] = []
        self._cuts: list[set[RefKey]] = [set()]
        self._budget = node_budget
        self._where = ""

    # ----------------------------------------------------------------- refs
    def locate(self, ref: str, doc: str) -> RefKey:
        """Turn a ``$ref`` string seen inside document ``doc`` into a key."""
        file_part, _, fragment = ref.partition("#")
        if not file_part:
            return (doc, fragment)
        return (self._external_doc(ref, file_part, doc), fragment)

    def _external_doc(self, ref: str, file_part: str, doc: str) -> str:
        if "://" in file_part or file_part.startswith("//"):
            raise RefError(ref, "remote references are not allowed", where=self._where)
        if not self._allow_external:
            raise RefError(ref, "external references are disabled (allow_external_refs=False)", where=self._where)
        if self._base_dir is None:
            raise RefError(ref, "external references need a spec loaded from a file", where=self._where)
        current_dir = self._base_dir / Path(doc).parent if doc else self._base_dir
        target = (current_dir / unquote(file_part)).resolve()
        try:
            rel = target.relative_to(self._base_dir)
        except ValueError:
            raise RefError(ref, "only files next to the spec (same folder or below) may be referenced") from None
        key = rel.as_posix()
        if key not in self._docs:
            if self._parse_file is None or not target.is_file():
                raise RefError(ref, f"file {key!r} not found next to the spec", where=self._where)
            try:
                self._docs[key] = self._parse_file(target)
            except SpecLoadError as exc:
                raise RefError(ref, str(exc), where=self._where) from exc
        return key

    def lookup(self, key: RefKey, ref: str) -> Any:
        try:
            return _lookup_pointer(self._docs[key[0]], key[1])
        except KeyError as exc:
            raise RefError(ref, f"no such element {exc}", where=self._where) from None

    def deref(self, node: Any, doc: str = "") -> tuple[Any, str]:
        """Follow a chain of ``$ref`` for a non-schema object (parameter, response...).

        Sibling keys of a ``$ref`` (3.1 ``summary``/``description``) override the target's.
        Returns the object and the key of the document it lives in.
        """
        siblings: dict[str, Any] = {}
        seen: set[RefKey] = set()
        hops = 0
        while isinstance(node, Mapping) and isinstance(node.get("$ref"), str):
            ref = node["$ref"]
            for k, v in node.items():
                if k != "$ref":
                    siblings.setdefault(k, v)
            key = self.locate(ref, doc)
            if key in seen or hops > MAX_REF_HOPS:
                raise RefError(ref, "reference loop", where=self._where)
            seen.add(key)
            hops += 1
            node = self.lookup(key, ref)
            doc = key[0]
        if siblings and isinstance(node, Mapping):
            merged = dict(node)
            merged.update(siblings)
            return merged, doc
        return node, doc

    # -------------------------------------------------------------- schemas
    def schema(self, node: Any, doc: str = "", *, where: str = "") -> Any:
        """Resolve and normalise one schema. Raises :class:`RefError`."""
        self._where = where
        self._budget_left = self._budget
        return self._schema(node, doc, 0)

    def _tick(self) -> None:
        self._budget_left -= 1
        if self._budget_left < 0:
            raise SpecLoadError(f"schema too large to resolve (more than {self._budget} nodes) in {self._where}")

    def _schema(self, node: Any, doc: str, level: int) -> Any:
        if not isinstance(node, Mapping):
            return node
        if level > MAX_NESTING:
            raise SpecLoadError(f"schema nested more than {MAX_NESTING} levels in {self._where}")
        self._tick()
        ref = node.get("$ref")
        if isinstance(ref, str):
            return self._with_siblings(self._ref(self.locate(ref, doc), ref, level), node, doc, level, "$ref")
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
        for key, raw in zip(reversed(self._stack), reversed(self._raw_stack), strict=True):
            if isinstance(raw, Mapping) and (raw.get("$recursiveAnchor") or raw.get("$dynamicAnchor")):
                return key
        if self._stack:
            return self._stack[-1]
        if ref.startswith("#"):
            return (doc, ref[1:])
        raise RefError(ref, "dynamic reference outside any named schema", where=self._where)

    def _ref(self, key: RefKey, ref: str, level: int) -> Any:
        cached = self._cache.get(key, _MISSING)
        if cached is not _MISSING:
            return cached
        if self._stack.count(key) >= self._depth:
            self._cuts[-1].add(key)
            return recursive_placeholder(ref_name(ref))
        target = self.lookup(key, ref)
        outer = set(self._stack)
        self._stack.append(key)
        self._raw_stack.append(target)
        self._cuts.append(set())
        try:
            result = self._schema(target, key[0], level + 1)
        finally:
            self._stack.pop()
            self._raw_stack.pop()
            cuts = self._cuts.pop()
        self._cuts[-1] |= cuts
        if key not in outer and not (cuts & outer):
            self._cache[key] = result
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
                if isinstance(value, Mapping):
                    out[k] = {str(pk): self._schema(pv, doc, level + 1) for pk, pv in value.items()}
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
                if target == vref or target == ref_name(vref) or (vkey and self._safe_locate(target, doc) == vkey)
            ]
            tags.append(found or [ref_name(vref)])
        result["x-variant-tags"] = tags
        return result

    def _safe_locate(self, ref: str, doc: str) -> RefKey | None:
        if "#" not in ref:
            return None
        try:
            return self.locate(ref, doc)
        except RefError:
            return None


_MISSING = object()


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
