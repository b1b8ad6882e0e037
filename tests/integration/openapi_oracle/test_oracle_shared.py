"""The independent oracle, fast subset: built requests validate against the original specs.

A fixed sample (3 operations per shared spec, seed 11) plus every operation of a
synthetic expandable-field spec: arguments generated from the declaration,
sent by the real OperationTool to a loopback catch-all, and what arrived is
validated by openapi-core and by an independent decoder (see
scopegate_lab.openapi_oracle). The full run over every operation is
bench/bench_openapi_oracle.py (results in bench/results/openapi_oracle.md).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from scopegate.openapi import serialize
from scopegate.openapi.discover import find_documents
from scopegate_lab.openapi_oracle import check_spec
from scopegate_lab.openapi_synth import expandable_web

REPO = Path(__file__).resolve().parents[3]
SHARED_OPENAPI = REPO.parent / "shared" / "data" / "openapi"
SPEC_FILES = [p.relative_to(SHARED_OPENAPI).as_posix() for p in find_documents(SHARED_OPENAPI)]
PER_SPEC = 3
SEED = 11


def _findings(report: Any) -> list[str]:
    return [
        f"{r.label}: {r.status} {r.reason} {r.problems[:3]}"
        for r in report.results
        if r.status in ("mismatch", "error")
    ]


@pytest.mark.skipif(not SPEC_FILES, reason=f"shared OpenAPI specs not found at {SHARED_OPENAPI}")
@pytest.mark.parametrize("name", SPEC_FILES)
def test_sampled_operations_validate_against_the_original_spec(name: str) -> None:
    report = check_spec(SHARED_OPENAPI / name, name, per_spec=PER_SPEC, seed=SEED, requests_per_operation=1)
    summary = report.summary()
    assert not _findings(report)
    assert summary["mismatches"] == 0 and summary["errors"] == 0
    for result in report.results:
        if result.status == "skipped":
            assert "multipart" in result.reason or "binary" in result.reason, result.reason
    if summary["checked"]:
        assert (
            summary["operations_validated"] + summary["refused_by_runtime"] + summary["skipped"] == summary["checked"]
        )


def test_every_operation_of_a_synthetic_payments_api() -> None:
    report = check_spec(expandable_web(10, 60), "synthetic-web-10", seed=SEED, requests_per_operation=1)
    summary = report.summary()
    assert not _findings(report)
    assert summary["operations_validated"] == 60
    # Form bodies with deepObject encodings: openapi-core cannot judge the nested ones; the independent oracle does.
    assert summary["requests_validated"] >= 60


def test_the_oracle_catches_a_wrong_serialisation(monkeypatch: pytest.MonkeyPatch) -> None:
    """A serialiser that sends deepObject as plain form pairs must be caught."""
    spec = {
        "openapi": "3.0.3",
        "info": {"title": "t", "version": "1"},
        "servers": [{"url": "https://api.example.test/v1"}],
        "paths": {
            "/items": {
                "get": {
                    "operationId": "list",
                    "parameters": [
                        {
                            "name": "filter",
                            "in": "query",
                            "required": True,
                            "style": "deepObject",
                            "explode": True,
                            "schema": {
                                "type": "object",
                                "required": ["state"],
                                "properties": {"state": {"type": "string", "enum": ["open", "closed"]}},
                                "additionalProperties": False,
                            },
                        }
                    ],
                    "responses": {"200": {"description": "ok"}},
                }
            }
        },
    }
    assert check_spec(spec, "good").summary()["mismatches"] == 0
    real = serialize.style_pairs

    def wrong(name: str, value: Any, style: str, explode: bool, **kw: Any) -> list[tuple[str, str]]:
        return real(name, value, "form" if style == "deepObject" else style, explode, **kw)

    monkeypatch.setattr(serialize, "style_pairs", wrong)
    report = check_spec(spec, "sabotaged")
    assert report.summary()["mismatches"] == 1
    assert any("filter" in p for p in report.results[0].problems)
