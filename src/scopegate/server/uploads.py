"""The MCP server's per-user uploads folder: the files an upload tool may send, also served as resources.

A deployment puts each user's files under ``<folder>/<tenant>/<user>/`` (both ids
percent-encoded, so no id can name another folder), e.g. from its own upload
page. Over MCP, the verified caller sees exactly its own folder: ``resources/list``
lists its files as ``scopegate://uploads/<name>``, ``resources/read`` returns one,
and an upload tool's file argument takes the plain name or that URI. An identity
without a user has no folder.

Only regular files directly in the folder count: no subfolders, no dot files,
and a symbolic link is never followed (``O_NOFOLLOW``, opened relative to the
folder). Files are read in a worker thread, at most ``max_bytes`` of them.
"""

from __future__ import annotations

import asyncio
import mimetypes
import os
import stat
from pathlib import Path
from urllib.parse import quote, unquote

from scopegate.files import MAX_LISTED_NAMES, AgentFile, FileSource, TooLarge
from scopegate.identity.model import Identity

URI_PREFIX = "scopegate://uploads/"
_MAX_NAME_CHARS = 255


def _component(value: str) -> str | None:
    encoded = quote(value, safe="")
    return None if encoded in (".", "..") or len(encoded) > _MAX_NAME_CHARS else encoded


def plain_name(name: str) -> str | None:
    """The file name a tool argument or resource URI gives, or None when it cannot be a file of the folder."""
    if name.startswith(URI_PREFIX):
        name = unquote(name[len(URI_PREFIX) :])
    if not name or name.startswith(".") or len(name) > _MAX_NAME_CHARS:
        return None
    if any(c in name for c in "/\\\x00"):
        return None
    return name


def uri_of(name: str) -> str:
    return URI_PREFIX + quote(name, safe="")


class UploadsFolder:
    """The root of every user's uploads; :meth:`for_identity` gives one caller's files."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)

    def for_identity(self, identity: Identity) -> UserUploads | None:
        if identity.user is None:
            return None
        tenant, user = _component(identity.tenant), _component(identity.user)
        if tenant is None or user is None:
            return None
        return UserUploads(self.root / tenant / user)


class UserUploads:
    """One user's uploads folder as a :class:`~scopegate.files.FileSource`."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def __repr__(self) -> str:
        return "UserUploads(<folder>)"

    async def names(self) -> list[str]:
        return await asyncio.to_thread(self._names)

    async def listing(self) -> list[tuple[str, int]]:
        """(name, size) of every file, for ``resources/list``."""
        return await asyncio.to_thread(self._listing)

    async def load(self, name: str, max_bytes: int) -> AgentFile | TooLarge | None:
        plain = plain_name(name)
        if plain is None:
            return None
        return await asyncio.to_thread(self._read, plain, max_bytes)

    def _listing(self) -> list[tuple[str, int]]:
        try:
            entries = list(os.scandir(self.folder))
        except OSError:
            return []
        out = []
        for entry in entries:
            if entry.name.startswith(".") or not entry.is_file(follow_symlinks=False):
                continue
            try:
                out.append((entry.name, entry.stat(follow_symlinks=False).st_size))
            except OSError:
                continue
        return sorted(out)[: MAX_LISTED_NAMES * 4]

    def _names(self) -> list[str]:
        return [name for name, _ in self._listing()][:MAX_LISTED_NAMES]

    def _read(self, name: str, max_bytes: int) -> AgentFile | TooLarge | None:
        try:
            folder = os.open(self.folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        except OSError:
            return None
        try:
            try:
                fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=folder)
            except OSError:
                return None
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode) or info.st_size > max_bytes:
                os.close(fd)
                return TooLarge(info.st_size) if stat.S_ISREG(info.st_mode) else None
            with os.fdopen(fd, "rb") as handle:
                data = handle.read(max_bytes + 1)
            if len(data) > max_bytes:
                return TooLarge(len(data))
        finally:
            os.close(folder)
        guessed, _ = mimetypes.guess_type(name, strict=False)
        return AgentFile(name, data, guessed)


def files_of(folder: UploadsFolder | None, identity: Identity) -> FileSource | None:
    return folder.for_identity(identity) if folder is not None else None
