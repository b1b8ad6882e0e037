"""Uploads at run time: read the files the model named from the session, check them, encode the body.

The request builder validates the model's arguments as usual (a file input is a
name; the other multipart fields are checked against the spec's schema) and
leaves a :class:`PendingUpload` on the request. Before anything is sent (and
before the user is asked to confirm), :meth:`UploadPlan.attach` reads each named
file from ``ctx.files`` (the adapter's :class:`~scopegate.files.FileSource`: ADK
artifacts, an MCP user's uploads), within the :class:`UploadLimits`, checks its
type against what the spec accepts, and encodes ``multipart/form-data`` (file
parts with their name and type; text parts; objects as JSON parts) or the
binary body. Failures are envelopes: ``FILE_NOT_FOUND`` (listing the names the
session has), ``FILE_TOO_LARGE``, ``FILE_TYPE_NOT_ALLOWED``. File bytes are never
logged, echoed or shown to the model.
"""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from scopegate.errors import ArgumentsInvalid, ConfigError, tool_error
from scopegate.files import (
    FILE_NOT_FOUND,
    FILE_TOO_LARGE,
    FILE_TYPE_NOT_ALLOWED,
    MAX_LISTED_NAMES,
    AgentFile,
    FileSource,
    TooLarge,
)
from scopegate.openapi.model import MediaType, ToolBinding
from scopegate.openapi.simplify import deref
from scopegate.openapi.uploads import (
    MAX_FILE_NAME_CHARS,
    MAX_FILES_PER_INPUT,
    MULTIPART_FORM,
    base_media,
    body_type_for,
    body_types,
    file_shape,
    part_types,
    type_allowed,
    upload_kind,
)

_PART_NAME_OK = re.compile(r'^[^"\r\n\\]{1,256}$')
_NAME_OK = re.compile(r"^[^\x00-\x1f\x7f]+$")


@dataclass(frozen=True)
class UploadLimits:
    """Bounds of one call's uploads: each file, all files together, how many."""

    max_file_bytes: int = 10 * 1024 * 1024
    max_total_bytes: int = 25 * 1024 * 1024
    max_files: int = MAX_FILES_PER_INPUT

    def __post_init__(self) -> None:
        if min(self.max_file_bytes, self.max_total_bytes, self.max_files) < 1:
            raise ConfigError("upload limits must be positive")


@dataclass(frozen=True)
class PendingUpload:
    """What the builder leaves for the runtime: the text fields and, per part, the file names."""

    fields: tuple[tuple[str, Any], ...]
    files: tuple[tuple[str, tuple[str, ...]], ...]  # part name ("" for a binary body) -> file names


@dataclass(frozen=True)
class _FileInput:
    part: str  # "" for a binary body
    many: bool
    allowed: tuple[str, ...]


class UploadPlan:
    """How one operation's upload body is built; compiled once per tool."""

    def __init__(self, binding: ToolBinding, media: MediaType, limits: UploadLimits) -> None:
        kind = upload_kind(media.media_type, media.schema)
        if kind is None:
            raise ConfigError(f"{binding.operation.label}: {media.media_type!r} is not an upload body")
        self.kind = kind
        self.limits = limits
        self.media = media
        schema = media.schema if isinstance(media.schema, Mapping) else {}
        defs = schema.get("$defs") if isinstance(schema.get("$defs"), Mapping) else None
        root = deref(schema, defs)
        props = root.get("properties") if isinstance(root, Mapping) else None
        self._props: Mapping[str, Any] = props if isinstance(props, Mapping) else {}
        self._defs = defs
        rb = binding.operation.request_body
        self.offered = body_types(rb.content) if rb is not None else ()
        self.inputs: dict[str, _FileInput] = {}
        for am in binding.arguments:
            if am.argument not in binding.file_inputs:
                continue
            if am.location == "body":
                self.inputs[am.argument] = _FileInput("", False, self.offered)
                continue
            part = am.original_name or am.argument
            if not _PART_NAME_OK.match(part):
                raise ConfigError(f"{binding.operation.label}: multipart part name {part!r} cannot be sent")
            prop = self._props.get(part)
            many = file_shape(prop, defs) == "many"
            self.inputs[am.argument] = _FileInput(part, many, part_types(media, part, prop, defs))
        for name in self._props:
            if not _PART_NAME_OK.match(str(name)):
                raise ConfigError(f"{binding.operation.label}: multipart part name {name!r} cannot be sent")

    # -- building (pure) ------------------------------------------------------------------------
    def names(self, argument: str, value: Any) -> tuple[str, ...]:
        """The file names a file argument gives; :class:`ArgumentsInvalid` when it is not a name (or names)."""
        spec = self.inputs[argument]
        values = value if spec.many and isinstance(value, list) else [value]
        problem = None
        if not values or len(values) > self.limits.max_files:
            problem = f"must name 1 to {self.limits.max_files} files"
        elif not all(isinstance(v, str) and 0 < len(v) <= MAX_FILE_NAME_CHARS and _NAME_OK.match(v) for v in values):
            problem = "must be the name of a file of this session (text), not its content"
        if problem is not None:
            raise ArgumentsInvalid([{"field": argument, "problem": problem}])
        return tuple(str(v) for v in values)

    def placeholder(self, argument: str) -> Any:
        """A stand-in for the file in the body schema check (a binary string accepts any string)."""
        return [""] if self.inputs[argument].many else ""

    # -- attaching (reads the session's files) ---------------------------------------------------
    async def load(
        self, pending: PendingUpload, files: FileSource | None
    ) -> list[tuple[str, AgentFile]] | dict[str, Any]:
        """Every named file, read and checked; an error envelope for the first that cannot be sent."""
        wanted = [(part, name) for part, names in pending.files for name in names]
        if len(wanted) > self.limits.max_files:
            return tool_error(FILE_TOO_LARGE, f"At most {self.limits.max_files} files can be sent in one call.")
        if files is None:
            return tool_error(FILE_NOT_FOUND, "This session has no files to upload from; nothing was sent.")
        loaded: list[tuple[str, AgentFile]] = []
        total = 0
        for part, name in wanted:
            got = await files.load(name, self.limits.max_file_bytes)
            if isinstance(got, TooLarge) or (got is not None and len(got.data) > self.limits.max_file_bytes):
                return tool_error(
                    FILE_TOO_LARGE,
                    f"The file {name!r} is larger than {self.limits.max_file_bytes} bytes; nothing was sent.",
                    limit_bytes=self.limits.max_file_bytes,
                )
            if got is None:
                available = sorted(await files.names())[:MAX_LISTED_NAMES]
                return tool_error(
                    FILE_NOT_FOUND,
                    f"This session has no file named {name!r}; nothing was sent. Name one of the available files.",
                    available=available,
                )
            total += len(got.data)
            if total > self.limits.max_total_bytes:
                return tool_error(
                    FILE_TOO_LARGE,
                    f"The files together are larger than {self.limits.max_total_bytes} bytes; nothing was sent.",
                    limit_bytes=self.limits.max_total_bytes,
                )
            refused = self._type_problem(part, got)
            if refused is not None:
                return refused
            loaded.append((part, got))
        return loaded

    def _type_problem(self, part: str, got: AgentFile) -> dict[str, Any] | None:
        if self.kind == "binary":
            if body_type_for(got.media_type, self.offered) is not None:
                return None
            allowed: Sequence[str] = self.offered
        else:
            allowed = next((i.allowed for i in self.inputs.values() if i.part == part), ())
            if type_allowed(got.media_type, allowed):
                return None
        return tool_error(
            FILE_TYPE_NOT_ALLOWED,
            f"The file {got.name!r} is {got.media_type}; this operation takes {', '.join(allowed)}. Nothing was sent.",
            file_type=got.media_type,
            allowed=list(allowed),
        )

    def encode(self, pending: PendingUpload, loaded: Sequence[tuple[str, AgentFile]]) -> tuple[bytes, str]:
        """The body and its Content-Type."""
        if self.kind == "binary":
            ((_, got),) = loaded
            sent = body_type_for(got.media_type, self.offered)
            assert sent is not None  # load() checked it
            return got.data, sent
        parts: list[tuple[str, bytes, str | None, str | None]] = []
        for name, value in pending.fields:
            parts.extend(self._text_parts(name, value))
        for part, got in loaded:
            parts.append((part, got.data, got.media_type, _safe_filename(got.name)))
        return encode_multipart(parts)

    def _text_parts(self, name: str, value: Any) -> list[tuple[str, bytes, str | None, str | None]]:
        declared = base_media(str((self.media.encoding.get(name) or {}).get("contentType") or ""))
        if value is None:
            return []
        if (
            declared.endswith("json")
            or isinstance(value, dict)
            or (isinstance(value, list) and any(isinstance(v, dict | list) for v in value))
        ):
            text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
            return [(name, text.encode("utf-8"), "application/json", None)]
        if isinstance(value, list):  # an array of scalars: one part per item, the OpenAPI default
            return [(name, _scalar(v).encode("utf-8"), None, None) for v in value]
        return [(name, _scalar(value).encode("utf-8"), None, None)]


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return value if isinstance(value, str) else json.dumps(value)


def _safe_filename(name: str) -> str:
    """The name shown in Content-Disposition: the last path segment, quoting characters replaced."""
    base = name.replace("\\", "/").rsplit("/", 1)[-1] or "file"
    return "".join(c if 0x20 <= ord(c) < 0x7F and c not in '"' else "_" for c in base)[:MAX_FILE_NAME_CHARS]


def encode_multipart(parts: Sequence[tuple[str, bytes, str | None, str | None]]) -> tuple[bytes, str]:
    """``multipart/form-data`` (RFC 7578) of (name, data, content type, file name) parts."""
    while True:
        boundary = "----scopegate" + secrets.token_hex(16)
        marker = boundary.encode("ascii")
        if not any(marker in data for _, data, _, _ in parts):
            break
    chunks: list[bytes] = []  # joined once: the body is the only copy of the files' bytes
    for name, data, ctype, filename in parts:
        disposition = f'form-data; name="{name}"' + (f'; filename="{filename}"' if filename is not None else "")
        head = f"--{boundary}\r\nContent-Disposition: {disposition}\r\n"
        if ctype:
            head += f"Content-Type: {ctype}\r\n"
        chunks += [(head + "\r\n").encode(), data, b"\r\n"]
    chunks.append(b"--" + marker + b"--\r\n")
    return b"".join(chunks), f"{MULTIPART_FORM}; boundary={boundary}"
