"""Files of the agent's session that a tool may send (uploads), named by the model, never produced by it.

A model cannot write file bytes; the agent can hold them: ADK artifacts
(``tool_context.load_artifact``), an MCP server's per-user uploads folder. An
adapter puts a :class:`FileSource` on the :class:`~scopegate.context.CallContext`
of each call; a tool that uploads asks it for the file the model named. The
source only ever shows the caller's own files.
"""

from __future__ import annotations

import mimetypes
from dataclasses import dataclass
from typing import Protocol

# Error codes of an upload (besides the ones every tool has).
FILE_NOT_FOUND = "FILE_NOT_FOUND"
FILE_TOO_LARGE = "FILE_TOO_LARGE"
FILE_TYPE_NOT_ALLOWED = "FILE_TYPE_NOT_ALLOWED"
DEFAULT_CONTENT_TYPE = "application/octet-stream"
MAX_LISTED_NAMES = 50


@dataclass(frozen=True)
class AgentFile:
    """One file's bytes, its name in the session, and its media type (when known)."""

    name: str
    data: bytes
    content_type: str | None = None

    def __repr__(self) -> str:
        return f"AgentFile({self.name!r}, {len(self.data)} bytes, {self.content_type!r})"

    @property
    def media_type(self) -> str:
        """The declared type, else a guess from the name, else ``application/octet-stream``."""
        if self.content_type:
            return self.content_type.split(";")[0].strip().lower()
        guessed, _ = mimetypes.guess_type(self.name, strict=False)
        return guessed or DEFAULT_CONTENT_TYPE


@dataclass(frozen=True)
class TooLarge:
    """What :meth:`FileSource.load` answers for a file over the limit (not read; its size when known)."""

    size: int | None = None


class FileSource(Protocol):
    """The files of one call's session. Implementations never show another user's files."""

    async def names(self) -> list[str]:
        """The names a tool may be given (at most a few dozen; for error messages)."""
        ...

    async def load(self, name: str, max_bytes: int) -> AgentFile | TooLarge | None:
        """The file called ``name``; None when there is none; :class:`TooLarge` past ``max_bytes``."""
        ...
