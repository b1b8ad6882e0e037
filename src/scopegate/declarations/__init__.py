"""Declaration profiles: one tool declared for Gemini, OpenAI strict, Anthropic and MCP, and their lint.

Both adapters (ADK, MCP) and ``scopegate declarations lint`` use these; see
:mod:`scopegate.declarations.profiles` and :mod:`scopegate.declarations.lint`.
"""

from scopegate.declarations.lint import Violation, lint_tools
from scopegate.declarations.profiles import PROFILES, Profile, ToolDecl, render

__all__ = ["PROFILES", "Profile", "ToolDecl", "Violation", "lint_tools", "render"]
