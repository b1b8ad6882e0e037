"""What the 3.x and 2.0 operation builders share: the spec's documents, its resolver, and omission records.

An input the builder cannot carry (its ``$ref`` or a ``$ref`` inside its
schema does not resolve, its location is unknown) is *omitted* and recorded
with the reason, unless it is required: then the whole operation fails with
an error naming it, since a tool without it could never make a valid call.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from scopegate.openapi.errors import RefError
from scopegate.openapi.fields import security_requirements
from scopegate.openapi.model import (
    OmissionLocation,
    OmittedInput,
    Operation,
    OperationInfo,
    Parameter,
    RequestBody,
    Response,
    SecurityRequirement,
    Server,
)
from scopegate.openapi.refs import Documents
from scopegate.openapi.resolver import Resolver


@dataclass(frozen=True)
class RawOperation:
    """An operation object as found: its path item, the operation, and the documents each lives in."""

    item: Mapping[str, Any]
    item_doc: str
    op: Mapping[str, Any]
    op_doc: str


@dataclass
class BuildContext:
    """One operation being built: where it lives and what it could not carry."""

    docs: Documents
    resolver: Resolver
    root: Mapping[str, Any]
    servers: tuple[Server, ...]
    security: tuple[SecurityRequirement, ...]
    where: str
    with_responses: bool = False
    omitted: list[OmittedInput] = field(default_factory=list)

    def schema(self, node: Any, doc: str) -> Any:
        return self.resolver.schema(node, doc, where=self.where)

    def deref(self, node: Any, doc: str) -> tuple[Any, str]:
        self.docs.where = self.where
        return self.docs.deref(node, doc)

    def parameter_objects(self, raw: Any, doc: str, level: str) -> Iterator[tuple[Mapping[str, Any], str]]:
        """The parameter objects of a ``parameters`` list (refs followed; an unreadable one omitted, listed).

        ``level`` ("path item", "operation") names the list in the report of a duplicate: the last of
        several definitions of one ``(in, name)`` wins, and each one it shadows is listed as lost.
        """
        if not isinstance(raw, list):
            return
        seen: set[tuple[Any, str]] = set()
        for entry in raw:
            try:
                p, pdoc = self.deref(entry, doc)
            except RefError as exc:
                self.omit("parameter", exc.ref, exc, required=False)
                continue
            if isinstance(p, Mapping) and isinstance(p.get("name"), str):
                key = (p.get("in"), p["name"])
                if key in seen:
                    self.omitted.append(_duplicate(key, level))
                seen.add(key)
                yield p, pdoc

    def omit(
        self,
        location: OmissionLocation,
        name: str,
        exc: RefError,
        *,
        required: bool,
    ) -> None:
        """Record an input lost to an unresolvable ref, or fail the operation if it is required."""
        if required:
            raise RefError(exc.ref, exc.reason, where=self.where) from None
        self.omitted.append(OmittedInput(location, name, "unresolvable_ref", False, f"$ref {exc.ref!r}: {exc.reason}"))


def _duplicate(key: tuple[Any, str], level: str) -> OmittedInput:
    location, name = key
    where: OmissionLocation = location if location in ("path", "query", "header", "cookie") else "parameter"
    detail = f"the {level}'s parameters define {location} {name!r} more than once; the last definition is used"
    return OmittedInput(where, name, "duplicate_parameter", False, detail)


def assemble(
    ctx: BuildContext,
    info: OperationInfo,
    op: Mapping[str, Any],
    *,
    texts: tuple[str, str],
    parameters: Iterable[Parameter],
    request_body: RequestBody | None,
    responses: tuple[Response, ...],
    servers: tuple[Server, ...],
) -> Operation:
    """The :class:`Operation` both dialects end with (``texts``: summary, description)."""
    return Operation(
        operation_id=info.operation_id,
        method=info.method,
        path=info.path,
        summary=texts[0],
        description=texts[1],
        tags=info.tags,
        parameters=tuple(parameters),
        request_body=request_body,
        responses=responses,
        security=security_requirements(op["security"]) if "security" in op else ctx.security,
        servers=servers,
        deprecated=info.deprecated,
        omitted=tuple(ctx.omitted),
    )
