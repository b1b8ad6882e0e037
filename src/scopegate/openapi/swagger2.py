"""Swagger 2.0 -> the OpenAPI 3 shaped model.

* ``schemes`` x ``host`` + ``basePath`` -> servers (``https`` when no scheme);
* ``in: body`` -> a request body for every ``consumes`` media type;
* ``in: formData`` -> an object schema under the form media types in
  ``consumes`` (``multipart/form-data`` when a ``type: file`` parameter exists,
  else ``application/x-www-form-urlencoded`` by default);
* ``collectionFormat`` -> ``style``/``explode`` (csv -> form/simple without
  explode, multi -> form with explode, ssv -> spaceDelimited, pipes ->
  pipeDelimited, tsv -> ``tabDelimited``, which is not an OAS 3 style);
* ``securityDefinitions`` -> security schemes (``basic`` -> ``http``/``basic``;
  oauth2 ``flow`` -> OAS 3 ``flows``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

from scopegate.openapi.fields import security_requirements, text
from scopegate.openapi.model import (
    FORM_URLENCODED,
    JSON_MEDIA,
    MULTIPART_FORM,
    MediaType,
    Operation,
    OperationInfo,
    Parameter,
    ParamLocation,
    RequestBody,
    Response,
    SecurityScheme,
    Server,
)

if TYPE_CHECKING:
    from scopegate.openapi.loader import SpecDocument

_SCHEMA_KEYS = (
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
    schema: dict[str, Any] = {k: p[k] for k in _SCHEMA_KEYS if k in p}
    items = schema.get("items")
    if isinstance(items, Mapping):
        schema["items"] = _param_schema(items)
    return schema


def _style(location: str, p: Mapping[str, Any]) -> tuple[str | None, bool | None]:
    if p.get("type") != "array":
        return None, None
    fmt = str(p.get("collectionFormat", "csv"))
    style, explode = _COLLECTION_STYLE.get(fmt, ("form", False))
    if location in ("path", "header") and fmt == "csv":
        style = "simple"
    return style, explode


def _media_types(op: Mapping[str, Any], root: Mapping[str, Any], key: str) -> list[str]:
    value = op.get(key) if key in op else root.get(key)
    return [str(v) for v in value] if isinstance(value, list) and value else []


def build_operation(doc: SpecDocument, info: OperationInfo) -> Operation:
    root = doc.root
    item, idoc = doc.resolver.deref(root["paths"][info.path])
    op = item[info.method.lower()]
    where = info.label
    merged: dict[tuple[str, str], tuple[Mapping[str, Any], str]] = {}
    for raw_list in (item.get("parameters"), op.get("parameters")):
        if not isinstance(raw_list, list):
            continue
        for entry in raw_list:
            p, pdoc = doc.resolver.deref(entry, idoc)
            if isinstance(p, Mapping) and isinstance(p.get("name"), str) and isinstance(p.get("in"), str):
                merged[(p["in"], p["name"])] = (p, pdoc)

    params: list[Parameter] = []
    body_param: tuple[Mapping[str, Any], str] | None = None
    form: list[tuple[Mapping[str, Any], str]] = []
    for (location, _), (p, pdoc) in merged.items():
        if location == "body":
            body_param = (p, pdoc)
        elif location == "formData":
            form.append((p, pdoc))
        elif location in ("path", "query", "header"):
            loc = cast(ParamLocation, location)
            style, explode = _style(location, p)
            schema = doc.schema(_param_schema(p), pdoc, where)
            params.append(
                Parameter(
                    name=p["name"],
                    location=loc,
                    required=True if loc == "path" else p.get("required") is True,
                    schema=schema,
                    description=text(p.get("description")),
                    style=style,
                    explode=explode,
                    allow_reserved=False,
                )
            )

    consumes = _media_types(op, root, "consumes")
    body: RequestBody | None = None
    if body_param is not None:
        p, pdoc = body_param
        schema = doc.schema(p.get("schema", {}), pdoc, where)
        types = [t for t in consumes if t not in (FORM_URLENCODED, MULTIPART_FORM)] or [JSON_MEDIA]
        body = RequestBody(
            required=p.get("required") is True,
            content=tuple(MediaType(t, schema) for t in types),
            description=text(p.get("description")),
        )
    elif form:
        props: dict[str, Any] = {}
        required: list[str] = []
        has_file = False
        for p, pdoc in form:
            schema = doc.schema(_param_schema(p), pdoc, where)
            if p.get("type") == "file":
                has_file = True
            desc = text(p.get("description"))
            if desc:
                schema = {**schema, "description": desc}
            props[p["name"]] = schema
            if p.get("required") is True:
                required.append(p["name"])
        obj: dict[str, Any] = {"type": "object", "properties": props}
        if required:
            obj["required"] = required
        if has_file:
            types = [MULTIPART_FORM]
        else:
            types = [t for t in consumes if t in (FORM_URLENCODED, MULTIPART_FORM)] or [FORM_URLENCODED]
        body = RequestBody(required=bool(required), content=tuple(MediaType(t, obj) for t in types))

    produces = _media_types(op, root, "produces") or [JSON_MEDIA]
    responses: list[Response] = []
    raw_responses = op.get("responses")
    if isinstance(raw_responses, Mapping):
        for status, entry in raw_responses.items():
            if isinstance(status, str) and status.startswith("x-"):
                continue
            resp, rdoc = doc.resolver.deref(entry, idoc)
            if not isinstance(resp, Mapping):
                continue
            content: tuple[MediaType, ...] = ()
            if "schema" in resp:
                rschema = doc.schema(resp["schema"], rdoc, where)
                content = tuple(MediaType(t, rschema) for t in produces)
            responses.append(Response(status=str(status), description=text(resp.get("description")), content=content))

    security = security_requirements(op["security"]) if "security" in op else doc.security
    return Operation(
        operation_id=info.operation_id,
        method=info.method,
        path=info.path,
        summary=text(op.get("summary")),
        description=text(op.get("description")),
        tags=info.tags,
        parameters=tuple(params),
        request_body=body,
        responses=tuple(responses),
        security=security,
        servers=doc.servers,
        deprecated=info.deprecated,
    )
