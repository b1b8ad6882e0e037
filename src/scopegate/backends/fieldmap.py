"""Field names the model sees -> field paths of an index scopegate did not build. No I/O.

A spec names its fields for the model (``component``, ``id``); an existing
index keeps them where its team put them (``meta.component``, an ``org_id``
tenant, a ``.keyword`` sub-field). :class:`FieldMap` holds, per spec field,
the path a query uses and the path its value is read from in ``_source``:

* exact-match roles (id, tenant, groups, filters, keyword fields) query a
  ``keyword`` field; a ``text`` field with a keyword sub-field queries the
  sub-field (``status`` -> ``status.keyword``);
* a path that *is* a multi-field sub-field (``status.keyword``) is read from
  its parent in ``_source`` (sub-fields are never in ``_source``);
* dotted paths reach object fields; their values are read from the nested
  ``_source`` objects (or a literal dotted key, as some pipelines write them).

:func:`flatten_mapping` turns a ``_mapping`` response (an alias: every index
behind it) into ``path -> MappedField``; :mod:`scopegate.backends.mapping_check`
checks a spec against it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from scopegate.search.spec import SearchSpec

EXACT_TYPES = frozenset({"keyword", "constant_keyword"})
TEXT_TYPES = frozenset({"text", "match_only_text"})


@dataclass(frozen=True)
class MappedField:
    """One field of a mapping: its type(s) over the indices behind an alias, and where it sits."""

    path: str
    types: frozenset[str]
    parent: str | None = None  # set for a multi-field sub-field: the field whose value it indexes
    sub_fields: tuple[str, ...] = ()  # full paths of its multi-field sub-fields
    in_nested: bool = False  # under a ``nested`` object: plain term/match queries do not reach it
    analyzers: frozenset[str] = frozenset()  # text fields: the search analyzer(s), "default" when unnamed
    # How the highlighter finds a hit's match offsets, in every index that maps the field: "term_vectors"
    # (term_vector with_positions_offsets), "postings" (index_options offsets), else "analysis" (re-analyse).
    offsets: str = "analysis"

    @property
    def exact(self) -> bool:
        return bool(self.types) and self.types <= EXACT_TYPES

    @property
    def text(self) -> bool:
        return bool(self.types) and self.types <= TEXT_TYPES


def _entry(parent: str | None, nested: bool) -> dict[str, Any]:
    return {"types": set(), "parent": parent, "subs": set(), "nested": nested, "analyzers": set(), "offsets": set()}


def _offsets(body: Mapping[str, Any]) -> str:
    if str(body.get("term_vector", "no")).startswith("with_positions_offsets"):
        return "term_vectors"
    return "postings" if body.get("index_options") == "offsets" else "analysis"


# The weakest offset source over the indices behind an alias decides (a highlighter the field of one index
# cannot serve fails the whole search there).
_OFFSET_ORDER = ("analysis", "postings", "term_vectors")


def _walk(props: Mapping[str, Any], prefix: str, nested: bool, out: dict[str, dict[str, Any]]) -> None:
    for name, body in props.items():
        if not isinstance(body, Mapping):
            continue
        path = f"{prefix}{name}"
        kind = str(body.get("type", "object"))
        entry = out.setdefault(path, _entry(None, nested))
        entry["types"].add(kind)
        if kind in TEXT_TYPES:
            entry["analyzers"].add(str(body.get("search_analyzer") or body.get("analyzer") or "default"))
            entry["offsets"].add(_offsets(body))
        inner = body.get("properties")
        if isinstance(inner, Mapping):
            _walk(inner, path + ".", nested or kind == "nested", out)
        for sub, sub_body in (body.get("fields") or {}).items():
            if not isinstance(sub_body, Mapping):
                continue
            sub_path = f"{path}.{sub}"
            sub_entry = out.setdefault(sub_path, _entry(path, nested))
            sub_entry["types"].add(str(sub_body.get("type", "object")))
            entry["subs"].add(sub_path)


def flatten_mapping(response: Mapping[str, Any]) -> dict[str, MappedField]:
    """``path -> MappedField`` over every index of a ``GET <index>/_mapping`` response."""
    raw: dict[str, dict[str, Any]] = {}
    for body in response.values():
        mappings = (body or {}).get("mappings") or {} if isinstance(body, Mapping) else {}
        props = mappings.get("properties") if isinstance(mappings, Mapping) else None
        if isinstance(props, Mapping):
            _walk(props, "", False, raw)
    return {
        path: MappedField(
            path,
            frozenset(e["types"]),
            e["parent"],
            tuple(sorted(e["subs"])),
            bool(e["nested"]),
            frozenset(e["analyzers"]),
            min(e["offsets"], key=_OFFSET_ORDER.index, default="analysis"),
        )
        for path, e in raw.items()
    }


def exact_roles(spec: SearchSpec) -> tuple[str, ...]:
    """Spec fields matched exactly (term/terms queries and the id sort)."""
    names = [spec.id_field, spec.tenant_field, *([spec.group_field] if spec.group_field else [])]
    return tuple(dict.fromkeys([*names, *spec.all_keyword_fields()]))


def keyword_sub_field(found: MappedField, fields: Mapping[str, MappedField]) -> str | None:
    """The keyword sub-field of a text field (``status.keyword``), or None."""
    for sub in found.sub_fields:
        if fields[sub].exact:
            return sub
    return None


@dataclass(frozen=True)
class FieldMap:
    """Per spec field: the path queries use and the path its value is read from in ``_source``."""

    query: Mapping[str, str] = field(default_factory=dict)
    source: Mapping[str, str] = field(default_factory=dict)
    # Where the snippet field's match offsets come from (see MappedField.offsets): "term_vectors" lets the
    # engine snippet use the fast vector highlighter instead of re-analysing each hit's text.
    snippet_offsets: str = "analysis"

    def q(self, name: str) -> str:
        return self.query.get(name, name)

    def s(self, name: str) -> str:
        return self.source.get(name, name)

    @property
    def identity(self) -> bool:
        return all(self.q(n) == n for n in self.query) and all(self.s(n) == n for n in self.source)

    def source_paths(self, names: Iterable[str]) -> list[str]:
        return list(dict.fromkeys(self.s(n) for n in names))

    def read(self, source: Mapping[str, Any], name: str) -> Any:
        """The value of spec field ``name`` in a hit's ``_source`` (dotted paths reach nested objects)."""
        return read_path(source, self.s(name))

    def model_fields(self, source: Mapping[str, Any], names: Iterable[str]) -> dict[str, Any]:
        """``_source`` re-keyed by spec field names (absent values left out)."""
        out: dict[str, Any] = {}
        for name in names:
            value = self.read(source, name)
            if value is not None:
                out[name] = value
        return out


IDENTITY = FieldMap()


def read_path(source: Mapping[str, Any], path: str) -> Any:
    """``source[a][b]`` for ``a.b`` (or a literal ``"a.b"`` key); in a list of objects, the first that has it."""
    if path in source:
        return source[path]
    parts = path.split(".")
    for cut in range(1, len(parts)):
        value = source.get(".".join(parts[:cut]))
        rest = ".".join(parts[cut:])
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, Mapping):
                found = read_path(item, rest)
                if found is not None:
                    return found
    return None


def configured_map(spec: SearchSpec) -> FieldMap:
    """The map from the spec alone (before the mapping is read): each path as configured."""
    names = spec.stored_fields()
    paths = {n: spec.engine_path(n) for n in names}
    return FieldMap(query=paths, source=dict(paths))


def resolve(spec: SearchSpec, fields: Mapping[str, MappedField]) -> FieldMap:
    """The map for ``spec`` over an index's flattened mapping: exact roles on their keyword (sub-)field,
    values read from the field a sub-field belongs to. Paths the mapping lacks stay as configured
    (:mod:`~scopegate.backends.mapping_check` reports them)."""
    query: dict[str, str] = {}
    source: dict[str, str] = {}
    snippet = fields.get(spec.engine_path(spec.snippet_field))
    exact = set(exact_roles(spec))
    for name in spec.stored_fields():
        path = spec.engine_path(name)
        found = fields.get(path)
        query[name] = path
        source[name] = path
        if found is None:
            continue
        if found.parent is not None:
            source[name] = found.parent
        if name in exact and not found.exact:
            sub = keyword_sub_field(found, fields)
            if sub is not None:
                query[name] = sub
    return FieldMap(query=query, source=source, snippet_offsets=snippet.offsets if snippet else "analysis")
