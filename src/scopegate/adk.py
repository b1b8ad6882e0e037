"""scopegate for Google ADK: one toolset, the scope-binding plugin, the guard plugin.

    import scopegate
    from scopegate.adk import ScopegateToolset, ScopeBindingPlugin

    app = scopegate.load_config("scopegate.yaml")        # or ToolApp.from_tools([...]) / a list of tools
    root_agent = LlmAgent(name="support", model=..., tools=[ScopegateToolset(app)])

Scope is never an argument: it comes from the identity a ``ScopeBindingPlugin`` bound to the invocation,
a verified signed scope, or session state your server writes (``ScopePolicy``; see the ADK deployment
page of the docs). Needs the ``adk`` extra (``pip install "scopegate[adk]"``).
"""

from __future__ import annotations

from scopegate.adapters.adk import ScopegateToolset, call_context
from scopegate.adapters.adk_guard import GuardPlugin
from scopegate.adapters.adk_scope import ScopeBinding, ScopeBindingPlugin, ScopePolicy, create_signed_session

__all__ = [
    "GuardPlugin",
    "ScopeBinding",
    "ScopeBindingPlugin",
    "ScopePolicy",
    "ScopegateToolset",
    "call_context",
    "create_signed_session",
]
