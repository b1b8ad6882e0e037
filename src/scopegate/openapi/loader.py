"""Load Swagger 2.0 / OpenAPI 3.0 / 3.1 into the typed model, lazily.

``load_document`` parses the file and indexes its operations (method, path,
operationId, tags) without resolving any ``$ref``. ``SpecDocument.spec(...)``
then resolves only the operations asked for, so a 3 MB spec with a 5-operation
allowlist only pays for those five.

    doc = load_document("github.json")
    spec = doc.spec(["repos/get", "GET /user"])   # or doc.spec() for everything
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, cast

from scopegate.openapi import swagger2
from scopegate.openapi.errors import OpenAPIError, RefError, SpecLoadError
from scopegate.openapi.fields import parse_security_schemes, parse_servers, security_requirements, str_tuple, text
from scopegate.openapi.model import (
    HTTP_METHODS,
    Dialect,
    MediaType,
    Operation,
    OperationInfo,
    Parameter,
    ParamLocation,
    RequestBody,
    Response,
    Server,
    Spec,
)
from scopegate.openapi.parse import parse_file, parse_text
from scopegate.openapi.resolver import Resolver

_PARAM_LOCATIONS: frozenset[str] = frozenset({"path", "query", "header", "cookie"})


def detect_dialect(root: Mapping[str, Any], name: str = "spec") -> tuple[Dialect, str]:
    """Return (dialect, version string). Raises :class:`SpecLoadError` for anything else."""
    if "swagger" in root:
        version = str(root["swagger"])
        if version.startswith("2."):
            return "swagger2", version
        raise SpecLoadError(f"{name}: unsupported swagger version {version!r} (only 2.0)")
    if "openapi" in root:
        version = str(root["openapi"])
        if version.startswith("3.0"):
            return "oas30", version
        if version.startswith("3.1") or version.startswith("3.2"):
            return "oas31", version
        raise SpecLoadError(f"{name}: unsupported openapi version {version!r}")
    raise SpecLoadError(f"{name}: not an OpenAPI document (no 'openapi' or 'swagger' field)")


class SpecDocument:
    """A parsed spec with a cheap operation index and lazy, cached resolution."""

    def __init__(
        self,
        root: Mapping[str, Any],
        *,
        name: str = "spec",
        base_dir: Path | None = None,
        allow_external_refs: bool = False,
        recursion_depth: int = 1,
    ) -> None:
        if not isinstance(root, Mapping):
            raise SpecLoadError(f"{name}: top level must be a mapping, got {type(root).__name__}")
        self.name = name
        self.root = root
        self.dialect, self.openapi_version = detect_dialect(root, name)
        paths = root.get("paths", {})
        if paths is None:
            paths = {}
        if not isinstance(paths, Mapping):
            raise SpecLoadError(f"{name}: 'paths' must be a mapping")
        self._paths = paths
        self.resolver = Resolver(
            root,
            base_dir=base_dir,
            allow_external_refs=allow_external_refs,
            recursion_depth=recursion_depth,
            parse_file=parse_file,
        )
        self._infos: tuple[OperationInfo, ...] | None = None
        self._ops: dict[str, Operation] = {}
        info = root.get("info") if isinstance(root.get("info"), Mapping) else {}
        assert isinstance(info, Mapping)
        self.title = text(info.get("title")) or name
        self.version = str(info.get("version", ""))
        self.description = text(info.get("description"))
        if self.dialect == "swagger2":
            self.servers = swagger2.servers(root)
            self.security_schemes = swagger2.security_schemes(root.get("securityDefinitions"))
        else:
            self.servers = parse_servers(root.get("servers")) or (Server(url="/"),)
            comps = root.get("components")
            raw_schemes = comps.get("securitySchemes") if isinstance(comps, Mapping) else None
            self.security_schemes = parse_security_schemes(raw_schemes)
        self.security = security_requirements(root.get("security"))

    # ------------------------------------------------------------- indexing
    def _path_item(self, path: str) -> Mapping[str, Any]:
        item, _ = self.resolver.deref(self._paths[path])
        if not isinstance(item, Mapping):
            raise SpecLoadError(f"{self.name}: path item {path!r} is not a mapping")
        return cast(Mapping[str, Any], item)

    def infos(self) -> tuple[OperationInfo, ...]:
        """Every operation in spec order; no schema is resolved."""
        if self._infos is None:
            out: list[OperationInfo] = []
            for path in self._paths:
                try:
                    item = self._path_item(str(path))
                except RefError as exc:
                    raise SpecLoadError(f"{self.name}: path {path!r}: {exc}") from exc
                for method in HTTP_METHODS:
                    op = item.get(method)
                    if not isinstance(op, Mapping):
                        continue
                    op_id = op.get("operationId")
                    out.append(
                        OperationInfo(
                            method=method.upper(),
                            path=str(path),
                            operation_id=str(op_id) if isinstance(op_id, str | int) and str(op_id) else None,
                            tags=str_tuple(op.get("tags")),
                            summary=text(op.get("summary")),
                            deprecated=op.get("deprecated") is True,
                        )
                    )
            self._infos = tuple(out)
        return self._infos

    def find(self, label: str) -> list[OperationInfo]:
        """Operations whose operationId or ``"METHOD /path"`` equals ``label``."""
        key = _normalise_key(label)
        return [i for i in self.infos() if label == i.operation_id or key == i.key]

    # ------------------------------------------------------------ resolving
    def operation(self, info: OperationInfo) -> Operation:
        """Resolve one operation (cached). Raises an :class:`OpenAPIError` naming it."""
        cached = self._ops.get(info.key)
        if cached is not None:
            return cached
        try:
            op = swagger2.build_operation(self, info) if self.dialect == "swagger2" else self._build_oas3(info)
        except RefError as exc:
            raise RefError(exc.ref, exc.reason, where=info.label) from None
        except OpenAPIError:
            raise
        except (TypeError, ValueError, AttributeError, KeyError) as exc:
            raise SpecLoadError(f"{self.name}: malformed operation {info.label}: {type(exc).__name__}: {exc}") from None
        self._ops[info.key] = op
        return op

    def spec(self, select: Iterable[OperationInfo] | None = None) -> Spec:
        """The typed model with the given operations resolved (all when ``None``)."""
        infos = self.infos() if select is None else tuple(select)
        return Spec(
            title=self.title,
            version=self.version,
            dialect=self.dialect,
            openapi_version=self.openapi_version,
            servers=self.servers,
            operations=tuple(self.operation(i) for i in infos),
            security_schemes=self.security_schemes,
            security=self.security,
            description=self.description,
        )

    def schema(self, node: Any, doc: str, where: str) -> Any:
        return self.resolver.schema(node, doc, where=where)

    def _build_oas3(self, info: OperationInfo) -> Operation:
        item_raw = self._paths[info.path]
        item, idoc = self.resolver.deref(item_raw)
        op = item[info.method.lower()]
        where = info.label
        params = self._parameters(item.get("parameters"), idoc, where)
        params.update(self._parameters(op.get("parameters"), idoc, where))
        body = self._request_body(op.get("requestBody"), idoc, where)
        servers = parse_servers(op.get("servers")) or parse_servers(item.get("servers")) or self.servers
        security = security_requirements(op["security"]) if "security" in op else self.security
        return Operation(
            operation_id=info.operation_id,
            method=info.method,
            path=info.path,
            summary=text(op.get("summary")) or text(item.get("summary")),
            description=text(op.get("description")) or text(item.get("description")),
            tags=info.tags,
            parameters=tuple(params.values()),
            request_body=body,
            responses=self._responses(op.get("responses"), idoc, where),
            security=security,
            servers=servers,
            deprecated=info.deprecated,
        )

    def _parameters(self, raw: Any, doc: str, where: str) -> dict[tuple[str, str], Parameter]:
        out: dict[tuple[str, str], Parameter] = {}
        if not isinstance(raw, list):
            return out
        for entry in raw:
            p, pdoc = self.resolver.deref(entry, doc)
            if not isinstance(p, Mapping) or not isinstance(p.get("name"), str):
                continue
            location = p.get("in")
            if location not in _PARAM_LOCATIONS:
                continue
            media_type: str | None = None
            schema: Any = {}
            if "schema" in p:
                schema = self.schema(p["schema"], pdoc, where)
            elif isinstance(p.get("content"), Mapping) and p["content"]:
                media_type, media = next(iter(p["content"].items()))
                if isinstance(media, Mapping) and "schema" in media:
                    schema = self.schema(media["schema"], pdoc, where)
            loc = cast(ParamLocation, location)
            out[(loc, p["name"])] = Parameter(
                name=p["name"],
                location=loc,
                required=True if loc == "path" else p.get("required") is True,
                schema=schema if isinstance(schema, dict) else {},
                description=text(p.get("description")),
                style=p.get("style") if isinstance(p.get("style"), str) else None,
                explode=p.get("explode") if isinstance(p.get("explode"), bool) else None,
                deprecated=p.get("deprecated") is True,
                allow_reserved=p.get("allowReserved") is True,
                media_type=media_type,
            )
        return out

    def _content(self, raw: Any, doc: str, where: str) -> tuple[MediaType, ...]:
        if not isinstance(raw, Mapping):
            return ()
        out: list[MediaType] = []
        for media_type, media in raw.items():
            if not isinstance(media, Mapping):
                media = {}
            schema = self.schema(media["schema"], doc, where) if "schema" in media else {}
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

    def _request_body(self, raw: Any, doc: str, where: str) -> RequestBody | None:
        if raw is None:
            return None
        body, bdoc = self.resolver.deref(raw, doc)
        if not isinstance(body, Mapping):
            return None
        content = self._content(body.get("content"), bdoc, where)
        if not content:
            return None
        return RequestBody(
            required=body.get("required") is True, content=content, description=text(body.get("description"))
        )

    def _responses(self, raw: Any, doc: str, where: str) -> tuple[Response, ...]:
        if not isinstance(raw, Mapping):
            return ()
        out: list[Response] = []
        for status, entry in raw.items():
            if isinstance(status, str) and status.startswith("x-"):
                continue
            resp, rdoc = self.resolver.deref(entry, doc)
            if not isinstance(resp, Mapping):
                continue
            out.append(
                Response(
                    status=str(status),
                    description=text(resp.get("description")),
                    content=self._content(resp.get("content"), rdoc, where),
                )
            )
        return tuple(out)


def _normalise_key(label: str) -> str:
    method, _, path = label.strip().partition(" ")
    return f"{method.upper()} {path.strip()}"


def load_document(
    source: str | os.PathLike[str] | Mapping[str, Any] | bytes,
    *,
    allow_external_refs: bool = False,
    recursion_depth: int = 1,
    base_dir: str | os.PathLike[str] | None = None,
    name: str | None = None,
) -> SpecDocument:
    """Load a spec from a path, a JSON/YAML string or bytes, or an already parsed mapping.

    A ``str`` is treated as a path unless it contains a newline or starts with
    ``{``; pass a :class:`pathlib.Path` to be explicit. External ``$ref`` files
    are read only when ``allow_external_refs`` is true, and only from the
    spec's folder (or ``base_dir``) and below.
    """
    bdir = Path(base_dir) if base_dir is not None else None
    if isinstance(source, Mapping):
        return SpecDocument(
            source,
            name=name or "spec",
            base_dir=bdir,
            allow_external_refs=allow_external_refs,
            recursion_depth=recursion_depth,
        )
    if isinstance(source, bytes) or (isinstance(source, str) and ("\n" in source or source.lstrip()[:1] == "{")):
        root = parse_text(source, name=name or "<string>")
        if not isinstance(root, Mapping):
            raise SpecLoadError(f"{name or '<string>'}: top level must be a mapping")
        return SpecDocument(
            root,
            name=name or "spec",
            base_dir=bdir,
            allow_external_refs=allow_external_refs,
            recursion_depth=recursion_depth,
        )
    path = Path(source)
    root = parse_file(path)
    if not isinstance(root, Mapping):
        raise SpecLoadError(f"{path.name}: top level must be a mapping")
    return SpecDocument(
        root,
        name=name or path.name,
        base_dir=bdir if bdir is not None else path.parent,
        allow_external_refs=allow_external_refs,
        recursion_depth=recursion_depth,
    )


def load_spec(
    source: str | os.PathLike[str] | Mapping[str, Any] | bytes,
    *,
    allow_external_refs: bool = False,
    recursion_depth: int = 1,
) -> Spec:
    """Load and resolve every operation. Prefer :func:`load_document` + selection for big specs."""
    return load_document(source, allow_external_refs=allow_external_refs, recursion_depth=recursion_depth).spec()
