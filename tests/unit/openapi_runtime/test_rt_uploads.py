"""Uploads (issue 37), pure parts and the file sources: which bodies carry files, how the model sees
them, the multipart encoding, type checks, and the MCP uploads folder's confinement."""

from __future__ import annotations

import asyncio
import os
from email.parser import BytesParser
from email.policy import HTTP
from pathlib import Path
from typing import Any

import pytest

from scopegate.context import CallContext
from scopegate.files import AgentFile, TooLarge
from scopegate.identity.model import Identity
from scopegate.openapi.model import MediaType
from scopegate.openapi.runtime import OperationToolset, ToolsetSettings
from scopegate.openapi.runtime.uploads import UploadLimits, encode_multipart
from scopegate.openapi.uploads import body_type_for, file_shape, part_types, type_allowed, upload_kind
from scopegate.server.uploads import UploadsFolder, plain_name

AVATAR_SPEC: dict[str, Any] = {
    "openapi": "3.1.0",
    "info": {"title": "t", "version": "1"},
    "paths": {
        "/avatars": {
            "post": {
                "operationId": "setAvatar",
                "requestBody": {
                    "required": True,
                    "content": {
                        "multipart/form-data": {
                            "schema": {
                                "type": "object",
                                "required": ["image", "user"],
                                "properties": {
                                    "image": {"type": "string", "format": "binary"},
                                    "extra": {"type": "array", "items": {"type": "string", "format": "binary"}},
                                    "user": {"type": "string", "maxLength": 8},
                                    "tags": {"type": "array", "items": {"type": "string"}},
                                    "meta": {"type": "object", "properties": {"a": {"type": "integer"}}},
                                },
                            },
                            "encoding": {"image": {"contentType": "image/png, image/jpeg"}},
                        }
                    },
                },
                "responses": {"200": {"description": "ok"}},
            }
        }
    },
}


class Files:
    def __init__(self, files: dict[str, AgentFile]) -> None:
        self.files = files

    async def names(self) -> list[str]:
        return sorted(self.files)

    async def load(self, name: str, max_bytes: int) -> AgentFile | TooLarge | None:
        got = self.files.get(name)
        return TooLarge(len(got.data)) if got is not None and len(got.data) > max_bytes else got


def test_which_bodies_carry_files() -> None:
    assert upload_kind("multipart/form-data; charset=utf-8") == "multipart"
    assert upload_kind("multipart/mixed") is None
    assert upload_kind("application/octet-stream") == "binary"
    assert upload_kind("image/png") == "binary"
    assert upload_kind("application/pdf", {"type": "string", "format": "binary"}) == "binary"
    assert upload_kind("application/json") is None
    assert file_shape({"type": "string", "format": "binary"}) == "one"
    assert file_shape({"type": "string", "contentMediaType": "image/png"}) == "one"
    assert file_shape({"type": "array", "items": {"type": "string", "format": "binary"}}) == "many"
    assert file_shape({"type": "string"}) is None
    media = MediaType("multipart/form-data", {}, {"a": {"contentType": "image/*"}, "b": {"contentType": "*/*"}})
    assert part_types(media, "a", {}) == ("image/*",)
    assert part_types(media, "b", {}) == ()
    assert type_allowed("image/png", ("image/*",)) and not type_allowed("text/plain", ("image/*",))
    assert body_type_for("image/png", ("image/png", "image/jpeg")) == "image/png"
    assert body_type_for("text/plain", ("application/octet-stream",)) == "application/octet-stream"
    assert body_type_for("text/plain", ("image/png",)) is None


def test_without_uploads_the_body_stays_refused_and_with_them_files_are_names() -> None:
    from scopegate.errors import ConfigError

    with pytest.raises(ConfigError, match="multipart"):
        OperationToolset(ToolsetSettings(spec=AVATAR_SPEC, allow=("setAvatar",), base_url="http://127.0.0.1:9"))
    toolset = OperationToolset(
        ToolsetSettings(spec=AVATAR_SPEC, allow=("setAvatar",), base_url="http://127.0.0.1:9", uploads=UploadLimits())
    )
    props = toolset.tools[0].parameters_schema()["properties"]
    assert props["image"]["type"] == "string" and "image/png, image/jpeg" in props["image"]["description"]
    assert props["extra"]["type"] == "array" and props["extra"]["items"]["type"] == "string"
    assert props["user"] == {"type": "string", "maxLength": 8}
    asyncio.run(toolset.aclose())


def _built(toolset: OperationToolset, args: dict[str, Any], files: Files) -> Any:
    tool = toolset.tools[0]
    built = tool.builder.build(args)
    plan = tool.builder.upload
    assert plan is not None and built.upload is not None
    loaded = asyncio.run(plan.load(built.upload, files))
    if isinstance(loaded, dict):
        return loaded
    return plan.encode(built.upload, loaded)


def test_multipart_body_and_refusals() -> None:
    toolset = OperationToolset(
        ToolsetSettings(
            spec=AVATAR_SPEC,
            allow=("setAvatar",),
            base_url="http://127.0.0.1:9",
            uploads=UploadLimits(max_file_bytes=64),
        )
    )
    files = Files(
        {
            "me.png": AgentFile("me.png", b"\x89PNG-bytes", "image/png"),
            'we"ird.jpg': AgentFile('we"ird.jpg', b"jpeg", None),
            "notes.txt": AgentFile("notes.txt", b"text", "text/plain"),
            "big.png": AgentFile("big.png", b"x" * 65, "image/png"),
        }
    )
    args = {
        "image": "me.png",
        "extra": ["notes.txt", 'we"ird.jpg'],
        "user": "ana",
        "tags": ["a", "b"],
        "meta": {"a": 1},
    }
    body, ctype = _built(toolset, args, files)
    message = BytesParser(policy=HTTP).parsebytes(f"Content-Type: {ctype}\r\n\r\n".encode() + body)
    parts = [(p.get_param("name", header="content-disposition"), p.get_filename(), p.get_content_type(),
              p.get_payload(decode=True)) for p in message.iter_parts()]  # fmt: skip
    assert ("image", "me.png", "image/png", b"\x89PNG-bytes") in parts
    assert ("extra", "notes.txt", "text/plain", b"text") in parts
    assert ("extra", "we_ird.jpg", "image/jpeg", b"jpeg") in parts  # the quote cannot end the header value
    assert ("user", None, "text/plain", b"ana") in parts
    assert [p[3] for p in parts if p[0] == "tags"] == [b"a", b"b"]
    assert ("meta", None, "application/json", b'{"a":1}') in parts

    assert _built(toolset, {**args, "image": "notes.txt"}, files)["error_code"] == "FILE_TYPE_NOT_ALLOWED"
    assert _built(toolset, {**args, "image": "big.png"}, files)["error_code"] == "FILE_TOO_LARGE"
    missing = _built(toolset, {**args, "image": "nope.png"}, files)
    assert missing["error_code"] == "FILE_NOT_FOUND" and "me.png" in missing["available"]
    from scopegate.errors import ArgumentsInvalid

    with pytest.raises(ArgumentsInvalid) as weird:  # control characters: not a name
        toolset.tools[0].builder.build({**args, "image": 'we"ird\r\n.jpg'})
    assert weird.value.problems == [
        {"field": "image", "problem": "must be the name of a file of this session (text), not its content"}
    ]

    with pytest.raises(ArgumentsInvalid) as bad:
        toolset.tools[0].builder.build({**args, "user": "much-too-long-name"})
    assert bad.value.problems[0]["field"] == "user"
    with pytest.raises(ArgumentsInvalid):
        toolset.tools[0].builder.build({**args, "image": 42})
    asyncio.run(toolset.aclose())


def test_no_file_source_means_no_file() -> None:
    toolset = OperationToolset(
        ToolsetSettings(spec=AVATAR_SPEC, allow=("setAvatar",), base_url="http://127.0.0.1:9", uploads=UploadLimits())
    )
    result = asyncio.run(toolset.tools[0].run({"image": "me.png", "user": "ana"}, CallContext(state={"user_id": "a"})))
    assert result.result["error_code"] == "FILE_NOT_FOUND"
    asyncio.run(toolset.aclose())


def test_multipart_text_is_framed_safely() -> None:
    body, ctype = encode_multipart([("f", b"--x\r\n", None, 'a"b.txt')])
    boundary = ctype.split("boundary=")[1]
    assert body.count(boundary.encode()) == 2


def test_the_uploads_folder_shows_each_user_only_their_own_regular_files(tmp_path: Path) -> None:
    root = tmp_path / "uploads"
    ana = root / "team" / "ana"
    ben = root / "team" / "ben"
    ana.mkdir(parents=True)
    ben.mkdir(parents=True)
    (ana / "a.txt").write_bytes(b"ana's")
    (ana / ".hidden").write_bytes(b"no")
    (ana / "sub").mkdir()
    (ben / "b.txt").write_bytes(b"ben's")
    os.symlink(ben / "b.txt", ana / "link.txt")
    folder = UploadsFolder(root)
    mine = folder.for_identity(Identity(tenant="team", user="ana"))
    assert mine is not None
    assert asyncio.run(mine.names()) == ["a.txt"]
    assert asyncio.run(mine.load("a.txt", 100)) == AgentFile("a.txt", b"ana's", "text/plain")
    assert asyncio.run(mine.load("scopegate://uploads/a.txt", 100)) is not None
    for sneaky in ("link.txt", "../ben/b.txt", ".hidden", "sub", "scopegate://uploads/..%2Fben%2Fb.txt"):
        assert asyncio.run(mine.load(sneaky, 100)) is None, sneaky
    assert isinstance(asyncio.run(mine.load("a.txt", 2)), TooLarge)
    assert folder.for_identity(Identity(tenant="team")) is None  # no user, no folder
    dotted = folder.for_identity(Identity(tenant="..", user=".."))
    assert dotted is None
    assert plain_name("a/b") is None and plain_name("scopegate://uploads/x%20y") == "x y"


def test_a_swagger2_form_file_parameter_is_a_file_name() -> None:
    spec = {
        "swagger": "2.0",
        "info": {"title": "t", "version": "1"},
        "paths": {
            "/pet/{petId}/uploadImage": {
                "post": {
                    "operationId": "uploadFile",
                    "consumes": ["multipart/form-data"],
                    "parameters": [
                        {"name": "petId", "in": "path", "required": True, "type": "integer"},
                        {"name": "additionalMetadata", "in": "formData", "type": "string"},
                        {"name": "file", "in": "formData", "type": "file", "required": True},
                    ],
                    "responses": {"200": {"description": "ok"}},
                }
            }
        },
    }
    settings = ToolsetSettings(spec=spec, allow=("uploadFile",), base_url="http://127.0.0.1:9", uploads=UploadLimits())
    toolset = OperationToolset(settings)
    built = toolset.tools[0].builder.build({"petId": 1, "file": "a.png", "additionalMetadata": "m"})
    assert built.path == "/pet/1/uploadImage"
    assert built.upload is not None and built.upload.files == (("file", ("a.png",)),)
    assert built.upload.fields == (("additionalMetadata", "m"),)
    asyncio.run(toolset.aclose())


@pytest.mark.parametrize("uploads", [None, UploadLimits()])
def test_a_json_body_is_never_a_file_even_with_a_binary_format(uploads: UploadLimits | None) -> None:
    spec = {
        "openapi": "3.0.0",
        "info": {"title": "t", "version": "1"},
        "paths": {
            "/x": {
                "post": {
                    "operationId": "x",
                    "requestBody": {
                        "required": True,
                        "content": {"application/json": {"schema": {"type": "string", "format": "binary"}}},
                    },
                    "responses": {"200": {"description": "ok"}},
                }
            }
        },
    }
    toolset = OperationToolset(ToolsetSettings(spec=spec, allow=("x",), base_url="http://127.0.0.1:9", uploads=uploads))
    assert toolset.tools[0].declaration.binding.file_inputs == ()
    assert toolset.tools[0].builder.build({"body": "abc"}).body == b'"abc"'
    asyncio.run(toolset.aclose())
