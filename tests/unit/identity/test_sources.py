"""Identity sources, the bearer-token carrier, and how the ADK scope policy resolves a tool's state."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

from scopegate.adapters.adk_scope import (
    BOUND_KEY,
    BoundScope,
    ScopePolicy,
    resolve_state,
    source_from_environment,
)
from scopegate.errors import ConfigError
from scopegate.identity import (
    FunctionSource,
    Identity,
    IdentityRequest,
    KeyRing,
    SignedStateSource,
    SigningKey,
    TokenSource,
    UserDirectory,
    as_source,
)
from scopegate.identity.asgi import bearer_token
from scopegate.scope import ScopeKeys

ALICE = Identity("acme", "alice", ("g1",))


def request(**kw: Any) -> IdentityRequest:
    base: dict[str, Any] = {"app_name": "app", "user_id": "alice", "session_id": "s1", "invocation_id": "e-1"}
    return IdentityRequest(**{**base, **kw})


async def test_directory_mapping_function_and_async_function() -> None:
    assert await UserDirectory({"alice": ALICE}).resolve(request()) == ALICE
    assert await UserDirectory({"alice": ALICE}).resolve(request(user_id="bob")) is None
    assert await UserDirectory(lambda uid: ALICE if uid == "alice" else None).resolve(request()) == ALICE

    async def lookup(uid: str) -> Identity | None:
        await asyncio.sleep(0)
        return ALICE

    assert await UserDirectory(lookup).resolve(request()) == ALICE
    assert await UserDirectory({"alice": "acme"}).resolve(request()) is None  # type: ignore[dict-item]


async def test_token_source() -> None:
    source = TokenSource({"t-alice": ALICE}.get)
    assert await source.resolve(request(token="t-alice")) == ALICE
    assert await source.resolve(request(token="t-bob")) is None
    assert await source.resolve(request()) is None
    matched = TokenSource({"t-alice": ALICE}.get, require_user_match=True)
    assert await matched.resolve(request(token="t-alice", user_id="mallory")) is None


async def test_function_source_must_return_an_identity() -> None:
    assert await FunctionSource(lambda r: Identity(r.user_id)).resolve(request()) == Identity("alice")
    with pytest.raises(TypeError):
        await FunctionSource(lambda r: {"tenant": "acme"}).resolve(request())  # type: ignore[arg-type,return-value]


async def test_signed_state_source() -> None:
    ring = KeyRing([SigningKey("k", b"k" * 32)])
    envelope = ring.sign(ALICE, app_name="app", user_id="alice", session_id="s1")
    assert await SignedStateSource(ring).resolve(request(state={"scopegate:scope": envelope})) == ALICE
    with pytest.raises(Exception, match="bad_signature"):
        await SignedStateSource(ring).resolve(request(state={"scopegate:scope": envelope}, session_id="s2"))


def test_as_source() -> None:
    assert isinstance(as_source({"a": ALICE}), UserDirectory)
    assert isinstance(as_source(lambda r: None), FunctionSource)
    directory = UserDirectory({})
    assert as_source(directory) is directory
    with pytest.raises(TypeError):
        as_source(42)


@pytest.mark.parametrize(
    ("headers", "token"),
    [
        ([(b"authorization", b"Bearer abc.def")], "abc.def"),
        ([(b"Authorization", b"bearer   xyz ")], "xyz"),
        ([(b"authorization", b"Basic dTpw")], None),
        ([(b"authorization", b"Bearer ")], None),
        ([(b"authorization", b"Bearer a b")], None),
        ([(b"authorization", b"Bearer " + b"x" * 20_000)], None),
        ([(b"x-other", b"Bearer abc")], None),
        ([], None),
    ],
)
def test_bearer_token_parsing(headers: list[tuple[bytes, bytes]], token: str | None) -> None:
    assert bearer_token(headers) == token


# -- resolve_state: what a tool sees ------------------------------------------------------------
def ctx(user: str = "alice", session: str = "s1", invocation: str = "e-1") -> Any:
    return SimpleNamespace(session=SimpleNamespace(app_name="app", user_id=user, id=session), invocation_id=invocation)


TOOL_KEYS = ScopeKeys(tenant="org", groups="teams", user="uid")


def test_a_binding_replaces_all_client_state() -> None:
    bound = BoundScope(ALICE, "app", "alice", "s1", "e-1", passthrough=("locale", "org", "temp:scopegate:token"))
    raw = {"tenant_id": "globex", "org": "globex", "locale": "fr", "secret": "x", BOUND_KEY: bound,
           "temp:scopegate:token": "tok"}  # fmt: skip
    resolved = resolve_state(raw, ctx(), policy=ScopePolicy("state", declared=False), scope_keys=TOOL_KEYS)
    assert resolved.source == "binding"
    assert resolved.state == {
        "tenant_id": "acme", "user_id": "alice", "group_ids": ["g1"], "org": "acme", "uid": "alice", "teams": ["g1"],
        "locale": "fr",
    }  # fmt: skip


@pytest.mark.parametrize("other", [ctx(session="s2"), ctx(user="bob"), ctx(invocation="e-2"), SimpleNamespace()])
def test_a_binding_of_another_session_or_invocation_is_refused(other: Any) -> None:
    bound = BoundScope(ALICE, "app", "alice", "s1", "e-1")
    resolved = resolve_state({BOUND_KEY: bound, "tenant_id": "acme"}, other, policy=ScopePolicy.client_state())
    assert resolved.state == {} and resolved.source == "refused"


def test_json_under_the_binding_key_is_refused() -> None:
    raw = {BOUND_KEY: {"identity": {"tenant": "globex"}}, "tenant_id": "globex"}
    assert resolve_state(raw, ctx(), policy=ScopePolicy.client_state()).state == {}


def test_no_identity_bound_means_no_scope() -> None:
    bound = BoundScope(None, "app", "alice", "s1", "e-1", reason="no_identity")
    resolved = resolve_state({BOUND_KEY: bound, "tenant_id": "acme"}, ctx(), policy=ScopePolicy.client_state())
    assert resolved.state == {} and resolved.source == "refused" and resolved.reason == "no_identity"


def test_policies_without_a_binding() -> None:
    raw = {"tenant_id": "globex", "temp:scopegate:token": "t", "scopegate:other": 1}
    assert resolve_state(raw, ctx(), policy=ScopePolicy.client_state()).state == {"tenant_id": "globex"}
    assert resolve_state(raw, ctx(), policy=ScopePolicy.binding()).state == {}
    assert resolve_state(raw, ctx(), policy=ScopePolicy("state", strict=True)).state == {}
    ring = KeyRing([SigningKey("k", b"k" * 32)])
    signed = {**raw, "scopegate:scope": ring.sign(ALICE, app_name="app", user_id="alice", session_id="s1")}
    resolved = resolve_state(signed, ctx(), policy=ScopePolicy.signed(ring), scope_keys=TOOL_KEYS)
    assert resolved.source == "signed" and resolved.state["org"] == "acme" and resolved.state["tenant_id"] == "acme"
    assert resolve_state(signed, ctx(session="s9"), policy=ScopePolicy.signed(ring)).state == {}


def test_policy_from_env() -> None:
    secret = KeyRing.new_secret()
    assert ScopePolicy.from_env({}) == ScopePolicy("state", declared=False)
    assert ScopePolicy.from_env({"SCOPEGATE_SCOPE_SOURCE": "state"}).declared
    assert ScopePolicy.from_env({"SCOPEGATE_SCOPE_SOURCE": "binding"}).source == "binding"
    assert ScopePolicy.from_env({"SCOPEGATE_SCOPE_SIGNING_KEYS": f"k:{secret}"}).source == "signed"
    assert ScopePolicy.from_env({"SCOPEGATE_SCOPE_STRICT": "yes"}).strict
    for bad in ({"SCOPEGATE_SCOPE_SOURCE": "cookies"}, {"SCOPEGATE_SCOPE_SOURCE": "signed"}):
        with pytest.raises(ConfigError):
            ScopePolicy.from_env(bad)
    with pytest.raises(ConfigError):
        ScopePolicy("signed")


def test_source_from_environment() -> None:
    assert source_from_environment({}) is None
    assert isinstance(
        source_from_environment({"SCOPEGATE_SCOPE_SIGNING_KEYS": f"k:{KeyRing.new_secret()}"}), SignedStateSource
    )
    assert isinstance(source_from_environment({"SCOPEGATE_IDENTITY_SOURCE": "os:environ"}), UserDirectory)
    for bad in ("nocolon", "no.such.module:x", "os:no_such_attribute", "os:sep"):
        with pytest.raises(ConfigError):
            source_from_environment({"SCOPEGATE_IDENTITY_SOURCE": bad})
