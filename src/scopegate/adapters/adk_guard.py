"""Google ADK glue for the guard: the call cap as a callback or a plugin, and final-answer reporting.

Two ways to put the cap in front of ADK tools:

* callbacks on one agent::

      hooks = AdkGuardHooks(guard)
      LlmAgent(..., before_tool_callback=hooks.before_tool_callback,
               after_model_callback=hooks.after_model_callback)

* a plugin for every agent of a runner::

      InMemoryRunner(agent=agent, app_name=..., plugins=[GuardPlugin(guard)])

  or from the ADK servers: ``adk api_server --extra_plugins
  scopegate.adapters.adk_guard.GuardPlugin``. ADK builds the class with no
  arguments there, so without a ``guard`` the plugin builds its own:
  the ``guards`` section of the config file named by ``$SCOPEGATE_CONFIG``,
  else the defaults (4 searches per invocation, in-memory cache, metrics). A
  config that does not load raises: ADK then logs "Failed to load plugin"
  and serves without it, so check the server log (or pass an instance:
  ``--extra_plugins my_module.my_guard_plugin``).

Both count calls per invocation and family with the guard's :class:`CallCap`
and answer a call past the cap with a ``CALL_LIMIT`` dict, which ADK hands to
the model instead of running the tool. They also report invocations that
ended in a final answer (the searches-per-answered-question metric).

Tools that are already guarded (an :class:`~scopegate.adapters.adk.AdkTool`
over a :class:`~scopegate.guard.GuardedTool`) count their own calls inside the
tool, so the hooks let them through uncounted: each call is counted exactly
once, and nothing the model chooses (such as a repeated function-call id) can
make a call count less.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import Any

from google.adk.agents.callback_context import CallbackContext
from google.adk.events.event import Event
from google.adk.models.llm_response import LlmResponse
from google.adk.plugins.base_plugin import BasePlugin
from google.adk.tools.base_tool import BaseTool
from google.adk.tools.tool_context import ToolContext

from scopegate.adapters.adk import AdkTool, call_context, is_guarded, session_id_of
from scopegate.adapters.adk_scope import ENV_CONFIG
from scopegate.guard.guard import Guard

log = logging.getLogger("scopegate.adapters.adk_guard")
DEFAULT_PLUGIN_NAME = "scopegate_guard"


def default_guard(environ: Mapping[str, str] | None = None) -> Guard:
    """The guard of a plugin built without one: ``$SCOPEGATE_CONFIG``'s ``guards`` section, else the defaults.

    Raises :class:`~scopegate.errors.ConfigError` (or the config's validation
    error) when the file does not load, and when its guards are disabled.
    """
    from scopegate.config.builder import build_guard
    from scopegate.config.loader import load_config
    from scopegate.config.model import GuardsConfig
    from scopegate.errors import ConfigError

    env = os.environ if environ is None else environ
    path = env.get(ENV_CONFIG, "").strip()
    cfg = load_config(path, env).guards if path else GuardsConfig()
    guard = build_guard(cfg)
    if guard is None:
        raise ConfigError(f"{path}: guards are disabled (guards.enabled: false), so there is no guard to install")
    log.info("scopegate GuardPlugin: built its guard from %s", path or "the defaults")
    return guard


def family_of(tool: BaseTool, families: Mapping[str, str] | None = None) -> str:
    """The cap family of an ADK tool: an explicit mapping, a scopegate tool's ``family``,
    else the tool's own name (each foreign tool is its own family)."""
    name = str(tool.name or "")
    if families and name in families:
        return families[name]
    if isinstance(tool, AdkTool):
        return tool.family
    return name


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
        if not self.enforce_cap or is_guarded(tool):
            return None
        try:
            return self.guard.check_cap(
                tool=str(tool.name), family=family_of(tool, self.families), ctx=call_context(tool_context)
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
                self.guard.invocation_answered(callback_context.invocation_id, session_id_of(callback_context))
        except Exception:
            log.exception("answer reporting failed")
        return None

    async def after_agent_callback(self, callback_context: CallbackContext) -> None:
        """Frees the invocation's call counts (use on the root agent)."""
        try:
            self.guard.invocation_ended(callback_context.invocation_id, session_id_of(callback_context))
        except Exception:
            log.exception("invocation cleanup failed")
        return None


class GuardPlugin(BasePlugin):
    """The same hooks as a runner plugin: they apply to every agent and tool of the runner.

    ``guard`` None builds :func:`default_guard` (what ``--extra_plugins`` gets).
    """

    def __init__(
        self,
        guard: Guard | None = None,
        *,
        families: Mapping[str, str] | None = None,
        enforce_cap: bool = True,
        name: str = DEFAULT_PLUGIN_NAME,
    ) -> None:
        super().__init__(name=name)
        if guard is None:
            guard = default_guard()
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
                self.guard.invocation_answered(invocation_context.invocation_id, session_id_of(invocation_context))
        except Exception:
            log.exception("answer reporting failed")
        return None

    async def after_run_callback(self, *, invocation_context: Any) -> None:
        try:
            self.guard.invocation_ended(invocation_context.invocation_id, session_id_of(invocation_context))
        except Exception:
            log.exception("invocation cleanup failed")
        return None
