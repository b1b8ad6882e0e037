"""Google ADK glue for the guard: the call cap as a callback or a plugin, and final-answer reporting.

Two ways to put the cap in front of ADK tools:

* callbacks on one agent::

      hooks = AdkGuardHooks(guard)
      LlmAgent(..., before_tool_callback=hooks.before_tool_callback,
               after_model_callback=hooks.after_model_callback)

* a plugin for every agent of a runner::

      InMemoryRunner(agent=agent, app_name=..., plugins=[GuardPlugin(guard)])

Both count calls per invocation and family with the guard's :class:`CallCap`
and answer a call past the cap with a ``CALL_LIMIT`` dict, which ADK hands to
the model instead of running the tool. They also report invocations that
ended in a final answer (the searches-per-answered-question metric).

If the tools are :class:`~scopegate.guard.GuardedTool` objects of the same
guard, its cap already runs inside the tool: use ``enforce_cap=False`` (or an
adapter that passes ADK's ``function_call_id`` as ``CallContext.extra["call_id"]``,
which makes admission idempotent) so calls are not counted twice.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from google.adk.agents.callback_context import CallbackContext
from google.adk.events.event import Event
from google.adk.models.llm_response import LlmResponse
from google.adk.plugins.base_plugin import BasePlugin
from google.adk.tools.base_tool import BaseTool
from google.adk.tools.tool_context import ToolContext

from scopegate.context import CallContext
from scopegate.guard.guard import Guard

log = logging.getLogger("scopegate.adapters.adk_guard")
DEFAULT_PLUGIN_NAME = "scopegate_guard"


def family_of(tool: Any, families: Mapping[str, str] | None = None) -> str:
    """The cap family of an ADK tool: an explicit mapping, the tool's ``family``,
    the wrapped scopegate tool's ``family`` (``AdkTool.tool``), else the tool's own name."""
    name = str(getattr(tool, "name", "") or "")
    if families and name in families:
        return families[name]
    for candidate in (tool, getattr(tool, "tool", None)):
        family = getattr(candidate, "family", None) if candidate is not None else None
        if isinstance(family, str) and family:
            return family
    return name


def _session_id(context: Any) -> str | None:
    try:
        session = context.session
    except Exception:  # some contexts carry no session
        return None
    sid = getattr(session, "id", None)
    return str(sid) if sid is not None else None


def _call_context(tool_context: Any) -> CallContext:
    try:
        state: Mapping[str, Any] = tool_context.state.to_dict()
    except Exception:
        state = {}
    call_id = getattr(tool_context, "function_call_id", None)
    return CallContext(
        state=state,
        invocation_id=getattr(tool_context, "invocation_id", None),
        session_id=_session_id(tool_context),
        extra={"call_id": call_id} if call_id else {},
    )


def is_final_text(response: LlmResponse) -> bool:
    """A complete model turn with text and no function call: the answer to the user."""
    if response.partial:
        return False
    content = response.content
    if content is None or not content.parts:
        return False
    has_text = False
    for part in content.parts:
        if part.function_call is not None or part.function_response is not None:
            return False
        if part.text and not part.thought:
            has_text = True
    return has_text


class AdkGuardHooks:
    """ADK agent callbacks backed by a :class:`Guard`. Never raise."""

    def __init__(self, guard: Guard, *, families: Mapping[str, str] | None = None, enforce_cap: bool = True) -> None:
        self.guard = guard
        self.families = dict(families or {})
        self.enforce_cap = enforce_cap

    async def before_tool_callback(
        self, tool: BaseTool, args: dict[str, Any], tool_context: ToolContext
    ) -> dict[str, Any] | None:
        """``None`` lets the tool run; a ``CALL_LIMIT`` dict replaces the call."""
        if not self.enforce_cap:
            return None
        try:
            return self.guard.check_cap(
                tool=str(tool.name), family=family_of(tool, self.families), ctx=_call_context(tool_context)
            )
        except Exception:  # a callback failure must not break the agent loop
            log.exception("call cap callback failed")
            return None

    async def after_model_callback(
        self, callback_context: CallbackContext, llm_response: LlmResponse
    ) -> LlmResponse | None:
        """Reports a final answer; never changes the response."""
        try:
            if is_final_text(llm_response):
                self.guard.invocation_answered(callback_context.invocation_id, _session_id(callback_context))
        except Exception:
            log.exception("answer reporting failed")
        return None

    async def after_agent_callback(self, callback_context: CallbackContext) -> None:
        """Frees the invocation's call counts (use on the root agent)."""
        try:
            self.guard.invocation_ended(callback_context.invocation_id, _session_id(callback_context))
        except Exception:
            log.exception("invocation cleanup failed")
        return None


class GuardPlugin(BasePlugin):
    """The same hooks as a runner plugin: they apply to every agent and tool of the runner."""

    def __init__(
        self,
        guard: Guard,
        *,
        families: Mapping[str, str] | None = None,
        enforce_cap: bool = True,
        name: str = DEFAULT_PLUGIN_NAME,
    ) -> None:
        super().__init__(name=name)
        self.hooks = AdkGuardHooks(guard, families=families, enforce_cap=enforce_cap)
        self.guard = guard

    async def before_tool_callback(
        self, *, tool: BaseTool, tool_args: dict[str, Any], tool_context: ToolContext
    ) -> dict[str, Any] | None:
        return await self.hooks.before_tool_callback(tool, tool_args, tool_context)

    async def on_event_callback(self, *, invocation_context: Any, event: Event) -> Event | None:
        try:
            if (
                event.author != "user"
                and event.is_final_response()
                and event.content is not None
                and any(p.text and not p.thought for p in event.content.parts or [])
            ):
                self.guard.invocation_answered(invocation_context.invocation_id, _session_id(invocation_context))
        except Exception:
            log.exception("answer reporting failed")
        return None

    async def after_run_callback(self, *, invocation_context: Any) -> None:
        try:
            self.guard.invocation_ended(invocation_context.invocation_id, _session_id(invocation_context))
        except Exception:
            log.exception("invocation cleanup failed")
        return None
