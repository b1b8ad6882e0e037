"""Swagger 2.0 -> the OpenAPI 3 shaped model.

* ``schemes`` x ``host`` + ``basePath`` -> servers (``https`` when no scheme);
* ``in: body`` -> a request body for every ``consumes`` media type;
* ``in: formData`` -> an object schema under the form media types in
  ``consumes`` (``multipart/form-data`` when a ``type: file`` parameter exists,
  else ``application/x-www-form-urlencoded`` by default);
* ``collectionFormat`` -> ``style``/``explode`` (csv -> form/simple without
  explode, multi -> form with explode, ssv -> spaceDelimited, pipes ->
  pipeDelimited, tsv -> ``tabDelimited``, which is not an OAS 3 style); on
  path and header arrays ssv/tsv/pipes keep the simple style with their own
  delimiter (``Parameter.delimiter``: ``/ssv/1%202``, header ``1|2``); for
  ``formData`` arrays the same goes into the form body's ``encoding`` map;
* ``securityDefinitions`` -> security schemes (``basic`` -> ``http``/``basic``;
  oauth2 ``flow`` -> OAS 3 ``flows``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from scopegate.openapi.build import BuildContext, RawOperation, assemble
from scopegate.openapi.errors import RefError
from scopegate.openapi.fields import text
from scopegate.openapi.model import (
    FORM_URLENCODED,
    JSON_MEDIA,
    MULTIPART_FORM,
    MediaType,
    OmittedInput,
    Operation,
    OperationInfo,
    Parameter,
    ParamLocation,
    RequestBody,
    Response,
    SecurityScheme,
    Server,
)

PARAM_SCHEMA_KEYS = (  # the JSON Schema fields a Swagger 2.0 parameter carries itself
    "type",
    "format",
    "items",
    "enum",
    "default",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "pattern",
    "minItems",
    "maxItems",
    "uniqueItems",
    "multipleOf",
    "x-nullable",
)
_COLLECTION_STYLE: dict[str, tuple[str, bool]] = {
    "csv": ("form", False),
    "ssv": ("spaceDelimited", False),
    "pipes": ("pipeDelimited", False),
    "tsv": ("tabDelimited", False),
    "multi": ("form", True),
}
_OAUTH_FLOWS = {
    "implicit": "implicit",
    "password": "password",
    "application": "clientCredentials",
    "accessCode": "authorizationCode",
}


def servers(root: Mapping[str, Any]) -> tuple[Server, ...]:
    host = root.get("host") if isinstance(root.get("host"), str) else ""
    base = root.get("basePath") if isinstance(root.get("basePath"), str) else ""
    base = "/" + base.strip("/") if base and base.strip("/") else ""
    if not host:
        return (Server(url=base or "/"),)
    schemes = [s for s in root.get("schemes") or [] if s in ("http", "https", "ws", "wss")] or ["https"]
    return tuple(Server(url=f"{scheme}://{host}{base}") for scheme in schemes)


def security_schemes(raw: Any) -> dict[str, SecurityScheme]:
    out: dict[str, SecurityScheme] = {}
    if not isinstance(raw, Mapping):
        return out
    for key, s in raw.items():
        if not isinstance(s, Mapping):
            continue
        stype = s.get("type")
        desc = text(s.get("description"))
        if stype == "basic":
            out[str(key)] = SecurityScheme(key=str(key), type="http", scheme="basic", description=desc)
        elif stype == "apiKey":
            loc = s.get("in")
            out[str(key)] = SecurityScheme(
                key=str(key),
                type="apiKey",
                name=s.get("name") if isinstance(s.get("name"), str) else None,
                location=loc if loc in ("query", "header") else None,
                description=desc,
            )
        elif stype == "oauth2":
            flow = _OAUTH_FLOWS.get(str(s.get("flow")), "authorizationCode")
            body: dict[str, Any] = {"scopes": dict(s.get("scopes") or {})}
            for field in ("authorizationUrl", "tokenUrl"):
                if isinstance(s.get(field), str):
                    body[field] = s[field]
            out[str(key)] = SecurityScheme(key=str(key), type="oauth2", flows={flow: body}, description=desc)
    return out


def _param_schema(p: Mapping[str, Any]) -> dict[str, Any]:
    schema: dict[str, Any] = {k: p[k] for k in PARAM_SCHEMA_KEYS if k in p}
    items = schema.get("items")
    if isinstance(items, Mapping):
        schema["items"] = _param_schema(items)
    return schema


_PATH_HEADER_DELIMITERS = {"ssv": " ", "tsv": "\t", "pipes": "|"}


def _style(location: str, p: Mapping[str, Any]) -> tuple[str | None, bool | None, str | None]:
    """(style, explode, delimiter) of a parameter; delimited path/header arrays keep the simple style."""
    if p.get("type") != "array":
        return None, None, None
    fmt = str(p.get("collectionFormat", "csv"))
    style, explode = _COLLECTION_STYLE.get(fmt, ("form", False))
    if location in ("path", "header"):
        if fmt == "csv":
            return "simple", explode, None
        if fmt in _PATH_HEADER_DELIMITERS:
            return "simple", False, _PATH_HEADER_DELIMITERS[fmt]
    return style, explode, None


def _media_types(op: Mapping[str, Any], root: Mapping[str, Any], key: str) -> list[str]:
    value = op.get(key) if key in op else root.get(key)
    return [str(v) for v in value] if isinstance(value, list) and value else []


_LOCATIONS = frozenset({"path", "query", "header", "body", "formData"})


def build_operation(ctx: BuildContext, info: OperationInfo, raw: RawOperation) -> Operation:
    item, idoc, op, odoc = raw.item, raw.item_doc, raw.op, raw.op_doc
    root = ctx.root
    merged: dict[tuple[str, str], tuple[Mapping[str, Any], str]] = {}
    lists = ((item.get("parameters"), idoc, "path item"), (op.get("parameters"), odoc, "operation"))
    for raw_list, ldoc, level in lists:
        for p, pdoc in ctx.parameter_objects(raw_list, ldoc, level):
            if isinstance(p.get("in"), str):
                merged[(p["in"], p["name"])] = (p, pdoc)

    params: list[Parameter] = []
    body_param: tuple[Mapping[str, Any], str] | None = None
    form: list[tuple[Mapping[str, Any], str]] = []
    for (location, name), (p, pdoc) in merged.items():
        required = location == "path" or p.get("required") is True
        if location not in _LOCATIONS:
            ctx.omitted.append(
                OmittedInput("parameter", name, "unsupported_parameter", required, f"location {location!r}")
            )
        elif location == "body":
            body_param = (p, pdoc)
        elif location == "formData":
            form.append((p, pdoc))
        else:
            loc = cast(ParamLocation, location)
            style, explode, delimiter = _style(location, p)
            try:
                schema = ctx.schema(_param_schema(p), pdoc)
            except RefError as exc:
                ctx.omit(loc, name, exc, required=required)
                continue
            params.append(
                Parameter(
                    name=name,
                    location=loc,
                    required=required,
                    schema=schema,
                    description=text(p.get("description")),
                    style=style,
                    explode=explode,
                    allow_reserved=False,
                    allow_empty_value=p.get("allowEmptyValue") is True,
                    delimiter=delimiter,
                )
            )

    consumes = _media_types(op, root, "consumes")
    body: RequestBody | None = None
    if body_param is not None:
        p, pdoc = body_param
        required = p.get("required") is True
        try:
            schema = ctx.schema(p.get("schema", {}), pdoc)
        except RefError as exc:
            ctx.omit("body", "body", exc, required=required)
        else:
            types = [t for t in consumes if t not in (FORM_URLENCODED, MULTIPART_FORM)] or [JSON_MEDIA]
            body = RequestBody(
                required=required,
                content=tuple(MediaType(t, schema) for t in types),
                description=text(p.get("description")),
            )
    elif form:
        body = _form_body(ctx, form, consumes)

    responses = _responses(ctx, op, odoc) if ctx.with_responses else ()
    return assemble(
        ctx,
        info,
        op,
        texts=(text(op.get("summary")), text(op.get("description"))),
        parameters=params,
        request_body=body,
        responses=responses,
        servers=ctx.servers,
    )


def _form_body(ctx: BuildContext, form: list[tuple[Mapping[str, Any], str]], consumes: list[str]) -> RequestBody:
    props: dict[str, Any] = {}
    required: list[str] = []
    encoding: dict[str, dict[str, Any]] = {}
    has_file = False
    for p, pdoc in form:
        name = p["name"]
        try:
            schema = ctx.schema(_param_schema(p), pdoc)
        except RefError as exc:
            ctx.omit("body_property", name, exc, required=p.get("required") is True)
            continue
        if p.get("type") == "file":
            has_file = True
        desc = text(p.get("description"))
        if desc:
            schema = {**schema, "description": desc}
        props[name] = schema
        if p.get("required") is True:
            required.append(name)
        if p.get("type") == "array":
            style, explode = _COLLECTION_STYLE.get(str(p.get("collectionFormat", "csv")), ("form", False))
            encoding[name] = {"style": style, "explode": explode}
    obj: dict[str, Any] = {"type": "object", "properties": props}
    if required:
        obj["required"] = required
    if has_file:
        types = [MULTIPART_FORM]
    else:
        types = [t for t in consumes if t in (FORM_URLENCODED, MULTIPART_FORM)] or [FORM_URLENCODED]
    return RequestBody(required=bool(required), content=tuple(MediaType(t, obj, encoding) for t in types))


def _responses(ctx: BuildContext, op: Mapping[str, Any], doc: str) -> tuple[Response, ...]:
    produces = _media_types(op, ctx.root, "produces") or [JSON_MEDIA]
    responses: list[Response] = []
    raw_responses = op.get("responses")
    if not isinstance(raw_responses, Mapping):
        return ()
    for status, entry in raw_responses.items():
        if isinstance(status, str) and status.startswith("x-"):
            continue
        resp, rdoc = ctx.deref(entry, doc)
        if not isinstance(resp, Mapping):
            continue
        content: tuple[MediaType, ...] = ()
        if "schema" in resp:
            rschema = ctx.schema(resp["schema"], rdoc)
            content = tuple(MediaType(t, rschema) for t in produces)
        responses.append(Response(status=str(status), description=text(resp.get("description")), content=content))
    return tuple(responses)
