"""No model argument may put a server-owned name on the wire (parameter smuggling). Pure.

An operation whose ``customer_id`` is bound from session state and which also
has an object-typed query parameter (style ``form``, ``explode``: the OpenAPI
default) would send ``{"filter": {"customer_id": "bob"}}`` as
``?customer_id=alice&customer_id=bob``, and a last-value-wins server answers
for bob. The same path could add ``api_key`` next to the credential.

:class:`ReservedNames` is computed when the tool is built. The *reserved*
names are those of server-bound arguments, of arguments an ownership lookup
checks, and of credentials: :func:`credential_inputs` (every API-key name of
the spec whatever its location, the inputs the translation kept from the
model as credentials, ``access_token`` where bearer tokens are used) and the
credential-like names (``access_token``, ``api_key``...) the operation does
not declare as its own input (:func:`undeclared_credential_names`). After
the request is built, and before credentials are added,
:meth:`ReservedNames.check` refuses an object-valued path parameter with a reserved key, whatever its
style (``matrix`` sends ``{"customer_id": "bob"}`` as ``;customer_id=bob``, which JAX-RS and Spring read
as a parameter; ``label`` and ``simple`` send ``customer_id=bob`` or ``customer_id,bob``), and reads the
request *as a server would*
(:func:`names_on_wire`): the decoded query string, every cookie of the
``Cookie`` header, every header name, the fields of a form or multipart body
and the top-level keys of a JSON object body. A bound or checked argument may
put its own name there (as often as its own value needs); nothing else may
put a reserved name there at all. An optional argument whose declared name is
reserved is known when the tool is built (:attr:`ReservedNames.shadowed`) and
is hidden from the model.

Names are compared after :func:`fold`, in one class for every location, since
servers merge them (PHP/Laravel/Rails merge query, form and JSON fields; CGI
turns ``X-Api-Key`` into ``HTTP_X_API_KEY``; PHP reads ``customer.id`` as
``customer_id`` and ``customer_id[]`` as ``customer_id``). A bracketed name
also collides with the plain name it nests under (``customer_id[0]``), while
``filter[status]`` stays apart from a bound ``filter[customer_id]``. Folding
may refuse a harmless name; it never lets a colliding one through.

This module works on the request builder's output, not on how the builder
serialises, so it holds for every style (exploded objects, deepObject keys,
space/pipe-delimited arrays, form fields, headers, cookies) and for whatever
serialiser produced the request.
"""

from __future__ import annotations

import json
import unicodedata
from collections import Counter
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from email.parser import BytesParser
from email.policy import HTTP
from typing import Any, Literal
from urllib.parse import parse_qsl, unquote, urlsplit

from scopegate.openapi.model import FORM_URLENCODED, MULTIPART_FORM, SecurityScheme, ToolBinding
from scopegate.openapi.runtime.request import BuiltRequest

Reason = Literal["bound", "ownership", "credential"]
_WHY = {"bound": "the server sets it", "ownership": "it is checked", "credential": "it names a credential"}
_SEPARATORS = str.maketrans({" ": "_", ".": "_", "-": "_", "\t": "_"})


def fold(name: str) -> str:
    """The name a lenient server may read ``name`` as: up to a NUL (C parsers stop there), NFKC,
    case-folded, trimmed, ``.``/``-``/space as ``_``, a trailing ``[]`` dropped (``ids[]`` is ``ids``
    to PHP, Rails and ``qs``)."""
    text = unicodedata.normalize("NFKC", name.split("\x00", 1)[0]).casefold().strip().translate(_SEPARATORS)
    while text.endswith("[]"):
        text = text[:-2]
    return text


def _reserved_key(name: str, reserved: Mapping[str, Reason]) -> str | None:
    """The reserved name ``name`` collides with: the same folded name, or a plain one it nests under
    (``customer_id[0]`` sets ``customer_id`` for bracket-parsing servers)."""
    folded = fold(name)
    if folded in reserved:
        return folded
    base = folded.split("[", 1)[0].rstrip("_")
    return base if base != folded and base in reserved else None


def _base_media(content_type: str | None) -> str:
    return (content_type or "").split(";")[0].strip().lower()


def _cookie_names(header: str) -> list[str]:
    names = []
    for part in header.split(";"):
        name = part.split("=", 1)[0]
        if name.strip():
            names.append(unquote(name))
    return names


def _multipart_names(body: bytes, content_type: str) -> list[str]:
    message = BytesParser(policy=HTTP).parsebytes(
        b"Content-Type: " + content_type.encode("latin-1") + b"\r\n\r\n" + body
    )
    names = []
    for part in message.iter_parts() if message.is_multipart() else ():
        name = part.get_param("name", header="content-disposition")
        if isinstance(name, str):
            names.append(name)
    return names


def _json_keys(body: bytes) -> list[str]:
    keys: list[str] = []

    def top(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        return {"__pairs__": [k for k, _ in pairs]}

    try:
        root = json.loads(body, object_pairs_hook=top)
    except ValueError:
        return keys
    if isinstance(root, dict):
        keys.extend(root["__pairs__"])
    return keys


def names_on_wire(built: BuiltRequest) -> list[str]:
    """Every parameter, cookie, header and field name the request carries, decoded as a server reads it."""
    names = [name for name, _ in parse_qsl(urlsplit(built.url).query, keep_blank_values=True)]
    for header, value in built.header_list():
        if header.lower() == "cookie":
            names.extend(_cookie_names(value))
        elif header.lower() != "content-type":
            names.append(header)
    if built.body is not None:
        media = _base_media(built.content_type)
        if media == FORM_URLENCODED:
            text = built.body.decode("ascii", errors="replace")
            names.extend(name for name, _ in parse_qsl(text, keep_blank_values=True))
        elif media == MULTIPART_FORM and built.content_type:
            names.extend(_multipart_names(built.body, built.content_type))
        elif media == "application/json" or media.endswith("+json"):
            names.extend(_json_keys(built.body))
    return names


def credential_inputs(binding: ToolBinding, schemes: Mapping[str, SecurityScheme]) -> set[str]:
    """Names that carry credentials: every API-key name of the spec (whatever its location), the
    inputs the translation kept from the model as credentials, and RFC 6750's ``access_token``
    (query or form) when the spec has a bearer, OAuth 2 or OpenID Connect scheme, unless the
    operation declares it as its own input (Discord's ``access_token`` body field)."""
    names = {o.name for o in binding.omitted if o.reason == "credential"}
    own = {fold(am.original_name) for am in binding.arguments if am.original_name}
    for scheme in schemes.values():
        if scheme.type == "apiKey" and scheme.name:
            names.add(scheme.name)  # whatever the operation declares: X_API_KEY is X-API-Key to CGI
        bearer = scheme.type in ("oauth2", "openIdConnect") or (scheme.type == "http" and scheme.scheme == "bearer")
        if bearer and "access_token" not in own:
            names.add("access_token")
    return names


def _placements(value: Any, repeats: bool) -> int:
    """How many times an owner's own value may carry its name (an exploded list once per item)."""
    if isinstance(value, list) and repeats:
        return sum(1 for v in value if v is not None)
    return 1


def undeclared_credential_names(binding: ToolBinding, names: Collection[str]) -> frozenset[str]:
    """The credential-like ``names`` that are not one of the operation's own inputs.

    Translation declares a secret-looking input no security scheme covers (marked sensitive),
    so such a name is the operation's own; any other is reserved: no argument may add it."""
    own = {fold(am.original_name) for am in binding.arguments if am.original_name}
    return frozenset(n for n in names if fold(n) not in own)


@dataclass(frozen=True)
class ReservedNames:
    """The reserved (folded) wire names of one operation and the arguments allowed to carry them."""

    reserved: Mapping[str, Reason]
    owners: Mapping[str, str]  # argument -> the folded name it places itself
    repeats: frozenset[str] = frozenset()  # owners whose list values repeat their name (exploded arrays)
    # Optional arguments whose own declared name is reserved (a header ``Customer-Id`` next to a bound
    # ``customer_id``): known at build time, hidden from the model. A required one stays visible and
    # every call giving it is refused, naming the collision.
    shadowed: frozenset[str] = frozenset()
    # Path parameters: an object value puts its keys into the path (matrix ``;key=value``).
    path_arguments: frozenset[str] = frozenset()

    @classmethod
    def build(
        cls,
        binding: ToolBinding,
        *,
        bound: Collection[str],
        checked: Collection[str] = (),
        schemes: Mapping[str, SecurityScheme] | None = None,
        credential_names: Collection[str] = (),
    ) -> ReservedNames:
        reserved: dict[str, Reason] = {fold(name): "credential" for name in credential_names}
        for name in credential_inputs(binding, schemes or {}):
            reserved[fold(name)] = "credential"
        owners: dict[str, str] = {}
        repeats: set[str] = set()
        params = binding.parameters_by_key
        form = _base_media(binding.body_media_type) in (FORM_URLENCODED, MULTIPART_FORM)
        for am in binding.arguments:
            why: Reason | None = "bound" if am.argument in bound else "ownership" if am.argument in checked else None
            if why is None or not am.original_name:
                continue
            key = fold(am.original_name)
            reserved.setdefault(key, why)
            if am.location == "path":
                continue  # its value travels in the path: its name may appear nowhere else (Rails merges them)
            owners[am.argument] = key
            param = params.get((am.location, am.original_name))
            if (am.location == "body_property" and form) or (
                param is not None and param.location in ("query", "cookie") and param.explode is not False
            ):
                repeats.add(am.argument)
        shadowed = frozenset(
            am.argument
            for am in binding.arguments
            if am.argument not in owners
            and not am.required
            and am.original_name
            and am.location != "path"
            and _reserved_key(am.original_name, reserved) is not None
        )
        path_arguments = frozenset(am.argument for am in binding.arguments if am.location == "path")
        return cls(reserved, owners, frozenset(repeats), shadowed, path_arguments)

    def check(self, built: BuiltRequest, values: Mapping[str, Any]) -> list[dict[str, str]]:
        """Problems (for ``BAD_ARGUMENTS``) if the built request carries a reserved name it may not."""
        if not self.reserved:
            return []
        seen = Counter(k for k in (_reserved_key(n, self.reserved) for n in names_on_wire(built)) if k is not None)
        allowed: Counter[str] = Counter()
        for arg, key in self.owners.items():
            value = values.get(arg)
            if value is not None:
                allowed[key] += _placements(value, arg in self.repeats)
        problems = self._path_object_problems(values)
        for key, why in sorted(self.reserved.items()):
            if seen[key] > allowed[key]:
                problems.append({"field": key[:64], "problem": f"may not be set by an argument ({_WHY[why]})"})
        return problems

    def _path_object_problems(self, values: Mapping[str, Any]) -> list[dict[str, str]]:
        """A reserved key of an object-valued path parameter, in any style and with or without explode
        (unexploded, the key travels as a value a lenient server may still read): refused, never sent."""
        problems = []
        for arg in sorted(self.path_arguments):
            value = values.get(arg)
            if not isinstance(value, Mapping):
                continue
            for key in value:
                hit = _reserved_key(str(key), self.reserved)
                if hit is not None:
                    why = _WHY[self.reserved[hit]]
                    problems.append({"field": f"{arg}.{key}"[:64], "problem": f"may not be set by an argument ({why})"})
        return problems
