"""Index layout for many tenants on a cluster: per-agent read aliases, the alias swap, per-tenant counts. No I/O.

Aliases of one spec's index (``tickets``)::

    tickets-read            the write alias and the default read alias (``is_write_index``)
    tickets-read-<agent>    one agent's read alias, optionally filtered (e.g. to some products)
    tickets-previous        the version the read alias left at the last swap (what a rollback returns to)

The read aliases all point at the same versioned index ``tickets-v<N>``; a
swap moves every one of them, filters kept, and ``-previous`` to the version
they leave, in one atomic ``_aliases`` call (:func:`move_aliases_actions`), so
no search ever sees two versions at once.
Routing by tenant (``dsl.doc_address``) is per request, never on an alias.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from scopegate.errors import ConfigError
from scopegate.search.spec import SearchSpec

_AGENT = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
MAX_FILTER_VALUES = 1024
# Page size of the composite aggregation that counts documents per tenant.
TENANT_PAGE = 1000

AliasFilter = Mapping[str, str | Sequence[str]]


def health_rank(status: str | None) -> int:
    """red < yellow < green (anything else: 0)."""
    return {"red": 1, "yellow": 2, "green": 3}.get(status or "", 0)


def agent_alias(base_alias: str, agent: str) -> str:
    """``<index>-read-<agent>``; agent names are lowercase letters, digits, ``-`` and ``_``."""
    if not isinstance(agent, str) or not _AGENT.match(agent):
        raise ConfigError(f"agent name {agent!r} must be 1-64 of a-z, 0-9, '-', '_' (starting with a letter or digit)")
    return f"{base_alias}-{agent}"


def alias_filter_query(spec: SearchSpec, alias_filter: AliasFilter | None) -> dict[str, Any] | None:
    """The alias ``filter`` for an agent alias: ``terms`` on keyword fields of the spec, all of them required.

    Operator configuration, never model input; still only keyword fields (filters,
    keyword fields, the group field) may be named, and never the tenant field: the
    tenant is per request, in every query.
    """
    if not alias_filter:
        return None
    allowed = set(spec.all_keyword_fields())
    if spec.group_field:
        allowed.add(spec.group_field)
    clauses: list[dict[str, Any]] = []
    for name in sorted(alias_filter):
        raw = alias_filter[name]
        values = [raw] if isinstance(raw, str) else list(raw)
        if name not in allowed:
            raise ConfigError(
                f"alias filter field {name!r} is not a keyword field of the spec; known: {sorted(allowed)}"
            )
        if not values or len(values) > MAX_FILTER_VALUES or any(not isinstance(v, str) or not v for v in values):
            raise ConfigError(f"alias filter {name!r} needs 1-{MAX_FILTER_VALUES} non-empty strings")
        clauses.append({"terms": {name: sorted(set(values))}})
    return {"bool": {"filter": clauses}}


def alias_definition(
    *, filter_query: dict[str, Any] | None = None, is_write_index: bool | None = None
) -> dict[str, Any]:
    definition: dict[str, Any] = {}
    if filter_query is not None:
        definition["filter"] = filter_query
    if is_write_index is not None:
        definition["is_write_index"] = is_write_index
    return definition


@dataclass(frozen=True)
class AliasState:
    """Which index each of a spec's aliases points at, and how (filter, write flag)."""

    # alias name -> (index, definition as the engine reports it)
    aliases: Mapping[str, tuple[str, Mapping[str, Any]]]

    def indices(self) -> list[str]:
        return sorted({index for index, _ in self.aliases.values()})


def parse_alias_state(response: Mapping[str, Any], prefix: str) -> AliasState:
    """``GET /<pattern>/_alias`` -> the aliases named ``prefix`` or ``prefix-*``."""
    found: dict[str, tuple[str, Mapping[str, Any]]] = {}
    for index in sorted(response):
        entry = response[index]
        aliases = entry.get("aliases", {}) if isinstance(entry, Mapping) else {}
        for name, definition in sorted(aliases.items()):
            if name == prefix or name.startswith(prefix + "-"):
                found[name] = (index, definition if isinstance(definition, Mapping) else {})
    return AliasState(found)


def _kept(definition: Mapping[str, Any]) -> dict[str, Any]:
    return {
        k: definition[k] for k in ("filter", "is_write_index", "index_routing", "search_routing") if k in definition
    }


def previous_alias(base_alias: str) -> str:
    """``<index>-previous`` for the read alias ``<index>-read``."""
    return base_alias.removesuffix("-read") + "-previous"


def move_aliases_actions(
    state: AliasState, target: str, *, previous: str | None = None, previous_targets: Sequence[str] = ()
) -> dict[str, Any]:
    """One atomic ``_aliases`` body moving every alias in ``state`` to ``target``, definitions kept.

    With ``previous`` (an alias name), it also moves that alias from
    ``previous_targets`` to the index the read aliases leave.
    """
    actions: list[dict[str, Any]] = []
    left: set[str] = set()
    for name in sorted(state.aliases):
        index, definition = state.aliases[name]
        if index == target:
            continue
        left.add(index)
        actions.append({"remove": {"index": index, "alias": name}})
        actions.append({"add": {"index": target, "alias": name, **_kept(definition)}})
    if previous is not None and len(left) == 1:
        actions += [{"remove": {"index": index, "alias": previous}} for index in sorted(previous_targets)]
        actions.append({"add": {"index": left.pop(), "alias": previous}})
    return {"actions": actions}


# -- per-tenant document counts (reindex verification) -------------------------------------
def tenant_counts_body(spec: SearchSpec, after: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A ``_search`` body counting documents per tenant: one page of a composite aggregation."""
    composite: dict[str, Any] = {"size": TENANT_PAGE, "sources": [{"tenant": {"terms": {"field": spec.tenant_field}}}]}
    if after:
        composite["after"] = dict(after)
    return {"size": 0, "track_total_hits": True, "aggs": {"tenants": {"composite": composite}}}


def parse_tenant_counts(response: Mapping[str, Any]) -> tuple[dict[str, int], Mapping[str, Any] | None]:
    """(counts of this page, the ``after`` key of the next page or None)."""
    agg = (response.get("aggregations") or {}).get("tenants") or {}
    buckets = agg.get("buckets") or []
    counts = {str(b["key"]["tenant"]): int(b["doc_count"]) for b in buckets}
    after = agg.get("after_key") if buckets else None
    return counts, after


def count_differences(old: Mapping[str, int], new: Mapping[str, int]) -> dict[str, tuple[int, int]]:
    """Tenants whose document count differs: ``{tenant: (old, new)}``."""
    return {t: (old.get(t, 0), new.get(t, 0)) for t in sorted(set(old) | set(new)) if old.get(t, 0) != new.get(t, 0)}
