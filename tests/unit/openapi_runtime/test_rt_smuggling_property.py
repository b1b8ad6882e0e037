"""Property, over every operation of every shared spec: no model argument smuggles a reserved name.

For each operation, up to three arguments are bound from "session state" (the first scalar
path, query/header/cookie parameter and body property), and the reserved names are
those plus the credentials: every API-key name of the spec, the inputs the translation kept from the
model as credentials, ``access_token`` where the spec uses bearer tokens, and the credential-like
names the operation does not declare itself. Every other argument then gets
hostile values (objects whose keys are the reserved names in every spelling, strings with
``&name=`` and ``; name=`` in them, arrays of both), one argument at a time. Each request is either
refused (the builder's own validation, or the reserved-name check the tool runs) or, read back as a
server reads it, carries each bound name only with its bound value and no credential name at all.

The specs are read from ../shared/data/openapi (skipped when absent). About 10-20 s in all.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from smuggling_oracle import collides, hostile_variants, norm, valid_value, wire_pairs

from scopegate.errors import ArgumentsInvalid, ScopegateError
from scopegate.openapi.loader import load_document
from scopegate.openapi.model import SecurityScheme, ToolBinding
from scopegate.openapi.runtime.request import RequestBuilder, UnsupportedOperation
from scopegate.openapi.runtime.reserved_names import ReservedNames, undeclared_credential_names
from scopegate.openapi.translate import SENSITIVE_NAMES, translate

DATA = Path(__file__).resolve().parents[3].parent / "shared" / "data" / "openapi"
BASE = "https://api.example.test"
BOUND_VALUE = "alice-7"


_ROOT = re.compile(rb'^(?:openapi|swagger)[ \t]*:|"(?:openapi|swagger)"\s*:', re.M)


def _is_root(path: Path) -> bool:
    """A spec document, not a fragment of a multi-file spec (only the root names its version)."""
    return _ROOT.search(path.read_bytes()) is not None


SPECS = sorted(
    p.relative_to(DATA).as_posix()
    for p in (DATA.rglob("*") if DATA.is_dir() else [])
    if p.suffix in (".json", ".yaml", ".yml") and _is_root(p)
)


def _schema_of(binding: ToolBinding, location: str, name: str | None) -> Any:
    if location == "body_property":
        props = (binding.body_schema or {}).get("properties") or {}
        return props.get(name or "", {})
    if location == "body":
        return binding.body_schema or {}
    param = binding.parameters_by_key.get((location, name or ""))
    return param.schema if param is not None else {}


def _scalar(schema: Any) -> bool:
    typ = schema.get("type") if isinstance(schema, dict) else None
    return typ in ("string", "integer") and not schema.get("enum") and not schema.get("pattern")


def _bound_choice(binding: ToolBinding) -> list[str]:
    chosen: list[str] = []
    for group in (("path",), ("query", "header", "cookie"), ("body_property",)):
        for am in binding.arguments:
            if am.location in group and _scalar(_schema_of(binding, am.location, am.original_name)):
                chosen.append(am.argument)
                break
    return chosen


def _credential_names(
    binding: ToolBinding, schemes: Mapping[str, SecurityScheme], *, generic: bool = True
) -> list[str]:
    """What must never come from the model: API-key names, credential inputs, RFC 6750's access_token."""
    names = {s.name.lower() for s in schemes.values() if s.type == "apiKey" and s.name}
    names |= {o.name.lower() for o in binding.omitted if o.reason == "credential"}
    # an input the operation declares itself (Discord's access_token body field) is its own, not reserved
    own = {norm(am.original_name) for am in binding.arguments if am.original_name}
    if any(s.type in ("oauth2", "openIdConnect") or s.scheme == "bearer" for s in schemes.values()):
        names |= {"access_token"} - own
    if generic:
        names |= {n for n in SENSITIVE_NAMES if norm(n) not in own}  # credential-like names
    return sorted(names)


def _check_operation(binding: ToolBinding, schemes: Mapping[str, SecurityScheme], stats: Counter[str]) -> None:
    bind = _bound_choice(binding)
    credential_names = _credential_names(binding, schemes)
    guard = ReservedNames.build(  # as OperationTool builds it
        binding, bound=bind, schemes=schemes, credential_names=undeclared_credential_names(binding, SENSITIVE_NAMES)
    )
    try:
        builder = RequestBuilder(binding, BASE, hidden=(*bind, *guard.shadowed))  # as OperationTool does
    except UnsupportedOperation:
        stats["unsupported"] += 1
        return
    stats["shadowed"] += len(guard.shadowed)
    bound_args = [am for am in binding.arguments if am.argument in bind and am.original_name]
    bound_names = [norm(am.original_name or "") for am in bound_args if am.location != "path"]
    # a bound path value has no name on the wire: its name may not appear at all (like a credential's)
    path_names = {norm(am.original_name or "") for am in bound_args if am.location == "path"}
    never = [*credential_names, *(n for n in path_names if n not in bound_names)]
    bound = {a: BOUND_VALUE for a in bind}
    reserved = [*bound_names, *never]
    # one at a time: the bound names and the spec's own credential inputs (not every generic secret name)
    spec_credentials = _credential_names(binding, schemes, generic=False)
    focus = [*bound_names, *(n for n in never if n in spec_credentials or n in path_names)]
    valid = {
        am.argument: valid_value(_schema_of(binding, am.location, am.original_name))
        for am in binding.arguments
        if am.required and am.argument in builder.model_arguments
    }
    stats["operations"] += 1
    for am in binding.arguments:
        if am.argument not in builder.model_arguments:
            continue
        schema = _schema_of(binding, am.location, am.original_name)
        for hostile in hostile_variants(valid.get(am.argument), schema, reserved, focus):
            args = {**valid, am.argument: hostile}
            stats["attempts"] += 1
            try:
                built = builder.build(args, bound=bound)
            except ArgumentsInvalid:
                stats["refused by validation"] += 1
                continue
            if guard.check(built, {**args, **bound}):
                stats["refused by the reserved-name check"] += 1
                continue
            stats["sent"] += 1
            for name, value in wire_pairs(built):
                for reserved_name in never:
                    assert not collides(name, reserved_name), (binding.tool_name, am.argument, name, built.describe())
                for reserved_name in bound_names:
                    if collides(name, reserved_name):
                        assert value == BOUND_VALUE, (binding.tool_name, am.argument, name, value, built.describe())


@functools.cache
def sweep(name: str) -> Counter[str]:
    """Check every operation of one spec (asserting on the way); what happened, counted."""
    stats: Counter[str] = Counter()
    try:
        doc = load_document(DATA / name, allow_external_refs=True)
        tools = translate(doc, strict=False).tools
    except ScopegateError:
        stats["unreadable"] += 1
        return stats
    stats["tools"] = len(tools)
    for tool in tools:
        _check_operation(tool.binding, doc.security_schemes, stats)
    return stats


@pytest.mark.skipif(not SPECS, reason=f"shared OpenAPI specs not found at {DATA}")
@pytest.mark.parametrize("name", SPECS)
def test_no_argument_smuggles_a_bound_or_credential_name(name: str) -> None:
    stats = sweep(name)
    if stats["unreadable"]:
        pytest.skip(f"the loader cannot read {name}")
    assert stats["operations"] + stats["unsupported"] == stats["tools"]  # every operation was checked


@pytest.mark.skipif(not SPECS, reason=f"shared OpenAPI specs not found at {DATA}")
def test_the_sweep_reaches_the_wire_and_the_check() -> None:
    """Not vacuous: hostile values were sent (and smuggled nothing), and some were refused by the check."""
    total: Counter[str] = Counter()
    for name in SPECS:
        total.update(sweep(name))
    assert total["operations"] >= 1000, total
    assert total["sent"] >= 1000, total
    assert total["refused by the reserved-name check"] > 0, total
