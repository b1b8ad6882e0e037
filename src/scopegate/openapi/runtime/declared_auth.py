"""Security schemes the toolset declares for a spec that declares none.

A vendor's spec often has no ``securitySchemes`` (or names a scheme it never
defines), although the API wants a key. Rather than editing the pinned copy,
the toolset's settings say how the credential is sent:

* ``DeclaredScheme.bearer()``: ``Authorization: Bearer <secret>``;
* ``DeclaredScheme.basic()``: ``Authorization: Basic`` from a user name and password;
* ``DeclaredScheme.api_key(header=...)`` (or ``query=``, ``cookie=``): the secret as is.

:func:`add_declared_schemes` adds them to the loaded document before any
operation is resolved. Operations that declare no ``security`` of their own
inherit the document's requirement, which, when the spec has none, becomes
"all the declared schemes together"; an operation with an explicit
``security: []`` stays public. A declared key equal to a scheme the spec names
but never defines fills that gap. Credentials for the declared keys come from
``ToolsetSettings.credentials`` like any other scheme, and inputs named like the
declared API key are never declared to the model (they are the credential).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from scopegate.errors import ConfigError
from scopegate.openapi.loader import SpecDocument
from scopegate.openapi.model import SecurityScheme

DeclaredType = Literal["bearer", "basic", "api_key"]
_TOKEN = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$")
# Headers that frame or route the request: never a credential's place.
_NOT_A_KEY_HEADER = frozenset(
    {"host", "content-length", "content-type", "transfer-encoding", "connection", "cookie", "te", "upgrade"}
)


@dataclass(frozen=True)
class DeclaredScheme:
    """How a credential is sent to operations the spec leaves without security."""

    type: DeclaredType
    header: str | None = None
    query: str | None = None
    cookie: str | None = None

    def __post_init__(self) -> None:
        places = [p for p in (self.header, self.query, self.cookie) if p is not None]
        if self.type == "api_key":
            if len(places) != 1:
                raise ConfigError("an api_key scheme is sent in exactly one of: header, query, cookie")
            if not _TOKEN.match(places[0]):
                raise ConfigError(f"api_key name {places[0]!r} is not a valid header, query or cookie name")
            if self.header is not None and self.header.lower() in _NOT_A_KEY_HEADER:
                raise ConfigError(f"header {self.header!r} cannot carry a credential")
        elif self.type in ("bearer", "basic"):
            if places:
                raise ConfigError(f"a {self.type} credential always goes in Authorization: give no header/query/cookie")
        else:
            raise ConfigError(f"unknown credential type {self.type!r}: bearer, basic or api_key")

    @classmethod
    def bearer(cls) -> DeclaredScheme:
        return cls("bearer")

    @classmethod
    def basic(cls) -> DeclaredScheme:
        return cls("basic")

    @classmethod
    def api_key(
        cls, *, header: str | None = None, query: str | None = None, cookie: str | None = None
    ) -> DeclaredScheme:
        return cls("api_key", header=header, query=query, cookie=cookie)

    def scheme(self, key: str) -> SecurityScheme:
        """The OpenAPI security scheme this declaration stands for."""
        if self.type == "bearer":
            return SecurityScheme(key=key, type="http", scheme="bearer", description="declared by the toolset")
        if self.type == "basic":
            return SecurityScheme(key=key, type="http", scheme="basic", description="declared by the toolset")
        location: Literal["header", "query", "cookie"] = (
            "header" if self.header is not None else "query" if self.query is not None else "cookie"
        )
        name = self.header or self.query or self.cookie
        return SecurityScheme(
            key=key, type="apiKey", name=name, location=location, description="declared by the toolset"
        )


def add_declared_schemes(doc: SpecDocument, declared: Mapping[str, DeclaredScheme]) -> None:
    """Add the toolset's schemes to ``doc`` (before any operation of it is resolved)."""
    if not declared:
        return
    clash = sorted(set(declared) & set(doc.security_schemes))
    if clash:
        raise ConfigError(
            f"security schemes {clash} are already defined by the spec; give its credentials under credentials"
        )
    doc.security_schemes = {**doc.security_schemes, **{k: d.scheme(k) for k, d in declared.items()}}
    if not doc.security:
        # Operations without their own ``security`` inherit this: every declared scheme, together.
        doc.security = ({key: () for key in declared},)
