"""A team's own small API on 127.0.0.1 for the end-to-end tests of issue 37's team features.

It records every request (headers, query, cookies, parsed multipart parts) so a test can assert
what arrived. Credentials: ``keys`` maps an accepted credential (an API key, a bearer token, or
``user:password`` for basic) to the account it belongs to; a refused credential gets a 401 whose
body echoes it back (as careless APIs do), so the tests see that scopegate redacts it.

Routes (the spec is :data:`TEAM_SPEC`, which declares no security schemes):

* ``GET /widgets/{id}``: a widget, with the account the credential belongs to (``echo``: and the
  credential itself in a debug field);
* ``POST /files`` (or ``/v1/files``: the spec's server path, whether or not the base URL keeps it):
  a multipart upload (``file`` + ``purpose``), the shape of OpenAI's createFile;
* ``PUT /v1/blobs/{name}``: a raw binary body (``image/png`` or ``image/jpeg``).
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from email.parser import BytesParser
from email.policy import HTTP
from http.cookies import SimpleCookie
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

TEAM_SPEC: dict[str, Any] = {
    "openapi": "3.0.3",
    "info": {"title": "Team widgets", "version": "1.0"},
    "servers": [{"url": "https://widgets.team.example"}],
    "paths": {
        "/widgets/{id}": {
            "get": {
                "operationId": "getWidget",
                "summary": "One widget",
                "parameters": [
                    {"name": "id", "in": "path", "required": True, "schema": {"type": "string"}},
                    # The vendor documents the key as a plain header parameter, with no scheme.
                    {"name": "X-Team-Key", "in": "header", "required": False, "schema": {"type": "string"}},
                ],
                "responses": {"200": {"description": "the widget"}},
            }
        },
        "/v1/blobs/{name}": {
            "put": {
                "operationId": "putBlob",
                "summary": "Store a blob",
                "parameters": [{"name": "name", "in": "path", "required": True, "schema": {"type": "string"}}],
                "requestBody": {
                    "required": True,
                    "content": {
                        "image/png": {"schema": {"type": "string", "format": "binary"}},
                        "image/jpeg": {"schema": {"type": "string", "format": "binary"}},
                    },
                },
                "responses": {"201": {"description": "stored"}},
            }
        },
    },
}


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    query: dict[str, list[str]]
    cookies: dict[str, str]
    body: bytes
    parts: list[dict[str, Any]] = field(default_factory=list)

    def credential(self) -> str | None:
        """Whatever credential the request carried, in the form ``keys`` uses."""
        auth = self.headers.get("authorization", "")
        if auth.lower().startswith("bearer "):
            return auth[7:]
        if auth.lower().startswith("basic "):
            return base64.b64decode(auth[6:]).decode()
        for value in (
            self.headers.get("x-team-key"),
            (self.query.get("api_key") or [None])[0],
            self.cookies.get("team_session"),
        ):
            if value:
                return value
        return None


@dataclass
class TeamState:
    keys: dict[str, str] = field(default_factory=dict)  # credential -> account
    seen: list[Seen] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def requests(self) -> list[Seen]:
        with self.lock:
            return list(self.seen)

    def clear(self) -> None:
        with self.lock:
            self.seen.clear()


def parse_multipart(content_type: str, body: bytes) -> list[dict[str, Any]]:
    """The parts of a multipart/form-data body: name, filename, content type, bytes."""
    message = BytesParser(policy=HTTP).parsebytes(
        f"Content-Type: {content_type}\r\nMIME-Version: 1.0\r\n\r\n".encode() + body
    )
    if not message.is_multipart():
        raise ValueError("not a multipart body")
    parts = []
    for part in message.iter_parts():
        disposition = part.get("Content-Disposition", "")
        params = dict(part.get_params(header="content-disposition") or [])
        payload = part.get_payload(decode=True) or b""
        parts.append(
            {
                "name": params.get("name"),
                "filename": params.get("filename"),
                "content_type": part.get_content_type() if part.get("Content-Type") else None,
                "data": payload,
                "disposition": str(disposition),
            }
        )
    return parts


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        return None

    def _record(self) -> Seen:
        split = urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        cookies = SimpleCookie()
        cookies.load(self.headers.get("Cookie", ""))
        seen = Seen(
            self.command,
            split.path,
            {k.lower(): v for k, v in self.headers.items()},
            parse_qs(split.query),
            {k: m.value for k, m in cookies.items()},
            body,
        )
        ctype = self.headers.get("Content-Type", "")
        if ctype.startswith("multipart/"):
            seen.parts = parse_multipart(ctype, body)
        with self.server.state.lock:
            self.server.state.seen.append(seen)
        return seen

    def _send(self, status: int, data: Mapping[str, Any]) -> None:
        raw = json.dumps(data).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def _account(self, seen: Seen) -> str | None:
        cred = seen.credential()
        if cred is None or cred not in self.server.state.keys:
            # A careless API: the refused credential is echoed in the error body.
            self._send(401, {"error": f"credential {cred!r} is not valid for this API"})
            return None
        return self.server.state.keys[cred]

    def do_GET(self) -> None:
        seen = self._record()
        account = self._account(seen)
        if account is None:
            return
        if seen.path.startswith("/widgets/"):
            wid = seen.path.rsplit("/", 1)[-1]
            data = {"id": wid, "name": f"widget {wid}", "account": account}
            if wid == "echo":  # a debug field some APIs have: the credential the request came with
                data["debug"] = f"served for credential {seen.credential()}"
            self._send(200, data)
        else:
            self._send(404, {"error": "no such route"})

    def do_POST(self) -> None:
        seen = self._record()
        account = self._account(seen)
        if account is None:
            return
        if seen.path not in ("/files", "/v1/files"):
            self._send(404, {"error": "no such route"})
            return
        files = [p for p in seen.parts if p["filename"] is not None]
        fields = {p["name"]: p["data"].decode() for p in seen.parts if p["filename"] is None}
        if len(files) != 1 or files[0]["name"] != "file" or "purpose" not in fields:
            self._send(400, {"error": "expected one file part 'file' and a 'purpose' field"})
            return
        upload = files[0]
        self._send(
            200,
            {
                "id": "file-" + hashlib.sha256(upload["data"]).hexdigest()[:12],
                "object": "file",
                "bytes": len(upload["data"]),
                "filename": upload["filename"],
                "purpose": fields["purpose"],
                "content_type": upload["content_type"],
                "account": account,
            },
        )

    def do_PUT(self) -> None:
        seen = self._record()
        account = self._account(seen)
        if account is None:
            return
        name = seen.path.rsplit("/", 1)[-1]
        self._send(
            201,
            {
                "name": name,
                "bytes": len(seen.body),
                "sha256": hashlib.sha256(seen.body).hexdigest(),
                "content_type": seen.headers.get("content-type"),
                "account": account,
            },
        )


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, state: TeamState) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.state = state


@dataclass
class RunningTeam:
    base_url: str
    state: TeamState


@contextlib.contextmanager
def running_team_service(keys: Mapping[str, str]) -> Iterator[RunningTeam]:
    """The team API on a free loopback port until the block ends."""
    state = TeamState(keys=dict(keys))
    server = _Server(state)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield RunningTeam(f"http://127.0.0.1:{server.server_address[1]}", state)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
