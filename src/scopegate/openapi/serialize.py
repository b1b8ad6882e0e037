"""Parameter and form-body serialisation exactly as OpenAPI defines it. Pure: no I/O.

Parameters (``in`` x ``style`` x ``explode``, RFC 6570 where OpenAPI uses it):

=======  ==============================================  =================
in       styles                                          default
=======  ==============================================  =================
path     ``simple``, ``label``, ``matrix``               simple
query    ``form``, ``spaceDelimited``, ``pipeDelimited``, form, explode
         ``deepObject`` (+ ``tabDelimited``: Swagger
         2.0 ``collectionFormat: tsv``)
header   ``simple``                                      simple
cookie   ``form``                                        form, explode
=======  ==============================================  =================

* ``explode`` defaults to true for ``form`` only. Arrays: ``form`` exploded
  repeats the name (``id=1&id=2``), otherwise values are joined with ``,``
  (the comma itself is not percent-encoded: ``id=1,2``), ``%20``
  (spaceDelimited), ``%7C`` (pipeDelimited) or ``%09`` (tabDelimited).
  Objects: ``form`` exploded sends each key as its own parameter, otherwise
  ``name=k1,v1,k2,v2``; ``simple``/``label``/``matrix`` as in OpenAPI's style
  table (``k=v,k2=v2``, ``.k=v.k2=v2``, ``;k=v;k2=v2``).
* ``deepObject`` uses the bracket conventions APIs document, to any depth:
  ``metadata[order_id]=6735``, arrays of scalars ``expand[]=a&expand[]=b``,
  arrays of objects indexed ``items[0][price]=p``.
* Values are percent-encoded (RFC 3986; only unreserved characters stay), in
  the path with nothing left safe; ``allowReserved`` keeps the reserved
  characters that cannot change the query's structure (``:/?[]@!$'()*,;``).
  Header values are sent as they are (printable ASCII only; checked by the
  request builder). ``content`` parameters are sent as JSON text.
* ``None`` (and, as RFC 6570 says, ``None`` inside arrays and objects, empty
  arrays and empty objects) means "not sent".

``application/x-www-form-urlencoded`` bodies follow the Encoding Object
(OpenAPI 3.1.2/3.2 wording): a property whose encoding gives ``style``,
``explode`` or ``allowReserved`` is serialised like a query parameter with
that style (``form`` by default); any other property by its content type:
objects as JSON text (``application/json``, the default for objects), arrays
as the property name repeated, one value per item (objects inside as JSON),
scalars as text.

Every wire name an argument can produce is known when the encoder is built
(:class:`WireNames`): exact names, bracket prefixes (``metadata[``), or
"open" for an exploded free-form object whose keys become names.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, unquote_plus

from scopegate.openapi.model import Parameter
from scopegate.openapi.simplify import deref

LOCATION_STYLES: Mapping[str, frozenset[str]] = {
    "path": frozenset({"simple", "label", "matrix"}),
    "query": frozenset({"form", "spaceDelimited", "pipeDelimited", "deepObject", "tabDelimited"}),
    "header": frozenset({"simple"}),
    "cookie": frozenset({"form"}),
}
DEFAULT_STYLE: Mapping[str, str] = {"path": "simple", "query": "form", "header": "simple", "cookie": "form"}
_DELIMITERS = {"spaceDelimited": "%20", "pipeDelimited": "%7C", "tabDelimited": "%09"}
# Reserved characters allowReserved may leave as they are without changing the query's structure.
_RESERVED_SAFE = ":/?[]@!$'()*,;"
_CONTAINER = frozenset({"object", "array"})


class _ValueProblem(ValueError):
    """A value the style cannot express (a nested object in ``form``, a non-JSON value...); the runtime's
    request builder turns it into an argument problem (never reaches application code)."""


@dataclass(frozen=True)
class WireNames:
    """The names an argument can put on the wire (query keys or form-body keys).

    ``exact``: names sent verbatim; ``prefixes``: every other name starts
    with one of these (deepObject ``name[``); ``open``: an exploded free-form
    object, whose keys become names and are not known in advance.
    """

    exact: frozenset[str] = frozenset()
    prefixes: frozenset[str] = frozenset()
    open: bool = False

    def admits(self, name: str) -> bool:
        return self.open or name in self.exact or any(name.startswith(p) for p in self.prefixes)


# ------------------------------------------------------------------ values
def scalar_text(value: Any) -> str:
    """How a single value is written into a URL, header or form: JSON spelling for non-strings."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    if isinstance(value, int):
        return str(value)
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def json_text(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def pct(text: str, *, allow_reserved: bool = False) -> str:
    """Percent-encode for a query or form value (RFC 3986)."""
    return quote(text, safe=_RESERVED_SAFE if allow_reserved else "")


def split_path_template(path: str) -> tuple[str, tuple[tuple[str, str], ...]]:
    """A path key and the fixed query some real specs write into it (OpenAI:
    ``/responses/{response_id}?beta=true``): the template and the query pairs, percent-encoded.

    A fragment (``/cookies#formNonExploded``, how some specs give one path several variants) names
    the variant, never part of a request: it is dropped here (the operation keeps it as its identity).
    """
    template, _, fixed = path.partition("#")[0].partition("?")
    pairs = []
    for part in fixed.split("&") if fixed else []:
        key, _, value = part.partition("=")
        if key:
            pairs.append((pct(unquote_plus(key)), pct(unquote_plus(value))))
    return template, tuple(pairs)


def pct_path(text: str) -> str:
    """Percent-encode one path value: nothing left safe, dot-only values encoded too."""
    encoded = quote(text, safe="")
    if encoded and set(encoded) == {"."}:
        encoded = encoded.replace(".", "%2E")
    return encoded


def pct_name(text: str) -> str:
    """A query/form key; brackets of deepObject names stay readable."""
    return quote(text, safe="[]")


def _is_scalar(value: Any) -> bool:
    return not isinstance(value, Mapping | list)


def _items(value: list[Any], style: str) -> list[str]:
    out: list[str] = []
    for v in value:
        if v is None:
            continue
        if not _is_scalar(v):
            raise _ValueProblem(f"nested values cannot be sent with style {style}")
        out.append(scalar_text(v))
    return out


def _members(value: Mapping[str, Any], style: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for k, v in value.items():
        if v is None:
            continue
        if not _is_scalar(v):
            raise _ValueProblem(f"nested values cannot be sent with style {style}")
        out.append((str(k), scalar_text(v)))
    return out


_DELIMITER_CHARS = {"spaceDelimited": " ", "pipeDelimited": "|", "tabDelimited": "\t"}


def _no_delimiter(texts: list[str], style: str) -> None:
    """A delimited style cannot carry its own delimiter: it would arrive as two values."""
    char = _DELIMITER_CHARS[style]
    if any(char in t for t in texts):
        raise _ValueProblem(f"values of a {style} parameter cannot contain {char!r}")


def _deep(value: Any, path: tuple[str | None, ...]) -> list[tuple[tuple[str | None, ...], str]]:
    """Bracket-notation leaves: ``(("b", None), "1")`` is ``name[b][]=1``."""
    if value is None:
        return []
    if isinstance(value, Mapping):
        out: list[tuple[tuple[str | None, ...], str]] = []
        for k, v in value.items():
            out.extend(_deep(v, (*path, str(k))))
        return out
    if isinstance(value, list):
        if all(_is_scalar(v) for v in value):
            return [((*path, None), scalar_text(v)) for v in value if v is not None]
        out = []
        for i, v in enumerate(value):
            out.extend(_deep(v, (*path, str(i))))
        return out
    return [(path, scalar_text(value))]


def _deep_encoded(name: str, value: Any, allow_reserved: bool) -> list[tuple[str, str]]:
    return [
        (
            pct_name(name) + "".join("[]" if seg is None else f"[{pct(seg)}]" for seg in segments),
            pct(text, allow_reserved=allow_reserved),
        )
        for segments, text in _deep(value, ())
    ]


def style_pairs(
    name: str, value: Any, style: str, explode: bool, *, allow_reserved: bool = False
) -> list[tuple[str, str]]:
    """Encoded ``(name, value)`` pairs of one query parameter or form property in a query-like style."""
    if value is None:
        return []
    if style == "deepObject":
        return _deep_encoded(name, value, allow_reserved)
    enc_name = pct_name(name)

    def v(text: str) -> str:
        return pct(text, allow_reserved=allow_reserved)

    if isinstance(value, list):
        texts = _items(value, style)
        if not texts:
            return []
        if style in _DELIMITERS:
            _no_delimiter(texts, style)
            return [(enc_name, _DELIMITERS[style].join(v(t) for t in texts))]
        if explode:
            return [(enc_name, v(t)) for t in texts]
        return [(enc_name, ",".join(v(t) for t in texts))]
    if isinstance(value, Mapping):
        members = _members(value, style)
        if not members:
            return []
        if style in _DELIMITERS:
            _no_delimiter([x for pair in members for x in pair], style)
            return [(enc_name, _DELIMITERS[style].join(f"{v(k)}{_DELIMITERS[style]}{v(t)}" for k, t in members))]
        if explode:
            return [(pct_name(k), v(t)) for k, t in members]
        return [(enc_name, ",".join(f"{v(k)},{v(t)}" for k, t in members))]
    return [(enc_name, v(scalar_text(value)))]


# ------------------------------------------------------------- parameters
def schema_types(schema: Any, defs: Mapping[str, Any] | None = None, _seen: int = 0) -> set[str]:
    """The JSON types a schema admits (unions and ``allOf`` followed); empty when unknown."""
    schema = deref(schema, defs)
    if not isinstance(schema, Mapping) or _seen > 16:
        return set()
    t = schema.get("type")
    if isinstance(t, str):
        return {t}
    if isinstance(t, list):
        return {x for x in t if isinstance(x, str)}
    out: set[str] = set()
    for key in ("oneOf", "anyOf"):
        if isinstance(schema.get(key), list):
            for part in schema[key]:
                found = schema_types(part, defs, _seen + 1)
                if not found:
                    return set()
                out |= found
            return out
    if isinstance(schema.get("allOf"), list):
        for part in schema["allOf"]:
            out |= schema_types(part, defs, _seen + 1)
        if out:
            return out
    if "properties" in schema or "additionalProperties" in schema:
        return {"object"}
    if "items" in schema or "prefixItems" in schema:
        return {"array"}
    return set()


def _definitely_container(schema: Any, defs: Mapping[str, Any] | None) -> bool:
    types = schema_types(schema, defs) - {"null"}
    return bool(types) and types <= _CONTAINER


def _nested_members(schema: Any, defs: Mapping[str, Any] | None) -> bool:
    """True when the schema's array items or object members are certainly objects/arrays themselves."""
    schema = deref(schema, defs)
    if not isinstance(schema, Mapping):
        return False
    items = schema.get("items")
    if isinstance(items, Mapping) and _definitely_container(items, defs):
        return True
    props = schema.get("properties")
    if isinstance(props, Mapping) and any(_definitely_container(p, defs) for p in props.values()):
        return True
    extra = schema.get("additionalProperties")
    return isinstance(extra, Mapping) and _definitely_container(extra, defs)


def _style_of(param: Parameter) -> tuple[str, bool]:
    style = param.style or DEFAULT_STYLE[param.location]
    explode = param.explode if param.explode is not None else style == "form"
    return style, explode


def _json_media(media_type: str) -> bool:
    base = media_type.split(";")[0].strip().lower()
    return base == "application/json" or base.endswith("+json")


_BINARY_MEDIA = ("multipart/", "application/octet-stream", "image/", "audio/", "video/", "font/")
_BINARY_FORMATS = frozenset({"binary", "byte", "base64"})
# application/* types that are text by definition (sent as text unless the schema says binary).
_TEXTUAL_APPLICATION = frozenset(
    {
        "application/javascript",
        "application/ecmascript",
        "application/xml",
        "application/yaml",
        "application/x-yaml",
        "application/sdp",
        "application/graphql",
        "application/sql",
        "application/x-ndjson",
        "application/csv",
    }
)


def body_refusal(media_type: str, schema: Any = None) -> str:
    """Why :func:`body_kind` refuses a body: ``multipart``, ``binary`` or ``unsupported``."""
    base = media_type.split(";")[0].strip().lower()
    if base.startswith("multipart/"):
        return "multipart"
    s = schema if isinstance(schema, Mapping) else {}
    if base.startswith(_BINARY_MEDIA) or s.get("format") in _BINARY_FORMATS or "contentEncoding" in s:
        return "binary"
    return "unsupported"


def body_kind(media_type: str, schema: Any = None) -> str | None:
    """How a request body of this media type is sent: ``json``, ``form``, ``text``, or ``None`` (cannot).

    JSON covers ``application/json``, ``*/*`` and every ``+json`` type; text covers ``text/*``, textual
    ``application/*`` types (``javascript``, ``xml``, ``yaml``, ``sdp``...) and any other non-binary type
    whose schema is a plain string.
    Multipart and binary bodies (``format: binary``, octet-stream, images...) are not sent.
    """
    base = media_type.split(";")[0].strip().lower()
    s = schema if isinstance(schema, Mapping) else {}
    if base == "*/*" and s.get("type") == "string":
        # any media type, and the body is a string: raw text (JSON would add quotes), unless binary
        return None if s.get("format") in _BINARY_FORMATS or "contentEncoding" in s else "text"
    if _json_media(base) or base == "*/*":
        return "json"
    if base == "application/x-www-form-urlencoded":
        return "form"
    if base.startswith(_BINARY_MEDIA):
        return None
    if s.get("format") in _BINARY_FORMATS or "contentEncoding" in s or "contentMediaType" in s:
        return None
    if base.startswith("text/") or base in _TEXTUAL_APPLICATION or base.endswith("+xml"):
        return "text"
    if s.get("type") == "string":
        return "text"
    return None


def parameter_problem(param: Parameter) -> str | None:
    """Why ``param`` cannot be serialised, or ``None``. Decided from the spec alone, at build time."""
    defs = param.schema.get("$defs") if isinstance(param.schema, Mapping) else None
    if param.media_type is not None:
        base = param.media_type.split(";")[0].strip().lower()
        if not (_json_media(base) or base.startswith("text/")):
            return f"content type {param.media_type!r} cannot be serialised"
        return None
    style, _ = _style_of(param)
    if style not in LOCATION_STYLES[param.location]:
        return f"style {style!r} is not defined for {param.location} parameters"
    if style != "deepObject" and _nested_members(param.schema, defs):
        return f"nested values cannot be serialised with style {style!r}"
    return None


class ParamEncoder:
    """Serialises one parameter's value; see the module docstring for the rules."""

    def __init__(self, param: Parameter) -> None:
        self.param = param
        self.name = param.name
        self.location = param.location
        self.style, self.explode = _style_of(param)
        self.allow_reserved = param.allow_reserved and param.location == "query"
        self.content = param.media_type
        self.delimiter = param.delimiter if param.location in ("path", "header") else None
        self._defs = param.schema.get("$defs") if isinstance(param.schema, Mapping) else None

    def _delimited(self, value: list[Any]) -> list[str]:
        """Items of a Swagger 2.0 ssv/tsv/pipes path or header array: a value holding the delimiter is refused."""
        assert self.delimiter is not None
        texts = _items(value, "simple")
        if any(self.delimiter in t for t in texts):
            raise _ValueProblem(f"values of this parameter cannot contain {self.delimiter!r}")
        return texts

    def _content_text(self, value: Any) -> str:
        assert self.content is not None
        return json_text(value) if _json_media(self.content) else scalar_text(value)

    def path(self, value: Any) -> str:
        """The encoded path segment text (may be empty: the builder refuses that)."""
        if self.content is not None:
            return pct_path(self._content_text(value))
        style, explode, name = self.style, self.explode, pct_path(self.name)
        if isinstance(value, list) and self.delimiter is not None:
            return pct_path(self.delimiter).join(pct_path(t) for t in self._delimited(value))
        if isinstance(value, list):
            items = [pct_path(t) for t in _items(value, style)]
            if style == "label":
                return "." + ("." if explode else ",").join(items) if items else ""
            if style == "matrix":
                if explode:
                    return "".join(f";{name}={i}" for i in items)
                return f";{name}=" + ",".join(items) if items else ""
            return ",".join(items)
        if isinstance(value, Mapping):
            pairs = [(pct_path(k), pct_path(t)) for k, t in _members(value, style)]
            if not pairs:
                return ""
            if style == "label":
                return "." + (
                    ".".join(f"{k}={t}" for k, t in pairs) if explode else ",".join(f"{k},{t}" for k, t in pairs)
                )
            if style == "matrix":
                if explode:
                    return "".join(f";{k}={t}" for k, t in pairs)
                return f";{name}=" + ",".join(f"{k},{t}" for k, t in pairs)
            return ",".join(f"{k}={t}" if explode else f"{k},{t}" for k, t in pairs)
        text = pct_path(scalar_text(value))
        if style == "label":
            return "." + text
        if style == "matrix":
            return f";{name}={text}" if text else f";{name}"
        return text

    def query(self, value: Any) -> list[tuple[str, str]]:
        """Encoded ``(name, value)`` pairs."""
        if value == "" and not self.param.allow_empty_value:
            raise _ValueProblem("must not be empty (the API does not accept an empty value here)")
        if self.content is not None:
            return [(pct_name(self.name), pct(self._content_text(value)))]
        return style_pairs(self.name, value, self.style, self.explode, allow_reserved=self.allow_reserved)

    def header(self, value: Any) -> str:
        """The header value (simple style, not percent-encoded)."""
        if self.content is not None:
            return self._content_text(value)
        if isinstance(value, list):
            if self.delimiter is not None:
                return self.delimiter.join(self._delimited(value))
            return ",".join(_items(value, "simple"))
        if isinstance(value, Mapping):
            sep = "=" if self.explode else ","
            return ",".join(f"{k}{sep}{t}" for k, t in _members(value, "simple"))
        return scalar_text(value)

    def cookie(self, value: Any) -> list[tuple[str, str]]:
        """``(name, encoded value)`` pairs for the Cookie header (form style)."""
        if self.content is not None:
            return [(self.name, pct(self._content_text(value)))]
        if isinstance(value, list):
            texts = [pct(t) for t in _items(value, "form")]
            if not texts:
                return []
            return [(self.name, t) for t in texts] if self.explode else [(self.name, ",".join(texts))]
        if isinstance(value, Mapping):
            members = [(pct(k), pct(t)) for k, t in _members(value, "form")]
            if self.explode:
                return members
            return [(self.name, ",".join(f"{k},{t}" for k, t in members))] if members else []
        return [(self.name, pct(scalar_text(value)))]

    def wire_names(self) -> WireNames:
        """The query keys (or cookie names) this parameter can produce; empty for path and header."""
        if self.location in ("path", "header"):
            return WireNames()
        own = pct_name(self.name) if self.location == "query" else self.name
        if self.content is None and self.style == "deepObject":
            return WireNames(exact=frozenset({own}), prefixes=frozenset({own + "["}))
        if (
            self.content is None
            and self.explode
            and self.style == "form"
            and "object" in schema_types(self.param.schema, self._defs)
        ):
            return _object_keys(self.param.schema, self._defs, own, encode=self.location == "query")
        return WireNames(exact=frozenset({own}))


def _object_keys(schema: Any, defs: Mapping[str, Any] | None, own: str, *, encode: bool) -> WireNames:
    """An exploded object sends its keys as names: known only when it admits no other properties."""
    s = deref(schema, defs)
    props = s.get("properties") if isinstance(s, Mapping) else None
    closed = isinstance(s, Mapping) and s.get("additionalProperties") is False and not s.get("patternProperties")
    names = {pct_name(str(k)) if encode else str(k) for k in (props or {})}
    return WireNames(exact=frozenset(names | {own}), open=not closed)


# ---------------------------------------------------------------- form bodies
def _uses_style(enc: Mapping[str, Any]) -> bool:
    return any(k in enc for k in ("style", "explode", "allowReserved"))


def form_property_problem(name: str, schema: Any, enc: Mapping[str, Any], defs: Mapping[str, Any] | None) -> str | None:
    """Why a form-body property cannot be serialised, or ``None``."""
    if _uses_style(enc):
        style = enc.get("style", "form")
        if style not in LOCATION_STYLES["query"]:
            return f"encoding style {style!r} is not defined for form bodies"
        if style != "deepObject" and _nested_members(schema, defs):
            return f"nested values cannot be serialised with style {style!r}"
        return None
    ctype = enc.get("contentType")
    if isinstance(ctype, str):
        base = ctype.split(",")[0].split(";")[0].strip().lower()
        if not (_json_media(base) or base.startswith("text/") or base == "*/*"):
            return f"encoding contentType {ctype!r} cannot be sent in a form body"
    return None


class FormEncoder:
    """``application/x-www-form-urlencoded`` for one request body (schema + encoding map)."""

    def __init__(self, schema: Mapping[str, Any], encoding: Mapping[str, Mapping[str, Any]]) -> None:
        self._defs = schema.get("$defs") if isinstance(schema, Mapping) else None
        self.encoding = encoding
        root = deref(schema, self._defs)
        props = root.get("properties") if isinstance(root, Mapping) else None
        self._props: Mapping[str, Any] = props if isinstance(props, Mapping) else {}

    def _json_content(self, name: str) -> bool:
        ctype = self.encoding.get(name, {}).get("contentType")
        return isinstance(ctype, str) and _json_media(ctype.split(",")[0])

    def pairs(self, name: str, value: Any) -> list[tuple[str, str]]:
        """Encoded pairs of one property."""
        if value is None:
            return []
        enc = self.encoding.get(name, {})
        if _uses_style(enc):
            style = str(enc.get("style", "form"))
            explode = enc.get("explode", style == "form") is True
            return style_pairs(name, value, style, explode, allow_reserved=enc.get("allowReserved") is True)
        key = pct_name(name)
        as_json = self._json_content(name)
        if isinstance(value, list):
            return [
                (key, pct(json_text(v) if as_json or not _is_scalar(v) else scalar_text(v)))
                for v in value
                if v is not None
            ]
        if isinstance(value, Mapping) or as_json:
            return [(key, pct(json_text(value)))]
        return [(key, pct(scalar_text(value)))]

    def encode(self, payload: Mapping[str, Any]) -> bytes:
        pairs: list[tuple[str, str]] = []
        for name, value in payload.items():
            pairs.extend(self.pairs(str(name), value))
        return "&".join(f"{k}={v}" for k, v in pairs).encode("ascii")

    def wire_names(self, name: str) -> WireNames:
        enc = self.encoding.get(name, {})
        own = pct_name(name)
        if _uses_style(enc):
            style = str(enc.get("style", "form"))
            if style == "deepObject":
                return WireNames(exact=frozenset({own}), prefixes=frozenset({own + "["}))
            explode = enc.get("explode", style == "form") is True
            schema = self._props.get(name, {})
            if style == "form" and explode and "object" in schema_types(schema, self._defs):
                return _object_keys(schema, self._defs, own, encode=True)
        return WireNames(exact=frozenset({own}))
