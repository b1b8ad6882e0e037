"""Every operation of every shared real spec translates into a valid declaration, or is refused, counted.

The specs are the OpenAPI/Swagger *documents* under ../shared/data/openapi,
found by content (the two multi-file specs are one root each, loaded with
external refs allowed, rooted at their folder). Checks per declaration: it
validates as ``google.genai.types.FunctionDeclaration`` (and its parameters
as ``google.genai.types.JSONSchema``), its JSON Schema form validates against
the 2020-12 meta-schema, and its name is unique and at most 64 characters.
The only refusal allowed is a required request body the runtime cannot send
(multipart or binary). And nothing is dropped silently: for every operation the
declared inputs plus the listed omissions are exactly the spec's own inputs
(read independently, see test_accounting_shared.py). Writes a per-spec table, with the omitted inputs by
reason, to bench/results/openapi_coverage.md and .json.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import jsonschema
import pytest
from google.genai import types

from scopegate.openapi.discover import find_documents
from scopegate.openapi.inventory import inventory
from scopegate.openapi.loader import load_document
from scopegate.openapi.naming import tool_names
from scopegate.openapi.translate import ToolDeclaration

from .conftest import REPO, SHARED_OPENAPI
from .test_accounting_shared import accounting_mismatches

SPEC_FILES = [p.relative_to(SHARED_OPENAPI).as_posix() for p in find_documents(SHARED_OPENAPI)]
_rows: dict[str, dict[str, Any]] = {}


def _problems(tool: ToolDeclaration) -> list[str]:
    problems: list[str] = []
    try:
        decl = types.FunctionDeclaration.model_validate(tool.function_declaration().model_dump())
        if decl.parameters_json_schema != tool.parameters:
            problems.append("FunctionDeclaration changed the parameters")
        types.JSONSchema.model_validate(tool.parameters)
    except Exception as exc:
        problems.append(f"genai: {str(exc).splitlines()[0:3]}")
    try:
        jsonschema.Draft202012Validator.check_schema(tool.json_schema())
    except jsonschema.SchemaError as exc:
        problems.append(f"meta-schema: {exc.message}")
    if len(tool.name) > 64:
        problems.append(f"name longer than 64: {tool.name}")
    if _has_ref_keyword(tool.parameters):
        problems.append("unresolved $ref")
    return problems


def _has_ref_keyword(schema: Any) -> bool:
    """True if ``$ref`` is used as a keyword (a property *named* "$ref" is fine)."""
    if isinstance(schema, list):
        return any(_has_ref_keyword(s) for s in schema)
    if not isinstance(schema, dict):
        return False
    if "$ref" in schema:
        return True
    for key, value in schema.items():
        if key == "properties" and isinstance(value, dict):
            if any(_has_ref_keyword(v) for v in value.values()):
                return True
        elif key in ("items", "additionalProperties", "anyOf") and _has_ref_keyword(value):
            return True
    return False


def _refusal_allowed(reason: str) -> bool:
    """Only a required body whose every media type is multipart or binary may be refused."""
    offered = reason.partition("offered: ")[2].removesuffix(")").split(", ")
    return "unsupported_media_type" in reason and all(t.endswith(("(multipart)", "(binary)")) for t in offered)


def test_documents_are_found_by_content() -> None:
    if not SHARED_OPENAPI.is_dir():
        pytest.skip(f"shared OpenAPI specs not found at {SHARED_OPENAPI}")
    assert "digitalocean/DigitalOcean-public.v2.yaml" in SPEC_FILES and "lob/lob-api-public.yml" in SPEC_FILES
    # Of the ~3,400 files under the two multi-file folders only their roots are documents.
    assert [f for f in SPEC_FILES if f.startswith(("digitalocean/", "lob/"))] == [
        "digitalocean/DigitalOcean-public.v2.yaml",
        "lob/lob-api-public.yml",
    ]


@pytest.mark.skipif(not SPEC_FILES, reason=f"shared OpenAPI specs not found at {SHARED_OPENAPI}")
@pytest.mark.parametrize("name", SPEC_FILES)
def test_every_operation_translates(name: str) -> None:
    doc = load_document(SHARED_OPENAPI / name, allow_external_refs=True)
    infos = doc.infos()
    assert not doc.problems
    inv = inventory(doc)
    names = tool_names(infos)
    failures: dict[str, str] = {}
    refused: dict[str, str] = {}
    tools: list[ToolDeclaration] = []
    omitted: Counter[str] = Counter()
    for row in inv.rows:
        if not row.translatable:
            (refused if _refusal_allowed(row.reason) else failures)[row.info.label] = row.reason
            continue
        omitted.update(o.reason for o in row.omitted)
        assert row.declaration is not None and row.declaration.name == names[row.info.key]
        tool = row.declaration
        tools.append(tool)
        problems = _problems(tool)
        if problems:
            failures[row.info.label] = "; ".join(problems)
    tool_list = [t.name for t in tools]
    for tool in tools:
        if tool_list.count(tool.name) > 1:
            failures[tool.operation.label] = f"duplicate tool name {tool.name}"
    sizes = [len(json.dumps(t.function_declaration().model_dump(exclude_none=True, mode="json"))) for t in tools]
    _rows[name] = {
        "dialect": doc.dialect,
        "operations": len(infos),
        "translated": len([t for t in tools if t.operation.label not in failures]),
        "refused": dict(sorted(refused.items())),
        "omitted": dict(sorted(omitted.items())),
        "failures": failures,
        "median_chars": sorted(sizes)[len(sizes) // 2] if sizes else 0,
        "max_chars": max(sizes, default=0),
    }
    _rows[name]["accounting_mismatches"] = mismatches = accounting_mismatches(SHARED_OPENAPI / name, doc, inv.rows)
    _write_table()
    assert not failures, failures
    assert len(tools) + len(refused) == len(infos)
    # Nothing dropped silently: declared + listed omissions == the spec's own inputs (test_accounting_shared.py).
    assert not mismatches, dict(list(mismatches.items())[:10])


def _write_table() -> None:
    if set(_rows) != set(SPEC_FILES):  # a partial run (-k, one spec) leaves the full table alone
        return
    lines = [
        "# OpenAPI coverage on the shared real specs",
        "",
        "Every operation of every OpenAPI/Swagger document in ../shared/data/openapi (found by content; the",
        "two multi-file specs are loaded from their root with external refs allowed), translated by scopegate.",
        "A declaration counts as translated when it validates as google.genai FunctionDeclaration (parameters",
        "as genai JSONSchema), against the JSON Schema 2020-12 meta-schema, and has a unique name of at most",
        "64 characters. *Refused*: a required request body the runtime cannot send (multipart, binary).",
        "*Omitted inputs*: what the declarations leave out, by reason (credential / reserved_header /",
        "read_only are supplied by the runtime or the server; the others are not carried, and listed by",
        "`scopegate openapi inventory`). Written by tests/unit/openapi/test_coverage_shared.py.",
        "",
        "| spec | dialect | operations | translated | refused | omitted inputs by reason | median decl chars "
        "| max decl chars | failures |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    total = Counter[str]()
    for name in sorted(_rows):
        r = _rows[name]
        total.update(operations=r["operations"], translated=r["translated"], refused=len(r["refused"]))
        fails = "; ".join(f"{k}: {v}" for k, v in sorted(r["failures"].items())) or "none"
        omitted = ", ".join(f"{k} {v}" for k, v in r["omitted"].items()) or "–"
        lines.append(
            f"| {name} | {r['dialect']} | {r['operations']} | {r['translated']} | {len(r['refused'])} | {omitted} "
            f"| {r['median_chars']} | {r['max_chars']} | {fails} |"
        )
    lines.append(
        f"| **total** | | **{total['operations']}** | **{total['translated']}** | **{total['refused']}** | | | | |"
    )
    out = REPO / "bench" / "results" / "openapi_coverage.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n", "utf-8")
    out.with_suffix(".json").write_text(json.dumps(_rows, indent=2, sort_keys=True) + "\n", "utf-8")
