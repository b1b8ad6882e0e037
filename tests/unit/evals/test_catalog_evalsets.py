"""The catalog eval sets over large specs (bench/evalsets/catalog) cannot rot.

Every operation a case names (expected, forbidden, attacked) is served by the config it runs
against: an allowlisted operation of the spec, behind the catalog or declared flat. The specs are
read from ../shared/data (skipped when absent). Nothing is sent: the configs are built offline.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest

from scopegate.evals.evalset import check_tools, load_eval_set, tool_references
from scopegate.evals.targets import config_tool_names

_NAMES: dict[str, set[str]] = {}

SETS = Path(__file__).resolve().parents[3] / "bench" / "evalsets" / "catalog"
SPECS = {"chargebee": "chargebee_api_v1_spec.json", "cloudflare": "cloudflare-openapi-2024-06-27.json"}


@pytest.fixture
def spec_env(shared: Callable[..., Path], monkeypatch: pytest.MonkeyPatch) -> None:
    for name in SPECS.values():
        shared("openapi", name)
    monkeypatch.setenv("SCOPEGATE_SPEC_DIR", str(shared("openapi")))
    monkeypatch.setenv("CHARGEBEE_API_KEY", "unused")
    monkeypatch.setenv("CHARGEBEE_API_PASSWORD", "unused")
    monkeypatch.setenv("CLOUDFLARE_API_TOKEN", "unused")
    monkeypatch.setenv("CLOUDFLARE_EMAIL", "unused")
    monkeypatch.setenv("CLOUDFLARE_API_KEY", "unused")


def names(config: str) -> set[str]:
    """The tools and catalog operations a config serves (built once per test session)."""
    if config not in _NAMES:
        _NAMES[config] = set(asyncio.run(config_tool_names(SETS / config)))
    return _NAMES[config]


@pytest.mark.parametrize("spec", sorted(SPECS))
def test_each_set_has_40_cases_of_every_kind(spec: str) -> None:
    cases = load_eval_set(SETS / f"{spec}.evalset.json").cases
    assert len(cases) >= 40
    tags = {t for c in cases for t in c.spec.tags}
    assert {"read", "write", "outside-allowlist", "token-scope", "ownership", "injection"} <= tags
    for case in cases:  # every turn that may change data asks the simulated user, or is a decline
        assert case.state["tenant_id"] and case.state["user_id"] and case.state["granted_scopes"]


@pytest.mark.parametrize("spec", sorted(SPECS))
def test_every_named_operation_is_served_by_the_catalog(spec: str, spec_env: None) -> None:
    eval_set = load_eval_set(SETS / f"{spec}.evalset.json")
    check_tools(eval_set, sorted(names(f"{spec}.catalog.yaml")), spec)  # raises naming the case and key


@pytest.mark.parametrize("spec", sorted(SPECS))
def test_the_flat_configs_serve_the_same_or_a_declared_subset(spec: str, spec_env: None) -> None:
    catalog = names(f"{spec}.catalog.yaml")
    flat = names(f"{spec}.flat.yaml")
    reduced = names(f"{spec}.flat-reduced.yaml")
    operations = catalog - {"find_operations", "describe_operation", "call_operation"}
    assert flat == operations  # the whole allowlist, declared one by one
    assert reduced < operations
    cases = load_eval_set(SETS / f"{spec}.evalset.json").cases
    runnable = [c for c in cases if all(n in reduced for _k, n in tool_references(c))]
    assert len(runnable) >= 40  # the flat-reduced row still runs most cases
