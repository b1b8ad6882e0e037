"""Google ADK adapter: scopegate tools as native ADK tools and toolsets. The one ADK path.

The adapter only translates:

* :func:`call_context` is the one ``ToolContext`` -> :class:`CallContext`
  conversion (session state as a private copy, invocation and session ids,
  the user's confirmation decision, the signed-in user's bearer token for
  per-user downstream credentials). Callbacks and plugins use it too. The
  state a tool sees is decided by :mod:`scopegate.adapters.adk_scope`: the
  identity a trusted binding bound to the invocation, a verified signed scope,
  or (warned once) session state as clients left it.
* :class:`AdkTool` turns any :class:`ScopedTool` (search, fetch, an OpenAPI
  operation, a guarded tool) into an ADK ``BaseTool``. The declaration is the
  tool's own ``parameters_schema()``. Tools that require confirmation go
  through ADK's flow: the first call returns ``CONFIRMATION_REQUIRED`` and
  sends nothing, the adapter calls ``tool_context.request_confirmation``; when
  ADK resumes the call with the user's ``ToolConfirmation``, the decision
  reaches the tool as ``CallContext.confirmed`` and the tool re-checks it.
  Guarded and confirmation-gated are independent: a guarded OpenAPI tool gets
  both.
* :class:`ScopegateToolset` is an ADK ``BaseToolset`` over scopegate tools,
  with per-session visibility filters.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any

from google.adk.agents.readonly_context import ReadonlyContext
from google.adk.models.llm_request import LlmRequest
from google.adk.tools.base_tool import BaseTool
from google.adk.tools.base_toolset import BaseToolset, ToolPredicate
from google.adk.tools.tool_context import ToolContext
from google.genai import types

from scopegate.adapters.adk_files import ArtifactFiles
from scopegate.adapters.adk_scope import (
    ScopePolicy,
    check_policy,
    default_policy,
    observe_invocation,
    presented_token,
    resolve_state,
)
from scopegate.backends.base import SearchBackend
from scopegate.context import CallContext, SubjectToken
from scopegate.errors import CONFIRMATION_REQUIRED, INSUFFICIENT_SCOPE, INTERNAL, ConfigError, tool_error
from scopegate.guard.guard import Guard, GuardedTool
from scopegate.scope import ScopeKeys
from scopegate.search.aggregation import AggregationSpec
from scopegate.search.bundle import search_tools
from scopegate.search.spec import SearchSpec
from scopegate.tools import ScopedTool, ToolSource, gather_tools

log = logging.getLogger("scopegate.adapters.adk")

SessionFilter = Callable[[ReadonlyContext | None, "AdkTool"], bool]
# The caller's token scopes as a per-tool check ``may_use(name, family, read_only)``, from the tool
# context (see :meth:`scopegate.config.ToolApp.adk_tools`); None: no token scopes are enforced.
ScopeCheck = Callable[[ToolContext], Callable[[str, str, bool], bool] | None]


def session_id_of(context: Any) -> str | None:
    try:
        session = context.session
    except Exception:  # some contexts carry no session
        return None
    sid = getattr(session, "id", None)
    return str(sid) if sid is not None else None


def _state_copy(context: Any) -> dict[str, Any]:
    state: Any = context.state
    to_dict = getattr(state, "to_dict", None)
    return dict(to_dict()) if callable(to_dict) else {k: state[k] for k in state}


def call_context(
    tool_context: ToolContext,
    *,
    with_confirmation: bool = False,
    scope_keys: ScopeKeys | None = None,
    policy: ScopePolicy | None = None,
    may_use: Callable[[str, str, bool], bool] | None = None,
) -> CallContext:
    """The :class:`CallContext` of one ADK tool call.

    State is a plain copy, so a tool cannot write back into the session. Which
    state: see :func:`scopegate.adapters.adk_scope.resolve_state` (a bound or
    signed identity under the binding's keys and the tool's ``scope_keys``,
    else session state under the ``policy``, by default the process's).
    ``extra["scope_source"]`` says which. ``with_confirmation`` reads the user's
    decision (ADK sets ``tool_confirmation`` only when it resumes a call that
    asked for one); for tools that never ask, it stays ``None``. The run's
    bearer token (see :func:`~scopegate.adapters.adk_scope.presented_token`)
    reaches the tool as ``subject_token``, unverified, never in ``state``. The session's
    artifacts are the files an upload may name (``files``, see :mod:`.adk_files`).
    """
    confirmed: bool | None = None
    if with_confirmation:
        confirmation = tool_context.tool_confirmation
        confirmed = None if confirmation is None else confirmation.confirmed is True
    raw = _state_copy(tool_context)
    token = presented_token(raw)
    resolved = resolve_state(raw, tool_context, policy=policy or default_policy(), scope_keys=scope_keys)
    return CallContext(
        state=resolved.state,
        invocation_id=tool_context.invocation_id,
        session_id=session_id_of(tool_context),
        confirmed=confirmed,
        extra={"scope_source": resolved.source},
        subject_token=SubjectToken(token) if token is not None else None,
        files=ArtifactFiles(tool_context),
        may_use=may_use,
    )


def is_guarded(tool: Any) -> bool:
    """Whether an ADK tool is a scopegate tool that runs under a guard (it counts its own calls)."""
    return isinstance(tool, AdkTool) and isinstance(tool.tool, GuardedTool)


class AdkTool(BaseTool):
    """Any :class:`ScopedTool` as an ADK tool. Never raises into the agent loop.

    ``scope_policy`` says where scope comes from when no binding ran (default:
    the process's, see :mod:`scopegate.adapters.adk_scope`); strict mode refuses
    client-writable scope here, at construction.
    """

    def __init__(
        self, tool: ScopedTool, *, scope_policy: ScopePolicy | None = None, scope_check: ScopeCheck | None = None
    ) -> None:
        super().__init__(name=tool.name, description=tool.description)
        self.tool = tool
        self.scope_policy = scope_policy if scope_policy is not None else default_policy()
        self.scope_check = scope_check
        check_policy(self.scope_policy, tool.scope_keys)

    @property
    def family(self) -> str:
        return self.tool.family

    @property
    def read_only(self) -> bool:
        return self.tool.read_only

    def _get_declaration(self) -> types.FunctionDeclaration:
        return types.FunctionDeclaration(
            name=self.tool.name,
            description=self.tool.description,
            parameters_json_schema=self.tool.parameters_schema(),
        )

    async def process_llm_request(self, *, tool_context: ToolContext, llm_request: LlmRequest) -> None:
        # Before the model's first turn: the one-time warning about client-writable scope.
        observe_invocation(tool_context, self.scope_policy, self.tool.scope_keys)
        await super().process_llm_request(tool_context=tool_context, llm_request=llm_request)

    async def run_async(self, *, args: dict[str, Any], tool_context: ToolContext) -> Any:
        try:
            gated = self.tool.requires_confirmation
            may_use = self.scope_check(tool_context) if self.scope_check is not None else None
            tool = self.tool
            if may_use is not None and not may_use(tool.name, tool.family, tool.read_only):
                return tool_error(INSUFFICIENT_SCOPE, f"The access token does not allow {tool.name}.")
            ctx = call_context(
                tool_context,
                with_confirmation=gated,
                scope_keys=self.tool.scope_keys,
                policy=self.scope_policy,
                may_use=may_use,
            )
            outcome = await self.tool.run(args, ctx)
            result = outcome.result
            if gated and result.get("error_code") == CONFIRMATION_REQUIRED and tool_context.function_call_id:
                asked: Mapping[str, Any] = result.get("confirmation") or {}
                tool_context.request_confirmation(hint=str(asked.get("hint", "")), payload=asked.get("payload"))
                # The pause is not a result for the model to summarise.
                tool_context.actions.skip_summarization = True
            return result
        except Exception:
            log.exception("ADK adapter failure around tool %r", self.name)
            return tool_error(INTERNAL, "the tool call failed unexpectedly; try again later", retryable=True)


class ScopegateToolset(BaseToolset):
    """Scopegate tools as one ADK toolset: the one way to give scopegate tools to an ADK agent.

    ``tools`` is a built app (``scopegate.load_config(...)``, ``ToolApp.from_tools``), an OpenAPI toolset,
    or a list of tools and such sources; sources are closed with the toolset. ``guard`` wraps each tool
    not already guarded. ``scope_policy`` says where scope comes from (default: a built config's
    ``scope`` section, else the process's policy).

    ``session_filter(readonly_context, tool) -> bool`` and/or ``allowed_tools_state_key`` (a
    session-state key holding the list of tool names this user may see; missing means none) select
    tools per session, on top of ADK's own ``tool_filter``. ``on_close`` releases anything else.
    """

    def __init__(
        self,
        tools: ToolSource | Sequence[ScopedTool | ToolSource],
        *,
        guard: Guard | None = None,
        scope_policy: ScopePolicy | None = None,
        session_filter: SessionFilter | None = None,
        allowed_tools_state_key: str | None = None,
        tool_filter: ToolPredicate | list[str] | None = None,
        tool_name_prefix: str | None = None,
        on_close: Callable[[], Awaitable[None]] | None = None,
        granted_scopes: Callable[[Any], Iterable[str] | None] | None = None,
    ) -> None:
        super().__init__(tool_filter=tool_filter, tool_name_prefix=tool_name_prefix)
        if scope_policy is None:
            scope_policy = _configured_policy(tools)
        check = _scope_check(tools, granted_scopes)
        found, closers = gather_tools(tools)
        wrapped = [guard.wrap(t) if guard is not None and not isinstance(t, GuardedTool) else t for t in found]
        self._tools = [AdkTool(t, scope_policy=scope_policy, scope_check=check) for t in wrapped]
        self._session_filter = session_filter
        self._allowed_key = allowed_tools_state_key
        self._closers = [*closers, *([on_close] if on_close is not None else [])]

    def _visible(self, tool: AdkTool, readonly_context: ReadonlyContext | None) -> bool:
        if not self._is_tool_selected(tool, readonly_context):
            return False
        if self._allowed_key is not None:
            allowed = readonly_context.state.get(self._allowed_key) if readonly_context is not None else None
            if not isinstance(allowed, list | tuple | set | frozenset) or tool.name not in allowed:
                return False
        return self._session_filter is None or self._session_filter(readonly_context, tool)

    async def get_tools(self, readonly_context: ReadonlyContext | None = None) -> list[BaseTool]:
        return [t for t in self._tools if self._visible(t, readonly_context)]

    async def close(self) -> None:
        for closer in self._closers:
            await closer()


def _scope_check(tools: object, granted: Callable[[Any], Iterable[str] | None] | None) -> ScopeCheck | None:
    """With ``granted_scopes(tool_context)`` (the scopes your application verified for the caller), a built
    config's ``auth.scopes`` applies as over MCP: a tool or catalog operation they do not permit is refused."""
    if granted is None:
        return None
    identity = getattr(tools, "identity", None)
    rules = getattr(identity, "scopes", None)
    if rules is None or not rules.enabled:
        raise ConfigError("granted_scopes needs a built config whose auth.scopes says which scopes each tool needs")

    def check(tool_context: Any) -> Callable[[str, str, bool], bool]:
        checker: Callable[[str, str, bool], bool] = rules.checker(granted(tool_context) or ())
        return checker

    return check


def _configured_policy(tools: object) -> ScopePolicy | None:
    """The ``scope`` section of a built config (an object with ``config.scope``), else None."""
    config = getattr(tools, "config", None)
    scope = getattr(config, "scope", None)
    return ScopePolicy.from_config(scope) if scope is not None else None


def adk_tools(
    tools: Sequence[ScopedTool], guard: Guard | None = None, *, scope_policy: ScopePolicy | None = None
) -> list[AdkTool]:
    """Deprecated (goes in 0.3): ``scopegate.adk.ScopegateToolset(tools, guard=guard)``."""
    _deprecated("adk_tools(tools, guard)", "ScopegateToolset(tools, guard=guard)")
    return [AdkTool(guard.wrap(t) if guard is not None else t, scope_policy=scope_policy) for t in tools]


def adk_search_tools(
    spec: SearchSpec,
    backend: SearchBackend,
    *,
    guard: Guard | None = None,
    scope_policy: ScopePolicy | None = None,
    aggregate: AggregationSpec | bool = False,
) -> list[AdkTool]:
    """Deprecated (goes in 0.3): ``ScopegateToolset(scopegate.search_tools(spec, backend), guard=guard)``."""
    _deprecated("adk_search_tools(spec, backend)", "ScopegateToolset(scopegate.search_tools(spec, backend))")
    tools = search_tools(spec, backend, aggregate=aggregate)
    return [AdkTool(guard.wrap(t) if guard is not None else t, scope_policy=scope_policy) for t in tools]


def _deprecated(old: str, new: str) -> None:
    warnings.warn(f"{old} is deprecated and goes in 0.3; use scopegate.adk.{new}", DeprecationWarning, stacklevel=3)
