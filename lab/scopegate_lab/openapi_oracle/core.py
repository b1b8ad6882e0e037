"""The first oracle: openapi-core (pinned in the dev dependencies) validating an arrived request.

openapi-core deserialises parameters by style and bodies by media type and
validates them, and the security requirements, against the original spec.
``unsupported_constructs`` names what it cannot judge (read from its source,
0.23.1): Swagger 2.0; deepObject other than one level of scalars; the
space/tab delimited styles (it splits the decoded value on a literal
``%20``); form bodies whose properties use ``encoding`` styles on nested
values or object properties without an ``encoding`` (it applies ``form``
where OpenAPI 3.1.2 says ``application/json``); and values containing
their style's delimiter (it decodes before splitting). For those the
independent oracle decides alone.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from jsonschema_path import SchemaPath
from openapi_core import Config, OpenAPI
from openapi_core.datatypes import RequestParameters
from openapi_core.exceptions import OpenAPIError
from werkzeug.datastructures import Headers, ImmutableMultiDict

from scopegate_lab.openapi_oracle.catchall import ArrivedRequest
from scopegate_lab.openapi_oracle.rawspec import RawSpec

_KNOWN_FORMATS = frozenset(
    {"date", "date-time", "email", "uuid", "ipv4", "ipv6", "uri", "hostname", "byte", "binary", "password"}
    | {"int32", "int64", "float", "double", "time", "regex", "uri-reference", "json-pointer", "idn-email"}
)


def _formats(node: Any, out: set[str]) -> set[str]:
    if isinstance(node, dict):
        fmt = node.get("format")
        if isinstance(fmt, str):
            out.add(fmt)
        for v in node.values():
            _formats(v, out)
    elif isinstance(node, list):
        for v in node:
            _formats(v, out)
    return out


def _config(data: Any) -> Config:
    """Unknown formats (``iso-country-code``) are annotations, as JSON Schema says, not errors."""
    custom = {f: (lambda _v: True) for f in _formats(data, set()) - _KNOWN_FORMATS}
    # the shared specs are real: not all are strictly valid documents, so the spec itself is not validated
    return Config(
        spec_validator_cls=None,  # type: ignore[arg-type]
        extra_format_validators=custom,
        extra_format_unmarshallers={f: (lambda v: v) for f in custom},
    )


class _Request:
    def __init__(self, host_url: str, arrived: ArrivedRequest) -> None:
        self.host_url = host_url
        # As a server framework hands it over: percent-decoded, except an encoded "/" stays inside its segment.
        # (and an encoded "." stays encoded: it is a value, not a dot segment).
        keep = arrived.path.replace("%2F", "%252F").replace("%2f", "%252F").replace("%2E", "%252E")
        self.path = unquote(keep)
        self.method = arrived.method.lower()
        cookies: list[tuple[str, str]] = []
        for header in (v for k, v in arrived.headers if k.lower() == "cookie"):
            for part in header.split(";"):
                name, _, value = part.strip().partition("=")
                if name:
                    cookies.append((name, value))
        self.parameters = RequestParameters(
            query=ImmutableMultiDict(parse_qsl(arrived.query, keep_blank_values=True)),
            header=Headers(list(arrived.headers)),
            cookie=ImmutableMultiDict(cookies),
        )
        self.body = arrived.body or None
        self.content_type = (arrived.header("content-type") or "").lower()


class CoreValidator:
    """openapi-core over one spec file (or in-memory document)."""

    def __init__(self, source: Path | dict[str, Any]) -> None:
        self.raw = RawSpec(source)
        if isinstance(source, Path):
            # Parsed here: openapi-core reads every file as YAML, which refuses JSON's surrogate escapes (Twilio).
            data = self.raw.schema_file(source)
            spec = SchemaPath.from_dict(
                data,
                base_uri=source.resolve().as_uri(),
                handlers={"file": lambda uri: self.raw.schema_file(Path(unquote(urlsplit(uri).path)))},
            )
            self.api = OpenAPI(spec, config=_config(data))
        else:
            self.api = OpenAPI.from_dict(source, config=_config(source))

    def validate(self, server_url: str, fallback_origin: str, arrived: ArrivedRequest) -> list[str]:
        parts = urlsplit(server_url)
        host_url = f"{parts.scheme}://{parts.netloc}" if parts.scheme else fallback_origin
        # validate (not unmarshal): openapi-core 0.23.1's unmarshalling step fails on some valid bodies
        # (OpenAI createCompletion) after validation has passed.
        try:
            self.api.validate_request(_Request(host_url, arrived))
        except OpenAPIError as exc:
            errors: list[BaseException] = [exc]
        else:
            return []
        problems: list[str] = []
        for error in errors:
            details: list[str] = []
            node: BaseException | None = error
            while node is not None:
                for e in getattr(node, "schema_errors", ()) or ():
                    where = "/".join(str(p) for p in getattr(e, "absolute_path", ()))
                    details.append(f"{where}: {getattr(e, 'message', e)}"[:200])
                node = node.__cause__
            text = f"{type(error).__name__}: {str(error)[:160]}"
            cause = error.__cause__
            if cause is not None and not details:
                text += f" [{type(cause).__name__}: {str(cause)[:200]}]"
            problems.append(text + (f" ({'; '.join(details[:3])})" if details else ""))
        return problems

    def limits(self, method: str, template: str, arrived: ArrivedRequest, problems: list[str]) -> str | None:
        """Which construct of this request openapi-core 0.23.1 cannot judge (see the module docstring), if any.

        Only a construct its error is about counts (the parameter it names, or the body).
        """
        said = " ".join(problems)
        if "is valid under each of" in said:
            return "a oneOf several branches accept (scopegate reads an undiscriminated oneOf as anyOf)"
        raw = self.raw
        security = raw.deref(raw.root.child("paths").child(template)).child(method.lower()).get("security")
        if "Security" in said and isinstance(security, list):
            keys = [json.dumps(r, sort_keys=True) for r in security]
            if len(set(keys)) < len(keys):
                return "duplicated security requirements (openapi-core keeps only some of the alternatives)"
        item = raw.deref(raw.root.child("paths").child(template))
        op = raw.deref(item.child(method.lower()))
        params = []
        for owner in (item, op):
            entries = owner.get("parameters") or []
            params += [raw.deref(owner.child("parameters").child(i)) for i in range(len(entries))]
        query = parse_qsl(arrived.query, keep_blank_values=True)
        for p in params:
            style, name = p.get("style"), str(p.get("name"))
            if name not in said:
                continue
            if p.get("in") == "header" and name.lower() in ("accept", "content-type", "authorization"):
                return f"header parameter {name!r} (OpenAPI: SHALL be ignored; openapi-core validates it)"
            present = any(k == name for k, _ in query) or arrived.header(name) is not None
            if not present and "schema" in p and "default" in raw.deref(p.child("schema")):
                return f"absent parameter {name!r} with a default (openapi-core validates the spec's default itself)"
            if "schema" in p and _mixes_numbers_and_strings(raw, raw.deref(p.child("schema"))):
                return f"parameter {name!r} is a number-or-string union (openapi-core casts to the number first)"
            if "schema" in p and _read_only(raw, raw.deref(p.child("schema")), unions=True):
                return f"readOnly parameter schema {name!r} (openapi-core applies readOnly outside properties)"
            if style in ("spaceDelimited", "tabDelimited"):
                return f"{style} parameter {name!r} (openapi-core splits the decoded value on a literal %20)"
            if style == "deepObject":
                if _is_array(raw, p):
                    return f"deepObject array {name!r} (openapi-core supports deepObject objects only)"
                keys = [k for k, _ in query if k.startswith(name + "[")]
                if any(not re.fullmatch(re.escape(name) + r"\[\w+\]", k) for k in keys):
                    return f"nested deepObject {name!r} (openapi-core reads one level of name[word] keys)"
            values = [v for k, v in query if k == name] + [v for k, v in arrived.headers if k.lower() == name.lower()]
            delimited = p.get("explode") is False or style in ("pipeDelimited", "simple") or p.get("in") == "header"
            if delimited and any("," in v or "|" in v for v in values) and _is_array(raw, p):
                return f"a value of {name!r} contains its delimiter (openapi-core decodes before splitting)"
        ctype = (arrived.header("content-type") or "").split(";")[0].strip().lower()
        if arrived.body and "requestBody" in op and "body" in said.lower():
            content = raw.deref(op.child("requestBody")).get("content") or {}
            if ctype not in content and any("*" in m for m in content):
                return "a wildcard request media type (openapi-core deserialises it as bytes)"
            if ctype.endswith("+json"):
                return f"a {ctype} body (openapi-core deserialises +json types other than application/json as bytes)"
            if ctype != "text/plain" and "json" not in ctype and ctype != "application/x-www-form-urlencoded":
                return f"a {ctype} body (openapi-core deserialises it as bytes, then checks a string schema)"
            body_schema = raw.deref(raw.deref(op.child("requestBody")).child("content").child(ctype).child("schema"))
            read_only = _read_only_names(raw, body_schema)
            for name in body_schema.get("required") or []:
                if name in read_only and f"'{name}'" in said:
                    return f"required readOnly property {name!r} (OpenAPI: required only in responses; openapi-core)"
            if ctype == "application/x-www-form-urlencoded":
                media = content.get(ctype) or {}
                encoding = media.get("encoding") or {}
                body_keys = [k for k, _ in parse_qsl(arrived.body.decode("ascii"), keep_blank_values=True)]
                if any("[" in k and not re.fullmatch(r"\w+\[\w+\]", k) for k in body_keys):
                    return "nested deepObject form keys (openapi-core reads one level of name[word] keys)"
                schema = raw.deref(raw.deref(op.child("requestBody")).child("content").child(ctype).child("schema"))
                for name in schema.get("properties") or {}:
                    enc = encoding.get(name) or {}
                    sub = raw.deref(schema.child("properties").child(name))
                    if enc.get("style") == "deepObject" and sub.get("type") != "object" and name in said:
                        return f"deepObject form property {name!r} without type: object (openapi-core needs it)"
                    styled = any(k in enc for k in ("style", "explode", "allowReserved"))
                    kind = raw.deref(schema.child("properties").child(name)).get("type")
                    if name in body_keys and not styled and kind in ("object", "array"):
                        return f"form property {name!r} without an encoding (openapi-core: form style; OAS 3.1.2: JSON)"
        return None


def _read_only(raw: RawSpec, schema: Any, *, unions: bool = False) -> bool:
    """readOnly on ``schema`` or its allOf parts (with ``unions``, also on a oneOf/anyOf variant)."""
    keys = ("allOf", "oneOf", "anyOf") if unions else ("allOf",)
    parts = [raw.deref(schema.child(k).child(i)) for k in keys for i in range(len(schema.get(k) or []))]
    return schema.get("readOnly") is True or any(_read_only(raw, p, unions=unions) for p in parts)


def _read_only_names(raw: RawSpec, schema: Any, depth: int = 0) -> set[str]:
    """Properties marked readOnly by ``schema`` or its allOf/oneOf/anyOf parts."""
    if depth > 32:
        return set()
    props = schema.get("properties") or {}
    names = {n for n in props if _read_only(raw, raw.deref(schema.child("properties").child(n)))}
    for key in ("allOf", "oneOf", "anyOf"):
        for i in range(len(schema.get(key) or [])):
            names |= _read_only_names(raw, raw.deref(schema.child(key).child(i)), depth + 1)
    return names


def _mixes_numbers_and_strings(raw: RawSpec, schema: Any) -> bool:
    kinds: set[str] = set()
    for key in ("anyOf", "oneOf"):
        for i in range(len(schema.get(key) or [])):
            t = raw.deref(schema.child(key).child(i)).get("type")
            kinds.update(t if isinstance(t, list) else [t])
    return "string" in kinds and bool(kinds & {"integer", "number"})


def _is_array(raw: RawSpec, p: Any) -> bool:
    schema = raw.deref(p.child("schema")) if "schema" in p else None
    return bool(schema is not None and (schema.get("type") == "array" or p.get("type") == "array")) or (
        p.get("type") == "array"
    )
