"""The config's scope section: where ADK tools read scope (binding, signed, state), strictness, keys."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from scopegate.adapters.adk_scope import ScopePolicy, source_from_environment
from scopegate.config import ConfigValidationError, build_app, load_config
from scopegate.errors import ConfigError
from scopegate.identity import KeyRing, SignedStateSource, UserDirectory

Write = Callable[..., Path]
SECRET = KeyRing.new_secret()


def problems(path: Path, environ: dict[str, str] | None = None) -> dict[str, str]:
    with pytest.raises(ConfigValidationError) as info:
        load_config(path, environ=environ or {})
    return {p.path: p.message for p in info.value.problems}


def test_defaults_keep_the_old_behaviour_loudly(base: dict[str, Any], write: Write) -> None:
    scope = load_config(write(base), environ={}).scope
    assert (scope.source, scope.strict, scope.signing_keys, scope.identity_source) == ("auto", False, None, None)
    policy = ScopePolicy.from_config(scope, {})
    assert policy.source == "state" and not policy.declared  # warns at the first invocation


def test_source_signing_keys_strict_and_keys(base: dict[str, Any], write: Write) -> None:
    base["scope"] = {"state_keys": {"tenant": "org", "user": "uid"}, "signing_keys": "${KEYS}", "strict": True,
                     "passthrough": ["locale"]}  # fmt: skip
    scope = load_config(write(base), environ={"KEYS": f"k1:{SECRET}"}).scope
    assert SECRET not in repr(scope)
    policy = ScopePolicy.from_config(scope, {})
    assert (policy.source, policy.strict, policy.passthrough) == ("signed", True, ("locale",))
    assert policy.keys.tenant == "org" and policy.keys.user == "uid" and policy.ring is not None
    base["scope"] = {"source": "binding"}
    assert ScopePolicy.from_config(load_config(write(base), environ={}).scope, {}).source == "binding"
    # the environment fills what the config leaves open
    base["scope"] = {}
    env = {"SCOPEGATE_SCOPE_STRICT": "1", "SCOPEGATE_SCOPE_SOURCE": "binding"}
    policy = ScopePolicy.from_config(load_config(write(base), environ={}).scope, env)
    assert policy.source == "binding" and policy.strict


def test_key_file(base: dict[str, Any], write: Write, tmp_path: Path) -> None:
    (tmp_path / "keys.txt").write_text(f"k9:{SECRET}\n", "utf-8")
    base["scope"] = {"signing_keys_file": "keys.txt", "source": "signed"}
    policy = ScopePolicy.from_config(load_config(write(base), environ={}).scope, {})
    assert policy.ring is not None and policy.ring.kids == ("k9",)
    base["scope"] = {"signing_keys_file": "missing.txt"}
    with pytest.raises(ConfigError, match="cannot read"):
        ScopePolicy.from_config(load_config(write(base), environ={}).scope, {})


@pytest.mark.parametrize(
    ("scope", "where", "fragment"),
    [
        ({"source": "signed"}, "scope", "needs signing_keys"),
        ({"signing_keys": "k:x", "signing_keys_file": "f"}, "scope", "not both"),
        ({"source": "cookies"}, "scope.source", "auto"),
        ({"identity_source": "not a path"}, "scope.identity_source", "does not match"),
        ({"strict": "yes"}, "scope.strict", "bool"),
    ],
)
def test_bad_scope_sections(
    base: dict[str, Any], write: Write, scope: dict[str, Any], where: str, fragment: str
) -> None:
    base["scope"] = scope
    found = problems(write(base))
    assert where in found and fragment in found[where], found


async def test_config_tools_use_the_configured_policy(base: dict[str, Any], write: Write) -> None:
    base["scope"] = {"source": "binding"}
    app = await build_app(load_config(write(base), environ={}), offline=True)
    try:
        assert {t.scope_policy.source for t in app.adk_tools()} == {"binding"}
    finally:
        await app.aclose()
    base["scope"] = {"strict": True}
    app = await build_app(load_config(write(base), environ={}), offline=True)
    try:
        with pytest.raises(ConfigError, match="strict"):
            app.adk_tools()
    finally:
        await app.aclose()


def test_plugin_source_from_the_config(base: dict[str, Any], write: Write) -> None:
    base["scope"] = {"identity_source": "os:environ"}
    assert isinstance(source_from_environment({"SCOPEGATE_CONFIG": str(write(base))}), UserDirectory)
    base["scope"] = {"signing_keys": f"k:{SECRET}"}
    assert isinstance(source_from_environment({"SCOPEGATE_CONFIG": str(write(base))}), SignedStateSource)
