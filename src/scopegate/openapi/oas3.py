"""OpenAPI 3.0 / 3.1 operation objects -> :class:`~scopegate.openapi.model.Operation`.

Only what a tool needs is resolved: parameters (path-level merged with the
operation's own, the operation winning by ``(in, name)``) and the request
body. Response schemas are resolved only when asked for (``with_responses``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from scopegate.openapi import model
from scopegate.openapi.build import BuildContext, RawOperation, assemble
from scopegate.openapi.errors import RefError
from scopegate.openapi.fields import parse_servers, text
from scopegate.openapi.model import MediaType, OmittedInput, Parameter, RequestBody, Response

PARAM_LOCATIONS: frozenset[str] = frozenset({"path", "query", "header", "cookie"})
BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})


def build_operation(ctx: BuildContext, info: model.OperationInfo, raw: RawOperation) -> model.Operation:
    item, idoc, op, odoc = raw.item, raw.item_doc, raw.op, raw.op_doc
    params = parameters(ctx, item.get("parameters"), idoc, "path item")
    params.update(parameters(ctx, op.get("parameters"), odoc, "operation"))
    body = request_body(ctx, op.get("requestBody"), odoc, sends_body=info.method in BODY_METHODS)
    servers = parse_servers(op.get("servers")) or parse_servers(item.get("servers")) or ctx.servers
    responses = _responses(ctx, op.get("responses"), odoc) if ctx.with_responses else ()
    summary = text(op.get("summary")) or text(item.get("summary"))
    description = text(op.get("description")) or text(item.get("description"))
    return assemble(
        ctx,
        info,
        op,
        texts=(summary, description),
        parameters=params.values(),
        request_body=body,
        responses=responses,
        servers=servers,
    )


def parameters(ctx: BuildContext, raw: Any, doc: str, level: str) -> dict[tuple[str, str], Parameter]:
    out: dict[tuple[str, str], Parameter] = {}
    for p, pdoc in ctx.parameter_objects(raw, doc, level):
        name, location = p["name"], p.get("in")
        required = location == "path" or p.get("required") is True
        if location not in PARAM_LOCATIONS:
            ctx.omitted.append(
                OmittedInput("parameter", name, "unsupported_parameter", required, f"location {location!r}")
            )
            continue
        loc = cast(model.ParamLocation, location)
        media_type: str | None = None
        schema: Any = {}
        try:
            if "schema" in p:
                schema = ctx.schema(p["schema"], pdoc)
            elif isinstance(p.get("content"), Mapping) and p["content"]:
                media_type, media = next(iter(p["content"].items()))
                media_type = str(media_type)
                if isinstance(media, Mapping) and "schema" in media:
                    schema = ctx.schema(media["schema"], pdoc)
        except RefError as exc:
            ctx.omit(loc, name, exc, required=required)
            continue
        out[(loc, name)] = Parameter(
            name=name,
            location=loc,
            required=required,
            schema=schema if isinstance(schema, dict) else {},
            description=text(p.get("description")),
            style=p.get("style") if isinstance(p.get("style"), str) else None,
            explode=p.get("explode") if isinstance(p.get("explode"), bool) else None,
            deprecated=p.get("deprecated") is True,
            allow_reserved=p.get("allowReserved") is True,
            media_type=media_type,
            allow_empty_value=p.get("allowEmptyValue") is True,
        )
    return out


def content(ctx: BuildContext, raw: Any, doc: str) -> tuple[MediaType, ...]:
    if not isinstance(raw, Mapping):
        return ()
    out: list[MediaType] = []
    for media_type, media in raw.items():
        if not isinstance(media, Mapping):
            media = {}
        schema = ctx.schema(media["schema"], doc) if "schema" in media else {}
        encoding = media.get("encoding")
        out.append(
            MediaType(
                media_type=str(media_type),
                schema=schema if isinstance(schema, dict) else {},
                encoding={str(k): dict(v) for k, v in encoding.items() if isinstance(v, Mapping)}
                if isinstance(encoding, Mapping)
                else {},
            )
        )
    return tuple(out)


def request_body(ctx: BuildContext, raw: Any, doc: str, *, sends_body: bool = False) -> RequestBody | None:
    """The request body; an unreadable one is omitted, or fails the operation for POST/PUT/PATCH."""
    if raw is None:
        return None
    try:
        body, bdoc = ctx.deref(raw, doc)
    except RefError as exc:
        ctx.omit("body", "body", exc, required=sends_body)
        return None
    if not isinstance(body, Mapping):
        return None
    required = body.get("required") is True
    try:
        media = content(ctx, body.get("content"), bdoc)
    except RefError as exc:
        ctx.omit("body", "body", exc, required=required)
        return None
    if not media:
        return None
    return RequestBody(required=required, content=media, description=text(body.get("description")))


def _responses(ctx: BuildContext, raw: Any, doc: str) -> tuple[Response, ...]:
    if not isinstance(raw, Mapping):
        return ()
    out: list[Response] = []
    for status, entry in raw.items():
        if isinstance(status, str) and status.startswith("x-"):
            continue
        resp, rdoc = ctx.deref(entry, doc)
        if not isinstance(resp, Mapping):
            continue
        out.append(
            Response(
                status=str(status),
                description=text(resp.get("description")),
                content=content(ctx, resp.get("content"), rdoc),
            )
        )
    return tuple(out)
