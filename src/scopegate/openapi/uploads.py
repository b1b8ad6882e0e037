"""Request bodies that carry files: ``multipart/form-data`` file parts and binary bodies. Pure.

A model cannot produce file bytes, so such an input is declared as a *file name*:
a string naming one of the session's files (an ADK artifact, an MCP user's
upload), which the runtime reads and sends (:mod:`scopegate.openapi.runtime.uploads`).
Only with ``TranslateOptions(file_uploads=True)`` (a toolset with ``uploads``
settings); otherwise these bodies stay refused, as before.

* multipart/form-data: a property that is a binary string (``format: binary``
  or ``byte``, ``contentMediaType``/``contentEncoding``), or an array of them,
  is a file input; every other property is a normal argument, validated as
  usual and sent as a text part (objects and arrays of objects as JSON parts).
* a binary body (``application/octet-stream``, ``image/*``, ``application/pdf``...):
  the whole body is one file input, ``body``.

Allowed content types come from the spec: the part's ``encoding.contentType``
(a comma-separated list, wildcards allowed) or the property's
``contentMediaType`` for multipart; the offered media types for a binary body.
``application/octet-stream`` or ``*/*`` allows any file.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

from scopegate.openapi.model import MediaType
from scopegate.openapi.serialize import body_refusal
from scopegate.openapi.simplify import deref

MULTIPART_FORM = "multipart/form-data"
ANY_TYPE = "application/octet-stream"
MAX_FILE_NAME_CHARS = 256
MAX_FILES_PER_INPUT = 10
_FILE_FORMATS = frozenset({"binary", "byte", "base64"})

UploadKind = Literal["multipart", "binary"]
FileShape = Literal["one", "many"]


def base_media(media_type: str) -> str:
    return media_type.split(";")[0].strip().lower()


def upload_kind(media_type: str, schema: Any = None) -> UploadKind | None:
    """``multipart`` for multipart/form-data, ``binary`` for a binary body, else None."""
    base = base_media(media_type)
    if base == MULTIPART_FORM:
        return "multipart"
    if base.startswith("multipart/"):
        return None  # mixed, related...: parts whose layout the spec cannot say
    return "binary" if body_refusal(base, schema) == "binary" else None


def file_shape(schema: Any, defs: Mapping[str, Any] | None = None) -> FileShape | None:
    """``one`` for a binary string, ``many`` for an array of them, else None."""
    s = deref(schema, defs)
    if not isinstance(s, Mapping):
        return None
    typ = s.get("type")
    if typ in (None, "string") and (
        s.get("format") in _FILE_FORMATS or "contentMediaType" in s or "contentEncoding" in s
    ):
        return "one"
    if typ == "array" and file_shape(s.get("items"), defs) == "one":
        return "many"
    return None


def file_argument_schema(
    part: str | None, description: str, shape: FileShape, allowed: Sequence[str]
) -> dict[str, Any]:
    """What the model sees for a file input: the name of one of the session's files, never its content."""
    where = f"the '{part}' part" if part else "the request body"
    types = f" Allowed types: {', '.join(allowed)}." if allowed else ""
    text = (
        f"The name of a file of this session to upload as {where} (a file the agent or the user already has; "
        f"the tool reads it, so give only its name, never its content).{types}"
    )
    if description:
        text += f" The API describes the file as: {description}"
    name: dict[str, Any] = {"type": "string", "minLength": 1, "maxLength": MAX_FILE_NAME_CHARS}
    if shape == "one":
        return {**name, "description": text}
    return {"type": "array", "items": name, "minItems": 1, "maxItems": MAX_FILES_PER_INPUT, "description": text}


def _split_types(value: Any) -> tuple[str, ...]:
    if not isinstance(value, str):
        return ()
    return tuple(t for t in (base_media(x) for x in value.split(",")) if t)


def part_types(media: MediaType, part: str, schema: Any, defs: Mapping[str, Any] | None = None) -> tuple[str, ...]:
    """The content types a multipart file part accepts (``()``: any)."""
    declared = _split_types((media.encoding.get(part) or {}).get("contentType"))
    if declared:
        return () if ANY_TYPE in declared or "*/*" in declared else declared
    s = deref(schema, defs)
    if isinstance(s, Mapping) and s.get("type") == "array":
        s = deref(s.get("items"), defs)
    own = _split_types(s.get("contentMediaType")) if isinstance(s, Mapping) else ()
    return () if ANY_TYPE in own or "*/*" in own else own


def body_types(content: Iterable[MediaType]) -> tuple[str, ...]:
    """The binary media types a body is offered in, in spec order."""
    return tuple(
        dict.fromkeys(base_media(m.media_type) for m in content if upload_kind(m.media_type, m.schema) == "binary")
    )


def body_type_for(media_type: str, offered: Sequence[str]) -> str | None:
    """The Content-Type to send a file of ``media_type`` as a binary body, or None when none fits.

    Its own type when the spec offers it (wildcards too); else ``application/octet-stream`` when
    offered (any bytes); else nothing: the file is not of a type the operation takes.
    """
    specific = [o for o in offered if o != ANY_TYPE]
    if "*/*" in offered or (specific and type_allowed(media_type, specific)):
        return base_media(media_type)
    return ANY_TYPE if ANY_TYPE in offered else None


def type_allowed(media_type: str, allowed: Sequence[str]) -> bool:
    if not allowed:
        return True
    base = base_media(media_type)
    major = base.split("/")[0]
    return any(a == base or a == "*/*" or (a.endswith("/*") and a[:-2] == major) for a in allowed)
