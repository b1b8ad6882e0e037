"""The per-call context every tool receives from an adapter (ADK, MCP, CLI)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class CallContext:
    """What an adapter knows about one tool call, besides the model's arguments.

    ``state`` is server-side session state (ADK ``tool_context.state`` or the
    identity an MCP server verified). Tools read scope from it and nothing else.
    """

    state: Mapping[str, Any]
    invocation_id: str | None = None
    session_id: str | None = None
    # Set by adapters that implement a confirmation flow: True approved, False
    # rejected, None not asked yet.
    confirmed: bool | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
