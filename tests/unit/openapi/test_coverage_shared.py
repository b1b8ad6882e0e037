"""Every operation of every shared real spec translates into a valid declaration.

Checks per declaration: it validates as ``google.genai.types.FunctionDeclaration``
(and its parameters as ``google.genai.types.JSONSchema``), its JSON Schema form
validates against the 2020-12 meta-schema, and its name is unique and at most
64 characters. Writes a per-spec table to bench/results/openapi_coverage.md.
"""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
from google.genai import types

from scopegate.openapi.loader import load_document
from scopegate.openapi.translate import ToolDeclaration, translate

from .conftest import REPO, SHARED_OPENAPI

SPEC_FILES = sorted(
    p.relative_to(SHARED_OPENAPI).as_posix()
    for p in (SHARED_OPENAPI.rglob("*") if SHARED_OPENAPI.is_dir() else [])
    if p.suffix in (".json", ".yaml", ".yml")
)
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


@pytest.mark.skipif(not SPEC_FILES, reason=f"shared OpenAPI specs not found at {SHARED_OPENAPI}")
@pytest.mark.parametrize("name", SPEC_FILES)
def test_every_operation_translates(name: str) -> None:
    doc = load_document(SHARED_OPENAPI / name)
    infos = doc.infos()
    result = translate(doc, strict=False)
    failures = dict(result.failures)
    for tool in result.tools:
        problems = _problems(tool)
        if problems:
            failures[tool.operation.label] = "; ".join(problems)
    names = [t.name for t in result.tools]
    duplicates = {n for n in names if names.count(n) > 1}
    for tool in result.tools:
        if tool.name in duplicates:
            failures[tool.operation.label] = f"duplicate tool name {tool.name}"
    sizes = [len(json.dumps(t.function_declaration().model_dump(exclude_none=True, mode="json"))) for t in result.tools]
    _rows[name] = {
        "dialect": doc.dialect,
        "operations": len(infos),
        "translated": len(infos) - len(failures),
        "failures": failures,
        "median_chars": sorted(sizes)[len(sizes) // 2] if sizes else 0,
        "max_chars": max(sizes, default=0),
    }
    _write_table()
    assert not failures, failures
    assert len(result.tools) == len(infos)
    # the lookup table maps every name back to exactly one operation
    assert len(result.names()) == len(infos)


def _write_table() -> None:
    lines = [
        "# OpenAPI coverage on the shared real specs",
        "",
        "Every operation of every spec in ../shared/data/openapi, translated by scopegate. A declaration counts",
        "as translated when it validates as google.genai FunctionDeclaration (parameters as genai JSONSchema),",
        "against the JSON Schema 2020-12 meta-schema, and has a unique name of at most 64 characters.",
        "Written by tests/unit/openapi/test_coverage_shared.py.",
        "",
        "| spec | dialect | operations | translated | median decl chars | max decl chars | failures |",
        "|---|---|---|---|---|---|---|",
    ]
    total_ops = total_ok = 0
    for name in sorted(_rows):
        r = _rows[name]
        total_ops += r["operations"]
        total_ok += r["translated"]
        fails = "; ".join(f"{k}: {v}" for k, v in sorted(r["failures"].items())) or "none"
        lines.append(
            f"| {name} | {r['dialect']} | {r['operations']} | {r['translated']} | {r['median_chars']} | "
            f"{r['max_chars']} | {fails} |"
        )
    lines.append(f"| **total** | | **{total_ops}** | **{total_ok}** | | | |")
    out = REPO / "bench" / "results" / "openapi_coverage.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n", "utf-8")
