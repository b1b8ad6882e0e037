"""ADK artifacts as the files an upload tool may send (:class:`scopegate.files.FileSource`).

The session's artifacts (``tool_context.load_artifact`` / ``list_artifacts``:
the session's own and the user's ``user:`` ones, as the artifact service keeps
them per app, user and session) are what the model may name. Without an
artifact service the session simply has no files.
"""

from __future__ import annotations

import logging

from google.adk.tools.tool_context import ToolContext

from scopegate.files import MAX_LISTED_NAMES, AgentFile, TooLarge

log = logging.getLogger("scopegate.adapters.adk")


class ArtifactFiles:
    """The artifacts of one ADK tool call's session."""

    def __init__(self, tool_context: ToolContext) -> None:
        self._context = tool_context

    async def names(self) -> list[str]:
        try:
            names = await self._context.list_artifacts()
        except ValueError:  # no artifact service configured
            return []
        return sorted(str(n) for n in names)[:MAX_LISTED_NAMES]

    async def load(self, name: str, max_bytes: int) -> AgentFile | TooLarge | None:
        try:
            part = await self._context.load_artifact(name)
        except ValueError:  # no artifact service configured
            return None
        if part is None:
            return None
        if part.inline_data is not None and part.inline_data.data is not None:
            data, mime = part.inline_data.data, part.inline_data.mime_type
        elif part.text is not None:
            data, mime = part.text.encode("utf-8"), "text/plain"
        else:
            log.info("artifact %r has neither inline data nor text; it cannot be uploaded", name)
            return None
        if len(data) > max_bytes:
            return TooLarge(len(data))
        return AgentFile(name, data, mime)
