"""Hand-written application tools with the guarantees of generated ones.

``@app_tool(read_only=...)`` turns a typed Python function into a :class:`AppTool` (a
:class:`~scopegate.tools.ScopedTool`): the declaration is generated from its type hints, the
caller's :class:`~scopegate.scope.Scope` (and, where configured, a per-user credential) arrives
in its :class:`AppContext`, never from the model; state-changing tools ask the user first; the
result is bounded and marked untrusted; exceptions never leak. Guards, the ADK adapter and the
MCP server serve it like any other tool, from Python or from a config's ``app_tools`` section.
"""

from scopegate.apptools.context import AppContext, Siblings, ToolReply
from scopegate.apptools.credentials import CredentialProvider, Fixed, FromState
from scopegate.apptools.tool import AppTool, AppToolDefinition, app_tool
from scopegate.errors import CompositionError, ConfirmationRequired, ToolFailure

__all__ = [
    "AppContext",
    "AppTool",
    "AppToolDefinition",
    "CompositionError",
    "ConfirmationRequired",
    "CredentialProvider",
    "Fixed",
    "FromState",
    "Siblings",
    "ToolFailure",
    "ToolReply",
    "app_tool",
]
