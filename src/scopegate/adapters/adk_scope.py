"""Where ADK tools get their scope: a trusted binding, signed state, or (loudly) client-writable state.

In ``adk api_server``, ``adk web`` and servers built on ADK's FastAPI app, the
client writes session state: ``state`` at session creation, ``state_delta`` on
every ``/run`` (``temp:`` keys included, for that invocation), and PATCH on a
session. A tenant id read from there is the client's choice. This module closes
that, in one place that :func:`scopegate.adapters.adk.call_context` (the one
ToolContext -> CallContext conversion) consults for every scopegate tool:

* **A trusted binding** (:class:`ScopeBindingPlugin`, or :class:`ScopeBinding`'s
  ``before_agent_callback``): at the start of every invocation it asks a
  verified identity source (a token verifier, a server-side directory, signed
  state, an application function; see :mod:`scopegate.identity`) and stores the
  answer in the invocation's in-memory session as a Python object under
  :data:`BOUND_KEY`. Clients can only send JSON, never that object; ADK never
  persists it; it names the session and invocation it was made for. While it is
  there, tools see the bound identity and nothing a client wrote (a missing
  identity means every tool answers ``NO_SCOPE``).
* **Signed state** (:meth:`ScopePolicy.signed`): the server signs the scope into
  persisted session state (:mod:`scopegate.identity.signing`); tools verify it
  on every call and refuse a missing, altered or copied envelope.
* **Client state** (the old behaviour): tools read the scope keys from session
  state. Unless declared on purpose (``SCOPEGATE_SCOPE_SOURCE=state``), the
  first invocation warns once (``logging`` and :class:`ScopeTrustWarning`),
  naming the keys; ``SCOPEGATE_SCOPE_STRICT=1`` makes it a start-up error.

The policy comes from the tools (``scope_policy=``), else from the process
default (:func:`set_default_policy`, else the environment). See
docs/deployment-adk.md for which option fits which way of serving ADK.
"""

from __future__ import annotations

import asyncio
import functools
import importlib
import logging
import os
import uuid
import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from google.adk.plugins.base_plugin import BasePlugin

from scopegate.errors import ConfigError, ScopeTrustWarning
from scopegate.identity.asgi import MAX_TOKEN_CHARS, current_bearer_token
from scopegate.identity.model import Identity
from scopegate.identity.signing import DEFAULT_TTL_S, ENV_SIGNING_KEYS, SIGNED_SCOPE_KEY, KeyRing, SignatureInvalid
from scopegate.identity.sources import IdentityRequest, IdentitySource, SignedStateSource, as_source
from scopegate.scope import ScopeKeys

if TYPE_CHECKING:
    from scopegate.config.model import ScopeConfig

log = logging.getLogger("scopegate.adapters.adk_scope")

__all__ = [
    "BINDING_KEYS",
    "BOUND_KEY",
    "DOCS",
    "ENV_CONFIG",
    "ENV_IDENTITY_SOURCE",
    "ENV_SOURCE",
    "ENV_STRICT",
    "TOKEN_KEY",
    "BoundScope",
    "ResolvedState",
    "ScopeBinding",
    "ScopeBindingPlugin",
    "ScopePolicy",
    "ScopeTrustWarning",
    "bound_identity",
    "create_signed_session",
    "default_policy",
    "resolve_state",
    "set_default_policy",
]

# The invocation's binding, a BoundScope object in the in-memory session state (never persisted: temp:).
BOUND_KEY = "temp:scopegate:bound"
# A client may present its bearer token for one run here, in the run's state_delta (temp: is not persisted).
TOKEN_KEY = "temp:scopegate:token"
_INTERNAL_PREFIXES = ("temp:scopegate:", "scopegate:")
# The keys a binding writes the identity under (besides each tool's own scope keys).
BINDING_KEYS = ScopeKeys(tenant="tenant_id", groups="group_ids", user="user_id")

ENV_SOURCE = "SCOPEGATE_SCOPE_SOURCE"
ENV_STRICT = "SCOPEGATE_SCOPE_STRICT"
ENV_IDENTITY_SOURCE = "SCOPEGATE_IDENTITY_SOURCE"
ENV_CONFIG = "SCOPEGATE_CONFIG"
DOCS = "docs/deployment-adk.md"
DEFAULT_RESOLVE_TIMEOUT_S = 5.0
_TRUE = frozenset({"1", "true", "yes", "on"})

Source = Literal["state", "binding", "signed"]
# What a binding accepts as its identity source (see scopegate.identity.as_source).
SourceLike = IdentitySource | Mapping[str, Identity] | Callable[..., Any]


def is_internal(key: str) -> bool:
    return key.startswith(_INTERNAL_PREFIXES)


# -- the policy ---------------------------------------------------------------------------
@dataclass(frozen=True)
class ScopePolicy:
    """How tools read scope when no binding ran for the invocation (a binding always wins).

    ``source``: ``"binding"`` (refuse without one), ``"signed"`` (verify the
    signed state with ``ring``), ``"state"`` (session state as the client left
    it). ``declared`` is False for the implicit default, which warns; ``strict``
    makes client state a start-up error. ``passthrough`` names non-scope state
    keys tools may still read from session state when scope is bound or signed
    (they are client-writable: never scope or credentials); naming one of the
    scope keys there is a :class:`ConfigError`.
    """

    source: Source = "state"
    ring: KeyRing | None = None
    keys: ScopeKeys = BINDING_KEYS
    passthrough: tuple[str, ...] = ()
    declared: bool = True
    strict: bool = False

    def __post_init__(self) -> None:
        if self.source == "signed" and self.ring is None:
            raise ConfigError("signed scope needs a key ring (KeyRing.from_env() or KeyRing.parse(...))")
        if self.source not in ("state", "binding", "signed"):
            raise ConfigError(f"scope source must be state, binding or signed, not {self.source!r}")
        check_passthrough(self.passthrough, [self.keys, BINDING_KEYS])

    @classmethod
    def client_state(cls, *, strict: bool = False) -> ScopePolicy:
        """Trust session state: only right when nothing but your server writes it (a custom Runner)."""
        return cls("state", strict=strict)

    @classmethod
    def binding(cls, *, keys: ScopeKeys = BINDING_KEYS, passthrough: Iterable[str] = ()) -> ScopePolicy:
        """Scope only from a :class:`ScopeBinding`; an invocation without one gets ``NO_SCOPE``."""
        return cls("binding", keys=keys, passthrough=tuple(passthrough))

    @classmethod
    def signed(cls, ring: KeyRing, *, keys: ScopeKeys = BINDING_KEYS, passthrough: Iterable[str] = ()) -> ScopePolicy:
        """Scope from the signed envelope in session state, verified on every call."""
        return cls("signed", ring=ring, keys=keys, passthrough=tuple(passthrough))

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> ScopePolicy:
        """The policy the environment describes.

        ``SCOPEGATE_SCOPE_SOURCE`` (state|binding|signed), ``SCOPEGATE_SCOPE_SIGNING_KEYS``,
        ``SCOPEGATE_SCOPE_STRICT``. Unset source: signed when signing keys are set,
        else undeclared client state.
        """
        env = os.environ if environ is None else environ
        strict = env.get(ENV_STRICT, "").strip().lower() in _TRUE
        ring = KeyRing.from_env(environ=env)
        source = env.get(ENV_SOURCE, "").strip().lower()
        if source in ("", "auto"):
            if ring is not None:
                return cls("signed", ring=ring, strict=strict)
            return cls("state", declared=False, strict=strict)
        if source not in ("state", "binding", "signed"):
            raise ConfigError(f"{ENV_SOURCE} must be state, binding or signed, not {source!r}")
        if source == "signed" and ring is None:
            raise ConfigError(f"{ENV_SOURCE}=signed needs signing keys in SCOPEGATE_SCOPE_SIGNING_KEYS")
        return cls(source, ring=ring, strict=strict)  # type: ignore[arg-type]

    @classmethod
    def from_config(cls, scope: ScopeConfig, environ: Mapping[str, str] | None = None) -> ScopePolicy:
        """The policy of a config's ``scope`` section; the environment fills what it leaves open.

        Strict if either says so; ``source: auto`` defers to the environment, except
        that configured signing keys select signed scope.
        """
        env_policy = cls.from_env(environ)
        ring = env_policy.ring
        if scope.signing_keys is not None:
            ring = KeyRing.parse(scope.signing_keys)
        elif scope.signing_keys_file is not None:
            ring = KeyRing.from_file(scope.signing_keys_file, what="scope.signing_keys_file")
        state_keys = scope.state_keys
        keys = ScopeKeys(tenant=state_keys.tenant, groups=state_keys.groups, user=state_keys.user)
        source, declared = scope.source, True
        if source == "auto":
            if scope.signing_keys is not None or scope.signing_keys_file is not None:
                source = "signed"
            else:
                source, declared = env_policy.source, env_policy.declared
        return cls(
            source,
            ring=ring,
            keys=keys,
            passthrough=tuple(scope.passthrough),
            declared=declared,
            strict=scope.strict or env_policy.strict,
        )


_DEFAULT: ScopePolicy | None = None


@functools.lru_cache(maxsize=8)
def _env_policy(source: str, strict: str, keys: str) -> ScopePolicy:
    return ScopePolicy.from_env({ENV_SOURCE: source, ENV_STRICT: strict, ENV_SIGNING_KEYS: keys})


def default_policy() -> ScopePolicy:
    """The process default: :func:`set_default_policy`'s, else the environment's."""
    if _DEFAULT is not None:
        return _DEFAULT
    env = os.environ
    return _env_policy(env.get(ENV_SOURCE, ""), env.get(ENV_STRICT, ""), env.get(ENV_SIGNING_KEYS, ""))


def set_default_policy(policy: ScopePolicy | None) -> None:
    """Set (or with None, clear) the policy tools use when none is given, for the whole process
    (e.g. ``set_default_policy(ScopePolicy.from_config(load_config(path).scope))`` at start-up)."""
    global _DEFAULT
    _DEFAULT = policy


# -- the bound scope ----------------------------------------------------------------------
@dataclass(frozen=True)
class BoundScope:
    """What a binding decided for one invocation of one session. ``identity`` None: refuse."""

    identity: Identity | None
    app_name: str
    user_id: str
    session_id: str
    invocation_id: str
    keys: ScopeKeys = BINDING_KEYS
    passthrough: tuple[str, ...] = ()
    reason: str | None = None
    # The bearer token the invocation presented, for per-user downstream credentials (token exchange).
    token: str | None = field(default=None, repr=False, compare=False)

    def matches(self, app_name: str, user_id: str, session_id: str, invocation_id: str) -> bool:
        return (self.app_name, self.user_id, self.session_id, self.invocation_id) == (
            app_name,
            user_id,
            session_id,
            invocation_id,
        )


@dataclass(frozen=True)
class ResolvedState:
    """The state a tool sees, and where its scope came from (``binding``, ``signed``, ``state``, ``refused``)."""

    state: dict[str, Any]
    source: str
    reason: str | None = None


@dataclass(frozen=True)
class _Ids:
    app_name: str
    user_id: str
    session_id: str
    invocation_id: str


def _ids_of(context: Any) -> _Ids | None:
    try:
        session = context.session
        ids = _Ids(str(session.app_name), str(session.user_id), str(session.id), str(context.invocation_id))
    except Exception:  # a context without a session cannot be bound
        return None
    return ids


def check_passthrough(passthrough: Iterable[str], keys: Iterable[ScopeKeys]) -> None:
    """Refuse passthrough names that are scope keys: client state would fill them when the identity has none
    (a signed identity without a user, then an ownership rule trusting ``user_id``)."""
    reserved = _key_names(keys)
    clash = [name for name in passthrough if name in reserved]
    if clash:
        raise ConfigError(
            f"passthrough names scope keys ({', '.join(clash)}): scope comes only from the binding or the "
            f"signature, never from client state; remove them from passthrough (scope keys: {', '.join(reserved)})"
        )


def _scope_state(
    identity: Identity | None,
    keys: Iterable[ScopeKeys],
    passthrough: Iterable[str],
    raw: Mapping[str, Any],
) -> dict[str, Any]:
    """The identity under every key set in ``keys``, plus the passthrough keys from ``raw`` that are not scope
    keys of any of those sets (a tool's own scope keys too), so client state never supplies a missing id."""
    key_sets = list(keys)
    out: dict[str, Any] = {}
    if identity is not None:
        for k in key_sets:
            out.update(identity.state(k))
    reserved = set(_key_names([*key_sets, BINDING_KEYS]))
    for name in passthrough:
        if name in raw and name not in out and name not in reserved and not is_internal(name):
            out[name] = raw[name]
    return out


_ONCE: set[str] = set()


def _once(key: str) -> bool:
    if key in _ONCE:
        return False
    _ONCE.add(key)
    return True


def reset_warnings() -> None:
    """Forget which one-time warnings were given (tests)."""
    _ONCE.clear()


def resolve_state(
    raw: Mapping[str, Any],
    context: Any,
    *,
    policy: ScopePolicy,
    scope_keys: ScopeKeys | None = None,
) -> ResolvedState:
    """The state a scopegate tool may read, from the session state copy ``raw`` and the ADK ``context``."""
    ids = _ids_of(context)
    tool_keys = [policy.keys] + ([scope_keys] if scope_keys is not None else [])
    marker = raw.get(BOUND_KEY)
    if isinstance(marker, BoundScope):
        if ids is None or not marker.matches(ids.app_name, ids.user_id, ids.session_id, ids.invocation_id):
            log.warning("a scope binding for another session or invocation was found; refusing scope")
            return ResolvedState({}, "refused", "stale_binding")
        state = _scope_state(marker.identity, [marker.keys, *tool_keys[1:]], marker.passthrough, raw)
        return ResolvedState(state, "binding" if marker.identity is not None else "refused", marker.reason)
    if marker is not None:  # a client wrote JSON under the binding key: never scope
        log.warning("session state holds a forged scope binding (%s); refusing scope", type(marker).__name__)
        return ResolvedState({}, "refused", "forged_binding")
    if policy.source == "binding":
        if _once("binding-missing"):
            log.error(
                "scopegate: tools require a scope binding but none ran for this invocation; every call answers "
                "NO_SCOPE. Install ScopeBindingPlugin (App(plugins=[...]) or adk api_server --extra_plugins). See %s",
                DOCS,
            )
        return ResolvedState(_scope_state(None, tool_keys, policy.passthrough, raw), "refused", "no_binding")
    if policy.source == "signed":
        assert policy.ring is not None
        if ids is None:
            return ResolvedState({}, "refused", "no_session")
        try:
            identity = policy.ring.verify(
                raw.get(SIGNED_SCOPE_KEY), app_name=ids.app_name, user_id=ids.user_id, session_id=ids.session_id
            )
        except SignatureInvalid as exc:
            log.warning("signed scope refused in session %s: %s", ids.session_id[:64], exc.reason)
            return ResolvedState(_scope_state(None, tool_keys, policy.passthrough, raw), "refused", exc.reason)
        return ResolvedState(_scope_state(identity, tool_keys, policy.passthrough, raw), "signed")
    if policy.strict:
        return ResolvedState({}, "refused", "strict")
    return ResolvedState({k: v for k, v in raw.items() if not is_internal(k)}, "state")


def presented_token(raw: Mapping[str, Any]) -> str | None:
    """The bearer token this invocation presented: kept by its binding, else the request's (middleware), else
    the run's ``TOKEN_KEY``. Unverified: whoever uses it (token exchange) verifies it first."""
    marker = raw.get(BOUND_KEY)
    if isinstance(marker, BoundScope):
        return marker.token
    token = current_bearer_token() or raw.get(TOKEN_KEY)
    return token if isinstance(token, str) and 0 < len(token) <= MAX_TOKEN_CHARS and token.isascii() else None


def bound_identity(context: Any) -> Identity | None:
    """The identity bound to this invocation (for session filters and callbacks), else None."""
    ids = _ids_of(context)
    try:
        marker = context.state.get(BOUND_KEY)
    except Exception:
        return None
    if not isinstance(marker, BoundScope) or ids is None:
        return None
    if not marker.matches(ids.app_name, ids.user_id, ids.session_id, ids.invocation_id):
        return None
    return marker.identity


# -- start-up checks ----------------------------------------------------------------------
def _key_names(keys: Iterable[ScopeKeys]) -> list[str]:
    names: list[str] = []
    for k in keys:
        for name in (k.tenant, k.groups, k.user):
            if name is not None and name not in names:
                names.append(name)
    return names


def client_state_message(keys: Iterable[ScopeKeys]) -> str:
    names = ", ".join(_key_names(keys)) or "(none)"
    return (
        f"scopegate: scope is read from client-writable ADK session state (keys: {names}). Under adk api_server, "
        "adk web and servers built on ADK's FastAPI app, any client can set these keys with state_delta, a session "
        "PATCH or session creation. Bind scope from a verified source (scopegate.adapters.adk_scope."
        "ScopeBindingPlugin) or sign it (SCOPEGATE_SCOPE_SIGNING_KEYS); if only your own server writes session "
        f"state, declare it with SCOPEGATE_SCOPE_SOURCE=state. {ENV_STRICT}=1 makes this an error. See {DOCS}."
    )


def check_policy(policy: ScopePolicy, keys: ScopeKeys) -> None:
    """At tool construction: strict mode refuses client-writable scope (raises :class:`ConfigError`)."""
    if policy.source == "state" and policy.strict:
        raise ConfigError(client_state_message([keys]).replace("scopegate: ", "scopegate (strict): ", 1))
    if policy.source == "state" and policy.declared and _once("declared-state"):
        log.info("scopegate: scope is read from session state, declared trusted (%s=state)", ENV_SOURCE)


def observe_invocation(context: Any, policy: ScopePolicy, keys: ScopeKeys) -> None:
    """At the first invocation: warn once when tools read undeclared client state and no binding ran."""
    if policy.source != "state" or policy.declared or policy.strict:
        return
    try:
        marker = context.state.get(BOUND_KEY)
    except Exception:
        marker = None
    if isinstance(marker, BoundScope):
        return
    if _once("client-state"):
        message = client_state_message([keys])
        log.warning(message)
        warnings.warn(message, ScopeTrustWarning, stacklevel=2)


# -- the binding --------------------------------------------------------------------------
def source_from_environment(environ: Mapping[str, str] | None = None) -> IdentitySource | None:
    """``SCOPEGATE_IDENTITY_SOURCE=package.module:attribute`` (a source, a mapping, a function), else
    signed state when ``SCOPEGATE_SCOPE_SIGNING_KEYS`` is set, else the ``scope`` section of the config
    named by ``SCOPEGATE_CONFIG`` (``identity_source``, signing keys), else None."""
    env = os.environ if environ is None else environ
    spec = env.get(ENV_IDENTITY_SOURCE, "").strip()
    if spec:
        module_name, _, attribute = spec.partition(":")
        if not module_name or not attribute:
            raise ConfigError(f"{ENV_IDENTITY_SOURCE} is written 'package.module:attribute', not {spec!r}")
        try:
            value = getattr(importlib.import_module(module_name), attribute)
        except (ImportError, AttributeError) as exc:
            raise ConfigError(f"{ENV_IDENTITY_SOURCE}={spec!r} cannot be imported: {exc}") from exc
        try:
            return as_source(value)
        except TypeError as exc:
            raise ConfigError(f"{ENV_IDENTITY_SOURCE}={spec!r}: {exc}") from exc
    ring = KeyRing.from_env(environ=env)
    if ring is None and env.get(ENV_CONFIG, "").strip():
        from scopegate.config.loader import load_config

        scope = load_config(env[ENV_CONFIG].strip(), env).scope
        if scope.identity_source is not None:
            return source_from_environment({ENV_IDENTITY_SOURCE: scope.identity_source})
        ring = ScopePolicy.from_config(scope, env).ring
    return SignedStateSource(ring) if ring is not None else None


class ScopeBinding:
    """Derives the caller's identity at the start of each invocation and binds it where clients cannot write.

    ``source`` is an :class:`~scopegate.identity.IdentitySource`, a mapping of user
    id -> Identity, or a function of the :class:`~scopegate.identity.IdentityRequest`;
    None reads ``SCOPEGATE_IDENTITY_SOURCE`` / signing keys from the environment,
    and without either every invocation is refused (logged as an error).
    The callback form: ``LlmAgent(..., before_agent_callback=binding.before_agent_callback)``
    on the root agent; the plugin form: :class:`ScopeBindingPlugin`.
    """

    def __init__(
        self,
        source: SourceLike | None = None,
        *,
        keys: ScopeKeys = BINDING_KEYS,
        passthrough: Iterable[str] = (),
        timeout_s: float = DEFAULT_RESOLVE_TIMEOUT_S,
    ) -> None:
        self.source: IdentitySource | None = as_source(source) if source is not None else source_from_environment()
        self.keys = keys
        self.passthrough = tuple(passthrough)
        check_passthrough(self.passthrough, [keys, BINDING_KEYS])
        self.timeout_s = timeout_s
        if self.source is None:
            log.error(
                "scopegate: a scope binding has no identity source (pass source=..., or set %s or "
                "SCOPEGATE_SCOPE_SIGNING_KEYS); every invocation will be refused. See %s",
                ENV_IDENTITY_SOURCE,
                DOCS,
            )

    async def _resolve(self, request: IdentityRequest) -> tuple[Identity | None, str | None]:
        if self.source is None:
            return None, "no_source"
        try:
            identity = await asyncio.wait_for(self.source.resolve(request), self.timeout_s)
        except SignatureInvalid as exc:
            log.warning("signed scope refused in session %s: %s", request.session_id[:64], exc.reason)
            return None, exc.reason
        except TimeoutError:
            log.error("the identity source did not answer within %.1fs; refusing scope", self.timeout_s)
            return None, "timeout"
        except Exception:
            log.exception("the identity source failed; refusing scope")
            return None, "source_failed"
        if identity is not None and not isinstance(identity, Identity):
            log.error("the identity source returned %s, not an Identity; refusing scope", type(identity).__name__)
            return None, "bad_identity"
        return identity, None if identity is not None else "no_identity"

    async def bind(self, context: Any) -> BoundScope | None:
        """Bind the invocation of ``context`` (an InvocationContext or a CallbackContext). Never raises."""
        try:
            session = context.session
            state: dict[str, Any] = session.state
            ids = _Ids(str(session.app_name), str(session.user_id), str(session.id), str(context.invocation_id))
        except Exception:
            log.exception("cannot bind scope: the context has no session")
            return None
        presented = state.pop(TOKEN_KEY, None)
        token = current_bearer_token() or (presented if isinstance(presented, str) else None)
        snapshot = {k: v for k, v in state.items() if k != BOUND_KEY}
        request = IdentityRequest(ids.app_name, ids.user_id, ids.session_id, ids.invocation_id, snapshot, token)
        identity, reason = await self._resolve(request)
        bound = BoundScope(
            identity, ids.app_name, ids.user_id, ids.session_id, ids.invocation_id, self.keys, self.passthrough, reason,
            token=token if identity is not None else None,
        )  # fmt: skip
        state[BOUND_KEY] = bound
        return bound

    @staticmethod
    def unbind(context: Any) -> None:
        try:
            state = context.session.state
            if isinstance(state.get(BOUND_KEY), BoundScope):
                del state[BOUND_KEY]
        except Exception:
            log.debug("nothing to unbind", exc_info=True)

    async def before_agent_callback(self, callback_context: Any) -> None:
        """The callback form (use on the root agent). Always returns None: the agent runs."""
        await self.bind(callback_context)
        return None


class ScopeBindingPlugin(BasePlugin):
    """The binding as a runner plugin: ``App(plugins=[ScopeBindingPlugin(source)])``, a Runner's
    ``plugins=``, or ``adk api_server --extra_plugins scopegate.adapters.adk_scope.ScopeBindingPlugin``
    (source from ``SCOPEGATE_IDENTITY_SOURCE`` / signing keys) or ``--extra_plugins my_module.my_binding``.

    ``source`` is what :class:`ScopeBinding` takes, or a ScopeBinding itself (for
    other keys, passthrough keys or timeout: ``ScopeBindingPlugin(ScopeBinding(source, passthrough=...))``).
    """

    def __init__(self, source: SourceLike | ScopeBinding | None = None, *, name: str = "scopegate_scope") -> None:
        super().__init__(name=name)
        self.binding = source if isinstance(source, ScopeBinding) else ScopeBinding(source)

    async def before_run_callback(self, *, invocation_context: Any) -> None:
        await self.binding.bind(invocation_context)
        return None

    async def after_run_callback(self, *, invocation_context: Any) -> None:
        self.binding.unbind(invocation_context)
        return None


# -- server-side helpers ------------------------------------------------------------------
async def create_signed_session(
    session_service: Any,
    ring: KeyRing,
    identity: Identity,
    *,
    app_name: str,
    user_id: str,
    session_id: str | None = None,
    state: Mapping[str, Any] | None = None,
    ttl_s: float = DEFAULT_TTL_S,
) -> Any:
    """Create an ADK session whose state carries ``identity``'s scope, signed for exactly this session and
    good for ``ttl_s`` seconds (default one day, at most the ring's ``max_lifetime_s``); sign a fresh
    envelope into the session before then to keep it going."""
    sid = session_id or uuid.uuid4().hex
    full = dict(state or {})
    full[SIGNED_SCOPE_KEY] = ring.sign(identity, app_name=app_name, user_id=user_id, session_id=sid, ttl_s=ttl_s)
    return await session_service.create_session(app_name=app_name, user_id=user_id, session_id=sid, state=full)
