"""A loopback HTTP service that answers every operation of a large OpenAPI spec from a small world.

``SpecWorld(spec_path, world)`` routes a request to the spec's operation (method + path template),
finds the records its path names (404 in the API's own error style when an id is unknown or
belongs under another parent), and answers with the operation's own 2xx response schema filled
from those records (:mod:`.shapes`). A listing shows the records of the kind its last path
segment names, under the parents of its path and the filters of its query. Writes answer as the
API would and change nothing (every case starts from the same world); every request is recorded.

A world (JSON, next to the eval sets) names its kinds::

    {"error_style": "chargebee" | "cloudflare",
     "envelope": {"success": true, "errors": [], "messages": []},   # top-level values of every body
     "kinds": {"subscription": {"plural": "subscriptions", "params": ["subscription-id"],
                                "records": {"sub_1": {"id": "sub_1", "customer_id": "cus_1", ...}}}}}

A record links to its parents by ``<kind>_id`` fields (``customer_id``), which is also how a
nested object of a body (``customer`` in a subscription) finds its record.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from scopegate_lab.spec_world.shapes import Resolver, fill

METHODS = ("get", "post", "put", "patch", "delete")
CALLS_PATH = "/__spec_world/calls"


@dataclass(frozen=True)
class Route:
    method: str
    template: str
    pattern: re.Pattern[str]
    params: tuple[str, ...]
    operation: Mapping[str, Any]

    @property
    def operation_id(self) -> str:
        return str(self.operation.get("operationId") or f"{self.method} {self.template}")


@dataclass(frozen=True)
class Call:
    method: str
    path: str
    query: dict[str, str]
    body: Any
    operation_id: str | None
    status: int


def routes(document: Mapping[str, Any]) -> list[Route]:
    """One route per operation; static templates before templated ones (``/dns_records/export`` wins)."""
    out = []
    for template, item in (document.get("paths") or {}).items():
        if not isinstance(item, Mapping):
            continue
        params = tuple(re.findall(r"\{([^}]+)\}", template))
        regex = "".join(
            "([^/]+)" if part.startswith("{") else re.escape(part) for part in re.split(r"(\{[^}]+\})", template)
        )
        for method in METHODS:
            if isinstance(item.get(method), Mapping):
                out.append(Route(method.upper(), template, re.compile(f"^{regex}/?$"), params, item[method]))
    return sorted(out, key=lambda r: (len(r.params), -len(r.template)))


@dataclass
class World:
    kinds: dict[str, dict[str, Any]]
    error_style: str = "plain"
    envelope: dict[str, Any] = field(default_factory=dict)
    list_key: str = "list"  # the body property a listing's records go to
    record_key: str = "result"  # the body property that shows the record itself (an envelope's result)

    @classmethod
    def load(cls, path: str | Path) -> World:
        data = json.loads(Path(path).read_text("utf-8"))
        return cls(
            kinds=data["kinds"],
            error_style=data.get("error_style", "plain"),
            envelope=data.get("envelope", {}),
            list_key=data.get("list_key", "list"),
            record_key=data.get("record_key", "result"),
        )

    def kind_of_param(self, param: str) -> str | None:
        return next((k for k, v in self.kinds.items() if param in v.get("params", ())), None)

    def kind_of_segment(self, segment: str) -> str | None:
        return next((k for k, v in self.kinds.items() if v.get("plural") == segment), None)

    def record(self, kind: str, ident: str) -> dict[str, Any] | None:
        found = self.kinds[kind].get("records", {}).get(ident)
        return dict(found) if isinstance(found, Mapping) else None

    def records(self, kind: str) -> list[dict[str, Any]]:
        return [dict(r) for r in self.kinds[kind].get("records", {}).values()]

    def related(self, prop: str, ctx: Mapping[str, Any]) -> Mapping[str, Any] | None:
        if prop not in self.kinds:
            return None
        if ctx.get("__kind") == prop:
            return ctx
        ident = ctx.get(f"{prop}_id")
        return self.record(prop, str(ident)) if ident is not None else None


def _json_body(raw: bytes, content_type: str) -> Any:
    if not raw:
        return None
    text = raw.decode("utf-8", "replace")
    if "json" in content_type:
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            return text
    if "form" in content_type:
        return dict(parse_qsl(text, keep_blank_values=True))
    return text


def _success_schema(operation: Mapping[str, Any]) -> Any:
    responses = operation.get("responses") or {}
    for code in sorted(responses):
        if str(code).startswith("2"):
            content = (responses[code] or {}).get("content") if isinstance(responses[code], Mapping) else None
            if not content:
                return None
            media = content.get("application/json") or next(iter(content.values()))
            return (media or {}).get("schema")
    return None


def _query_key(name: str) -> str:
    """``customer_id[is]`` -> ``customer_id``; ``account.id`` -> ``account_id``."""
    return name.split("[", 1)[0].replace(".", "_")


class SpecWorld:
    """The service: ``answer(method, target, body, content_type) -> (status, json)``; threads via :meth:`serve`."""

    def __init__(self, spec: str | Path | Mapping[str, Any], world: World) -> None:
        document = json.loads(Path(spec).read_text("utf-8")) if not isinstance(spec, Mapping) else spec
        self.resolver = Resolver(document)
        self.routes = routes(document)
        self.world = world
        self.calls: list[Call] = []
        self.lock = threading.Lock()

    def route(self, method: str, path: str) -> tuple[Route, dict[str, str]] | None:
        for route in self.routes:
            if route.method != method:
                continue
            match = route.pattern.match(path)
            if match:
                return route, {p: unquote(v) for p, v in zip(route.params, match.groups(), strict=True)}
        return None

    def not_found(self, what: str) -> tuple[int, Any]:
        style = self.world.error_style
        message = f"{what} not found"
        if style == "chargebee":
            return 404, {"message": message, "type": "invalid_request", "api_error_code": "resource_not_found",
                         "http_status_code": 404}  # fmt: skip
        if style == "cloudflare":
            return 404, {"success": False, "errors": [{"code": 7003, "message": message}], "messages": [],
                         "result": None}  # fmt: skip
        return 404, {"error": message}

    def answer(self, method: str, target: str, body: Any) -> tuple[int, Any, str | None]:
        parts = urlsplit(target)
        query = dict(parse_qsl(parts.query, keep_blank_values=True))
        found = self.route(method, parts.path)
        if found is None:
            return (*self.not_found(f"{method} {parts.path}"), None)
        route, params = found
        ctx: dict[str, Any] = {}
        parents: list[tuple[str, str]] = []
        for param, value in params.items():
            kind = self.world.kind_of_param(param)
            if kind is None:
                ctx.setdefault(param.replace("-", "_"), value)
                continue
            record = self.world.record(kind, value)
            # an object under a parent it does not belong to is as unknown as a missing one
            if record is None or any(record.get(f"{k}_id", i) != i for k, i in parents):
                return (*self.not_found(f"{kind} {value}"), route.operation_id)
            parents.append((kind, value))
            ctx = {**ctx, **record, "__kind": kind}
        last = parts.path.rstrip("/").rsplit("/", 1)[-1]
        listed = self.world.kind_of_segment(last)
        items = None
        if listed is not None and method == "GET" and (not parents or parents[-1][0] != listed):
            items = [
                {**r, "__kind": listed}
                for r in self.world.records(listed)
                if all(r.get(f"{k}_id", i) == i for k, i in parents)
                and all(_matches(r, _query_key(q), v) for q, v in query.items())
            ]
        if isinstance(body, Mapping) and method != "GET":
            ctx = {**ctx, **{k: v for k, v in body.items() if not isinstance(v, Mapping | list)}}
        schema = _success_schema(route.operation)
        if schema is None:
            return 204, None, route.operation_id
        top = {**self.world.envelope, **ctx}
        return (
            200,
            fill(
                self.resolver,
                schema,
                top,
                self.world.related,
                items=items,
                keys=(self.world.list_key, self.world.record_key),
            ),
            route.operation_id,
        )

    def record_call(self, call: Call) -> None:
        with self.lock:
            self.calls.append(call)

    def serve(self, port: int = 0) -> ThreadingHTTPServer:
        handler = type("Handler", (_Handler,), {"world": self})
        server = ThreadingHTTPServer(("127.0.0.1", port), handler)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return server


def _matches(record: Mapping[str, Any], key: str, value: str) -> bool:
    """A query parameter filters on a record field of that name; other parameters (limit, page) do not."""
    if key not in record or isinstance(record[key], Mapping | list):
        return True
    have = record[key]
    if isinstance(have, bool):
        return str(have).lower() == value.lower()
    return str(have) == value


class _Handler(BaseHTTPRequestHandler):
    world: SpecWorld
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        return

    def _send(self, status: int, payload: Any) -> None:
        data = b"" if payload is None else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _handle(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if self.path == CALLS_PATH:
            with self.world.lock:
                calls = [c.__dict__ for c in self.world.calls]
            self._send(200, {"calls": calls})
            return
        body = _json_body(raw, self.headers.get("Content-Type") or "")
        try:
            status, payload, op = self.world.answer(self.command, self.path, body)
        except Exception as exc:  # a lab service: say what broke instead of dropping the connection
            status, payload, op = 500, {"error": f"{type(exc).__name__}: {exc}"}, None
        parts = urlsplit(self.path)
        self.world.record_call(Call(self.command, parts.path, dict(parse_qsl(parts.query)), body, op, status))
        self._send(status, payload)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _handle
