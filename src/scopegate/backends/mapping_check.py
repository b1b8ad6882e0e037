"""Does an existing index's mapping serve a spec? The live mapping check, as pure functions. No I/O.

Given the flattened mapping of the indices behind ``spec.index``
(:func:`scopegate.backends.fieldmap.flatten_mapping`), each problem is one
:class:`Finding`: an error (the tool would answer wrongly or not at all, e.g.
a tenant field that does not exist makes every search a silent 0) or a
warning (it works, but something looks off: a filter value the index never
saw), or info (it works as configured, at a cost the mapping could lower:
snippets cut by re-analysing long texts). Each names the config key it comes from (``key``, relative to the
search tool's entry) and the mapping field.

Rules: the tenant and group fields, the id field and each filter and keyword
field are exact-match (``keyword``, or a text field with a keyword
sub-field); text fields are ``text``; result fields exist; nothing sits under
a ``nested`` object (plain queries do not reach into one).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from scopegate.backends.dsl import EXISTING_COMBINED
from scopegate.backends.fieldmap import MappedField, keyword_sub_field
from scopegate.search.spec import SearchSpec

Severity = Literal["error", "warning", "info"]
KeyPath = tuple[str | int, ...]


@dataclass(frozen=True)
class Finding:
    severity: Severity
    key: KeyPath  # the config key, relative to the search tool's entry
    field: str  # the field in the mapping
    message: str


def _key(spec: SearchSpec, name: str, default: KeyPath) -> KeyPath:
    """Where ``name``'s path is configured: its ``field_paths`` entry, else the spec key naming it."""
    return ("field_paths", name) if name in spec.field_paths else default


def _exact(spec: SearchSpec, name: str, key: KeyPath, role: str, fields: Mapping[str, MappedField]) -> list[Finding]:
    path = spec.engine_path(name)
    found = fields.get(path)
    where = _key(spec, name, key)
    if found is None:
        return [Finding("error", where, path, f"the {role} field {path!r} does not exist in the index mapping")]
    if found.in_nested:
        return [
            Finding(
                "error",
                where,
                path,
                f"the {role} field {path!r} is inside a nested object; plain queries "
                "do not reach it (map it as an object field, or copy_to a top-level keyword field)",
            )
        ]
    if found.exact:
        return []
    if found.text and keyword_sub_field(found, fields) is not None:
        return []
    kinds = "/".join(sorted(found.types))
    hint = " without a keyword sub-field" if found.text else ""
    return [
        Finding(
            "error",
            where,
            path,
            f"the {role} field {path!r} is {kinds}{hint}; it must be exact-match "
            "(keyword, or a text field with a keyword sub-field)",
        )
    ]


def spec_findings(spec: SearchSpec, fields: Mapping[str, MappedField]) -> list[Finding]:
    """Every way the mapping fails ``spec`` (no value checks: see :func:`value_findings`)."""
    out: list[Finding] = []
    out += _exact(spec, spec.tenant_field, ("tenant_field",), "tenant", fields)
    if spec.group_field:
        out += _exact(spec, spec.group_field, ("group_field",), "group", fields)
    out += _exact(spec, spec.id_field, ("id_field",), "id", fields)
    for i, fil in enumerate(spec.filters):
        out += _exact(spec, fil.name, ("filters", i, "name"), f"filter {fil.name!r}", fields)
    for i, name in enumerate(spec.keyword_fields):
        if spec.filter_named(name) is None:
            out += _exact(spec, name, ("keyword_fields", i), "keyword", fields)
    for i, text in enumerate(spec.text_fields):
        path = spec.engine_path(text.name)
        found = fields.get(path)
        where = _key(spec, text.name, ("text_fields", i))
        if found is None:
            out.append(Finding("error", where, path, f"the text field {path!r} does not exist in the index mapping"))
        elif found.in_nested:
            out.append(Finding("error", where, path, f"the text field {path!r} is inside a nested object"))
        elif not found.text:
            kinds = "/".join(sorted(found.types))
            out.append(Finding("error", where, path, f"the text field {path!r} is {kinds}, not text"))
    if spec.date_field:
        path = spec.engine_path(spec.date_field)
        found = fields.get(path)
        if found is None or "date" not in found.types:
            what = "does not exist" if found is None else f"is {'/'.join(sorted(found.types))}, not date"
            where = _key(spec, spec.date_field, ("date_field",))
            out.append(Finding("error", where, path, f"the date field {path!r} {what}"))
    for i, name in enumerate(spec.result_fields):
        path = spec.engine_path(name)
        if path not in fields:
            where = _key(spec, name, ("result_fields", i))
            out.append(Finding("error", where, path, f"the result field {path!r} does not exist in the index mapping"))
    return out


def query_findings(spec: SearchSpec, fields: Mapping[str, MappedField], engine: str) -> list[Finding]:
    """Elasticsearch's combined_fields query (the existing-index default there) needs one search analyzer
    over all the text fields; the engine refuses it otherwise."""
    if not spec.existing or spec.field_combination != "combined_fields":
        return []
    if EXISTING_COMBINED.get(engine) != "combined_fields":
        return []
    analyzers = {a for t in spec.text_fields for a in getattr(fields.get(spec.engine_path(t.name)), "analyzers", ())}
    if len(analyzers) <= 1:
        return []
    return [Finding("error", ("field_combination",), ", ".join(spec.engine_path(t.name) for t in spec.text_fields),
                    f"Elasticsearch's combined_fields query needs one search analyzer over the text fields, which "
                    f"use {', '.join(sorted(analyzers))}: choose best_fields or most_fields")]  # fmt: skip


def snippet_findings(spec: SearchSpec, fields: Mapping[str, MappedField]) -> list[Finding]:
    """Info when engine snippets must re-analyse (or walk the postings of) each hit's snippet field: on long
    texts that is as long again as the search (bench/results/existing_snippets.md); term vectors with
    offsets let the fast vector highlighter cut the same window from them."""
    if not spec.existing or spec.snippets != "engine":
        return []
    path = spec.engine_path(spec.snippet_field)
    found = fields.get(path)
    if found is None or not found.text or found.offsets == "term_vectors":
        return []
    how = "re-analyses" if found.offsets == "analysis" else "walks the offsets in the postings of"
    return [Finding("info", ("snippet_field",), path,
                    f"engine snippets: the highlighter {how} each hit's {path!r} to cut its snippet, which on long "
                    f"texts (~30 KB) costs about as much as the search itself; with \"term_vector\": "
                    f"\"with_positions_offsets\" on {path!r} (a new index and a reindex) scopegate uses the fast "
                    f"vector highlighter instead (or set snippets: local)")]  # fmt: skip


def value_findings(spec: SearchSpec, seen: Mapping[str, Sequence[str]]) -> list[Finding]:
    """Warnings for configured filter values the index never saw (``seen``: filter name -> values present)."""
    out: list[Finding] = []
    for i, fil in enumerate(spec.filters):
        if fil.name not in seen:
            continue
        missing = [v for v in fil.allowed if v not in set(seen[fil.name])]
        if missing:
            shown = ", ".join(repr(v) for v in missing[:10]) + (" ..." if len(missing) > 10 else "")
            out.append(
                Finding(
                    "warning",
                    ("filters", i, "allowed"),
                    spec.engine_path(fil.name),
                    f"no document has {fil.name} = {shown} (the model may choose them and find nothing)",
                )
            )
    return out


def filter_values_body(spec: SearchSpec, query_paths: Mapping[str, str]) -> dict[str, object]:
    """A ``size: 0`` search asking, per filter, which of its allowed values occur (whole index, no scores)."""
    aggs: dict[str, object] = {}
    for i, fil in enumerate(spec.filters):
        path = query_paths.get(fil.name, fil.name)
        aggs[f"f{i}"] = {"terms": {"field": path, "include": list(fil.allowed), "size": len(fil.allowed)}}
    return {"size": 0, "track_total_hits": False, "aggs": aggs}


def parse_filter_values(spec: SearchSpec, response: Mapping[str, object]) -> dict[str, list[str]]:
    found = response.get("aggregations")
    aggs = found if isinstance(found, Mapping) else {}
    out: dict[str, list[str]] = {}
    for i, fil in enumerate(spec.filters):
        agg = aggs.get(f"f{i}")
        if isinstance(agg, Mapping):
            out[fil.name] = [str(b.get("key")) for b in agg.get("buckets") or [] if isinstance(b, Mapping)]
    return out
