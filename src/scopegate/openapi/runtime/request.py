"""Build a safe HTTP request from a tool's arguments. Pure: no I/O.

Given the translation's :class:`~scopegate.openapi.model.ToolBinding` (which
argument goes where) and a pinned base URL, :class:`RequestBuilder` turns the
model's arguments into a :class:`BuiltRequest`, or raises
:class:`ArgumentsInvalid` listing every field at fault.

Safety rules:

* The base URL is fixed at construction; arguments only ever fill the path
  template, the query, declared headers/cookies and the body. A value is
  never used as a URL, so an absolute URL in an argument is just a string.
* Path values are percent-encoded with nothing left safe: ``/``, ``?``, ``#``,
  ``%`` (so ``%2F`` arrives as ``%252F``) and dot-only values (``..`` becomes
  ``%2E%2E``) cannot change the path. Empty path values are refused.
* Header values must be printable ASCII (no CR/LF injection); headers that
  carry authority or routing (``Authorization``, ``Host``, ``Cookie``,
  ``X-Forwarded-*``...) can never be set by an argument.
* Falsy values (``0``, ``false``, ``""``) are sent; only ``None`` means
  "not given".
* Every value is validated against the *original* schema of its parameter,
  and the rebuilt body against the original body schema.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import quote, urlsplit

from jsonschema import Draft202012Validator

from scopegate.errors import (
    ArgumentsInvalid,
    ConfigError,
)
from scopegate.errors import (
    UnsupportedOperation as UnsupportedOperation,
)
from scopegate.openapi.headers import FORBIDDEN_HEADERS
from scopegate.openapi.model import FORM_URLENCODED, JSON_MEDIA, ArgumentMap, Parameter, ToolBinding
from scopegate.openapi.runtime.schema import compile_validator, problems
from scopegate.openapi.runtime.uploads import PendingUpload, UploadLimits, UploadPlan
from scopegate.openapi.serialize import (
    FormEncoder,
    ParamEncoder,
    WireNames,
    _ValueProblem,
    body_kind,
    pct,
    pct_name,
    scalar_text,
    split_path_template,
)
from scopegate.openapi.simplify import deref

__all__ = [
    "ArgumentsInvalid",
    "BuiltRequest",
    "RequestBuilder",
    "RequestLimits",
    "UnsupportedOperation",
    "encode_query",
    "origin",
    "pin_base_url",
    "scalar_text",
]

# Headers an argument may never set, whatever the spec says.
RESERVED_HEADERS = FORBIDDEN_HEADERS
# OpenAPI: header parameters with these names "SHALL be ignored".
IGNORED_HEADER_PARAMS = frozenset({"accept", "content-type", "authorization"})
IDEMPOTENCY_HEADER = "idempotency-key"
TEXT_MEDIA = "text/plain"
_TEMPLATE = re.compile(r"\{([^{}]+)\}")
_HEADER_VALUE_OK = re.compile(r"^[\x20-\x7e]*$")


def _base_media(media_type: str) -> str:
    return media_type.split(";")[0].strip().lower()


@dataclass(frozen=True)
class RequestLimits:
    max_arguments_chars: int = 20_000
    max_path_value_chars: int = 512
    max_header_value_chars: int = 1024


@dataclass(frozen=True)
class BuiltRequest:
    """A request ready to send. ``path`` and the ``query`` pairs are already percent-encoded."""

    method: str
    base_url: str
    path: str
    query: tuple[tuple[str, str], ...] = ()
    headers: tuple[tuple[str, str], ...] = ()
    cookies: tuple[tuple[str, str], ...] = ()
    body: bytes | None = None
    content_type: str | None = None
    # Names of headers/query keys holding credentials: never shown by describe().
    secret_headers: frozenset[str] = field(default_factory=frozenset)
    secret_query: frozenset[str] = field(default_factory=frozenset)
    # Files the model named, still to be read from the session and encoded (see .uploads).
    upload: PendingUpload | None = None

    @property
    def url(self) -> str:
        qs = encode_query(self.query)
        return self.base_url + self.path + ("?" + qs if qs else "")

    def header_list(self) -> list[tuple[str, str]]:
        """Every header to send, including Cookie and Content-Type."""
        out = list(self.headers)
        if self.cookies:
            out.append(("Cookie", "; ".join(f"{k}={v}" for k, v in self.cookies)))
        if self.content_type:
            out.append(("Content-Type", self.content_type))
        return out

    def with_parts(
        self,
        *,
        headers: tuple[tuple[str, str], ...] = (),
        query: tuple[tuple[str, str], ...] = (),
        cookies: tuple[tuple[str, str], ...] = (),
        secret: bool = False,
    ) -> BuiltRequest:
        """A copy with extra headers/query/cookies (credentials are added this way, ``secret=True``).

        ``query`` and ``cookies`` are given as plain text and percent-encoded here.
        """
        q = tuple((pct_name(k), pct(v)) for k, v in query)
        return replace(
            self,
            headers=self.headers + headers,
            query=self.query + q,
            cookies=self.cookies + tuple((k, quote(v, safe="")) for k, v in cookies),
            secret_headers=self.secret_headers
            | ({h.lower() for h, _ in headers} if secret else set())
            | ({"cookie"} if secret and cookies else set()),
            secret_query=self.secret_query | ({k for k, _ in q} if secret else set()),
        )

    def describe(self) -> dict[str, Any]:
        """A JSON-able view for snapshots and debugging, with credential values masked."""
        query = [(k, "***" if k in self.secret_query else v) for k, v in self.query]
        headers = [(k, "***" if k.lower() in self.secret_headers else v) for k, v in self.header_list()]
        body: Any = None
        if self.body is not None:
            text = self.body.decode("utf-8", errors="replace")
            body = json.loads(text) if self.content_type and "json" in self.content_type else text
        return {
            "method": self.method,
            "url": self.base_url + self.path + ("?" + encode_query(tuple(query)) if query else ""),
            "headers": [list(h) for h in headers],
            "body": body,
        }


def encode_query(pairs: tuple[tuple[str, str], ...] | list[tuple[str, str]]) -> str:
    """Join already-encoded ``(name, value)`` pairs."""
    return "&".join(f"{k}={v}" for k, v in pairs)


def pin_base_url(url: str) -> str:
    """Check and normalise a base URL: absolute http(s), no credentials, query or fragment."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError("base URL must be an absolute http(s) URL")
    if parts.username or parts.password or parts.query or parts.fragment or "{" in url:
        raise ConfigError("base URL must not carry credentials, a query, a fragment or template variables")
    return f"{parts.scheme}://{parts.netloc.lower()}{parts.path.rstrip('/')}"


def origin(url: str) -> tuple[str, str, int]:
    """(scheme, host, port) of an absolute URL; the unit of the same-origin rule."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    port = parts.port or (443 if scheme == "https" else 80)
    return (scheme, (parts.hostname or "").lower(), port)


def _is_nullable(schema: Mapping[str, Any]) -> bool:
    typ = schema.get("type")
    return schema.get("nullable") is True or typ == "null" or (isinstance(typ, list) and "null" in typ)


def _coerce(value: Any, schema: Any, defs: Mapping[str, Any] | None) -> Any:
    """Models often send 3.0 for an integer: turn integral floats into ints where the schema wants them."""
    schema = deref(schema, defs)
    if not isinstance(schema, Mapping):
        return value
    typ = schema.get("type")
    types = set(typ) if isinstance(typ, list) else {typ}
    if "integer" in types and isinstance(value, float) and value.is_integer():
        return int(value)
    items = schema.get("items")
    if "array" in types and isinstance(value, list) and isinstance(items, Mapping):
        return [_coerce(v, items, defs) for v in value]
    return value


def _defs(schema: Any) -> Mapping[str, Any] | None:
    found = schema.get("$defs") if isinstance(schema, Mapping) else None
    return found if isinstance(found, Mapping) else None


class RequestBuilder:
    """Builds requests for one operation. Validators and encoders are compiled once, here."""

    def __init__(
        self,
        binding: ToolBinding,
        base_url: str,
        *,
        hidden: Collection[str] = (),
        limits: RequestLimits | None = None,
        uploads: UploadLimits | None = None,
    ) -> None:
        self.binding = binding
        self.operation = binding.operation
        self.base_url = pin_base_url(base_url)
        self.limits = limits or RequestLimits()
        self._params: dict[tuple[str, str], Parameter] = {(p.location, p.name): p for p in self.operation.parameters}
        self._path_template, self._fixed_query = split_path_template(self.operation.path)
        self.idempotency_header: str | None = None
        hidden_args = set(hidden)
        for am in binding.arguments:
            if am.location == "header" and am.original_name:
                low = am.original_name.lower()
                if low == IDEMPOTENCY_HEADER:
                    self.idempotency_header = am.original_name
                    hidden_args.add(am.argument)
                elif low in IGNORED_HEADER_PARAMS:
                    hidden_args.add(am.argument)
                elif low in RESERVED_HEADERS:
                    raise UnsupportedOperation(
                        f"{self.operation.label}: header parameter {am.original_name!r} may not come from a model"
                    )
        for p in self.operation.params_in("header"):
            if p.name.lower() == IDEMPOTENCY_HEADER:
                self.idempotency_header = p.name
        self.hidden = frozenset(hidden_args)
        self.model_arguments = frozenset(a.argument for a in binding.arguments) - self.hidden
        self.sensitive = frozenset(a.argument for a in binding.arguments if a.sensitive)
        media = binding.body_media_type
        self._body_kind = body_kind(media, binding.body_schema) if media is not None else None
        self.upload: UploadPlan | None = None
        entry = self.operation.request_body.media(media) if self.operation.request_body and media else None
        if entry is not None and self._body_kind is None and binding.file_inputs and uploads is not None:
            self.upload = UploadPlan(binding, entry, uploads)
        elif media is not None and self._body_kind is None:
            raise UnsupportedOperation(f"{self.operation.label}: request body media type {media!r} is not supported")
        self._validators: dict[str, Draft202012Validator] = {}
        self._encoders: dict[str, ParamEncoder] = {}
        for am in binding.arguments:
            if am.location in ("path", "query", "header", "cookie"):
                param = self._params.get((am.location, am.original_name or ""))
                if param is None:
                    raise UnsupportedOperation(f"{self.operation.label}: argument {am.argument!r} has no parameter")
                self._validators[am.argument] = compile_validator(param.schema)
                self._encoders[am.argument] = ParamEncoder(param)
        body_schema = binding.body_schema or {}
        self._body_validator = compile_validator(body_schema) if media is not None else None
        self._body_defs = _defs(body_schema)
        root = deref(body_schema, self._body_defs)
        props = root.get("properties") if isinstance(root, Mapping) else None
        self._body_props: Mapping[str, Any] = props if isinstance(props, Mapping) else {}
        self._arg_for_property = {a.original_name: a.argument for a in binding.by_location("body_property")}
        self._form: FormEncoder | None = None
        if self._body_kind == "form":
            self._form = FormEncoder(body_schema, self._encoding())

    def wire_names(self) -> dict[str, WireNames]:
        """Argument -> every query key (or form-body key, cookie name) it can produce. Known at build time."""
        out: dict[str, WireNames] = {}
        for am in self.binding.arguments:
            if am.argument in self._encoders:
                out[am.argument] = self._encoders[am.argument].wire_names()
            elif am.location == "body_property" and self._form is not None:
                out[am.argument] = self._form.wire_names(am.original_name or am.argument)
            else:
                out[am.argument] = WireNames()
        return out

    # ------------------------------------------------------------------ build
    def build(
        self,
        args: Mapping[str, Any],
        *,
        bound: Mapping[str, Any] | None = None,
        idempotency_key: str | None = None,
    ) -> BuiltRequest:
        """The request for ``args`` (from the model) plus ``bound`` values (from the server side)."""
        errs: list[dict[str, str]] = []
        for name in sorted(set(args) - self.model_arguments)[:10]:
            errs.append({"field": name[:64], "problem": "is not an argument of this operation"})
        try:
            size = len(json.dumps(args, default=str, ensure_ascii=False))
        except (TypeError, ValueError):
            size = self.limits.max_arguments_chars + 1
        if size > self.limits.max_arguments_chars:
            errs.append({"field": "*", "problem": f"arguments exceed {self.limits.max_arguments_chars} characters"})
        if errs:
            raise ArgumentsInvalid(errs)
        values: dict[str, Any] = {k: v for k, v in args.items() if k in self.model_arguments}
        values.update(bound or {})

        parts = _Parts()
        body_obj: dict[str, Any] = {}
        whole_body: Any = None
        has_whole_body = False
        file_names: dict[str, tuple[str, ...]] = {}

        for am in self.binding.arguments:
            value = values.get(am.argument)
            if self.upload is not None and am.argument in self.upload.inputs:
                if value is None:
                    if am.required:
                        errs.append({"field": am.argument, "problem": "is required"})
                    continue
                try:
                    file_names[self.upload.inputs[am.argument].part] = self.upload.names(am.argument, value)
                except ArgumentsInvalid as exc:
                    errs.extend(exc.problems)
                if am.location == "body_property":  # the schema check sees a file here, not the name
                    body_obj[am.original_name or am.argument] = self.upload.placeholder(am.argument)
                continue
            if am.location == "body_property":
                prop_schema = deref(self._body_props.get(am.original_name or "", {}), self._body_defs)
                nullable = isinstance(prop_schema, Mapping) and _is_nullable(prop_schema)
                if value is None and not (am.argument in values and nullable):
                    if am.required:
                        errs.append({"field": am.argument, "problem": "is required"})
                    continue
                body_obj[am.original_name or am.argument] = _coerce(value, prop_schema, self._body_defs)
                continue
            if am.location == "body":
                if value is None:
                    if am.required:
                        errs.append({"field": am.argument, "problem": "is required"})
                    continue
                whole_body = _coerce(value, self.binding.body_schema or {}, self._body_defs)
                has_whole_body = True
                continue
            if value is None:
                if am.required:
                    errs.append({"field": am.argument, "problem": "is required"})
                continue
            param = self._params[(am.location, am.original_name or "")]
            value = _coerce(value, param.schema, _defs(param.schema))
            found = problems(self._validators[am.argument], value)
            if found:
                errs.extend(self._fields(am.argument, found))
                continue
            try:
                self._place(am, param, value, parts)
            except ArgumentsInvalid as exc:
                errs.extend(exc.problems)
            except _ValueProblem as exc:
                errs.append({"field": am.argument, "problem": str(exc)})

        body, content_type = None, None
        upload: PendingUpload | None = None
        if self.upload is not None:
            if self.upload.kind == "multipart" and self._body_validator is not None:
                for where, problem in problems(self._body_validator, body_obj):
                    errs.append({"field": self._body_field(where), "problem": problem})
            fields = tuple((k, v) for k, v in body_obj.items() if k not in file_names)
            upload = PendingUpload(fields=fields, files=tuple(file_names.items()))
        elif self._body_validator is not None and (has_whole_body or body_obj or self.binding.body_required):
            payload: Any = whole_body if has_whole_body else body_obj
            for where, problem in problems(self._body_validator, payload):
                errs.append({"field": self._body_field(where), "problem": problem})
            if not errs:
                body, content_type = self._encode_body(payload, errs)
        if errs:
            raise ArgumentsInvalid(_dedupe(errs))

        path = self._render_path(parts.path)
        if self.idempotency_header and idempotency_key:
            parts.headers.append((self.idempotency_header, idempotency_key))
        return BuiltRequest(
            method=self.operation.method,
            base_url=self.base_url,
            path=path,
            query=self._fixed_query + tuple(parts.query),
            headers=tuple(parts.headers),
            cookies=tuple(parts.cookies),
            body=body,
            content_type=content_type,
            secret_headers=frozenset(parts.secret_headers),
            secret_query=frozenset(parts.secret_query),
            upload=upload,
        )

    # ---------------------------------------------------------------- helpers
    @staticmethod
    def _fields(argument: str, found: list[tuple[tuple[str, ...], str]]) -> list[dict[str, str]]:
        return [{"field": ".".join((argument, *path)), "problem": problem} for path, problem in found]

    def _body_field(self, path: tuple[str, ...]) -> str:
        whole = self.binding.by_location("body")
        if whole:
            return ".".join((whole[0].argument, *path))
        if path and path[0] in self._arg_for_property:
            return ".".join((self._arg_for_property[path[0]], *path[1:]))
        return ".".join(("body", *path))

    def _place(self, am: ArgumentMap, param: Parameter, value: Any, parts: _Parts) -> None:
        encoder = self._encoders[am.argument]
        secret = am.argument in self.sensitive
        if am.location == "path":
            if isinstance(value, str) and len(value) > self.limits.max_path_value_chars:
                raise ArgumentsInvalid([{"field": am.argument, "problem": "must be a non-empty, short value"}])
            text = encoder.path(value)
            if not text or len(text) > self.limits.max_path_value_chars * 3:
                raise ArgumentsInvalid([{"field": am.argument, "problem": "must be a non-empty, short value"}])
            parts.path[param.name] = text
        elif am.location == "query":
            pairs = encoder.query(value)
            parts.query.extend(pairs)
            if secret:
                parts.secret_query.update(k for k, _ in pairs)
        elif am.location == "header":
            text = encoder.header(value)
            # HTAB is legal inside a field value: the delimiter of a Swagger 2.0 tsv header (items may not hold it).
            shown = text.replace("\t", " ") if encoder.delimiter == "\t" else text
            if len(text) > self.limits.max_header_value_chars or not _HEADER_VALUE_OK.match(shown):
                raise ArgumentsInvalid([{"field": am.argument, "problem": "must be short printable ASCII text"}])
            parts.headers.append((param.name, text))
            if secret:
                parts.secret_headers.add(param.name.lower())
        elif am.location == "cookie":
            parts.cookies.extend(encoder.cookie(value))
            if secret:
                parts.secret_headers.add("cookie")

    def _render_path(self, path_values: Mapping[str, str]) -> str:
        def sub(match: re.Match[str]) -> str:
            name = match.group(1)
            if name not in path_values:
                raise ArgumentsInvalid([{"field": name, "problem": "is required"}])
            return path_values[name]

        path = _TEMPLATE.sub(sub, self._path_template)
        if not path.startswith("/"):
            path = "/" + path
        segments = path.split("/")[1:]
        if any(seg in (".", "..") for seg in segments) or "?" in path or "#" in path:
            raise ArgumentsInvalid([{"field": "path", "problem": "path parameters may not form dot segments"}])
        return path

    def _encode_body(self, payload: Any, errs: list[dict[str, str]]) -> tuple[bytes | None, str | None]:
        media = self.binding.body_media_type or JSON_MEDIA
        base = _base_media(media)
        if self._form is not None:
            if not isinstance(payload, Mapping):
                errs.append({"field": "body", "problem": "a form body must be an object"})
                return None, None
            try:
                return self._form.encode(payload), FORM_URLENCODED
            except _ValueProblem as exc:
                errs.append({"field": "body", "problem": str(exc)})
                return None, None
        if self._body_kind == "text":
            if not isinstance(payload, str):
                errs.append({"field": "body", "problem": "must be text"})
                return None, None
            if base == "*/*":
                return payload.encode("utf-8"), "text/plain; charset=utf-8"
            return payload.encode("utf-8"), media if ";" in media else f"{base}; charset=utf-8"
        try:
            text = json.dumps(payload, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError):
            errs.append({"field": "body", "problem": "is not JSON"})
            return None, None
        return text.encode("utf-8"), JSON_MEDIA if base == "*/*" else media

    def _encoding(self) -> Mapping[str, Mapping[str, Any]]:
        rb = self.operation.request_body
        media = self.binding.body_media_type
        entry = rb.media(media) if rb is not None and media is not None else None
        return entry.encoding if entry is not None else {}


@dataclass
class _Parts:
    path: dict[str, str] = field(default_factory=dict)
    query: list[tuple[str, str]] = field(default_factory=list)
    headers: list[tuple[str, str]] = field(default_factory=list)
    cookies: list[tuple[str, str]] = field(default_factory=list)
    secret_headers: set[str] = field(default_factory=set)
    secret_query: set[str] = field(default_factory=set)


def _dedupe(errs: list[dict[str, str]]) -> list[dict[str, str]]:
    seen: set[tuple[str, str]] = set()
    out = []
    for e in errs:
        key = (e["field"], e["problem"])
        if key not in seen:
            seen.add(key)
            out.append(e)
    return out[:20]
