"""Load Swagger 2.0 / OpenAPI 3.0 / 3.1 into the typed model, lazily.

``load_document`` parses the file and indexes its operations (method, path,
operationId, tags), following only path-item and operation ``$ref``s (the
latter an extension real multi-file specs use). ``SpecDocument.spec(...)``
then resolves only the operations asked for, and of those only what a tool
needs (parameters and request body; responses with ``with_responses``), so a
3 MB spec with a 5-operation allowlist only pays for those five. Schemas are
resolved once per document and shared (:mod:`scopegate.openapi.resolver`).

    doc = load_document("github.json")
    spec = doc.spec(["repos/get", "GET /user"])   # or doc.spec() for everything
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from scopegate.openapi import oas3, swagger2
from scopegate.openapi.build import BuildContext, RawOperation
from scopegate.openapi.errors import OpenAPIError, RefError, SpecLoadError
from scopegate.openapi.fields import parse_security_schemes, parse_servers, security_requirements, str_tuple, text
from scopegate.openapi.model import HTTP_METHODS, Dialect, Operation, OperationInfo, Server, Spec
from scopegate.openapi.parse import parse_file, parse_text
from scopegate.openapi.refs import Documents
from scopegate.openapi.resolver import Resolver


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
        root_key: str = "",
        allow_external_refs: bool = False,
        recursion_depth: int = 1,
    ) -> None:
        if not isinstance(root, Mapping):
            raise SpecLoadError(f"{name}: top level must be a mapping, got {type(root).__name__}")
        if recursion_depth < 1:
            raise ValueError("recursion_depth must be >= 1")
        self.name = name
        self.root = root
        self.recursion_depth = recursion_depth
        self.dialect, self.openapi_version = detect_dialect(root, name)
        paths = root.get("paths", {})
        if paths is None:
            paths = {}
        if not isinstance(paths, Mapping):
            raise SpecLoadError(f"{name}: 'paths' must be a mapping")
        self._paths = paths
        self.documents = Documents(
            root,
            root_key=root_key,
            base_dir=base_dir,
            allow_external_refs=allow_external_refs,
            parse_file=parse_file,
        )
        self.resolver = Resolver(self.documents)
        self._infos: tuple[OperationInfo, ...] | None = None
        self._raw: dict[str, RawOperation] = {}
        self._ops: dict[tuple[str, bool], Operation] = {}
        # Document-level problems found while indexing (e.g. a path item whose $ref does not resolve).
        self.problems: list[str] = []
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
    def infos(self) -> tuple[OperationInfo, ...]:
        """Every operation in spec order; no schema is resolved.

        Path items and operation objects given by ``$ref`` are followed (an
        operation ``$ref`` is an extension some real specs use); ``x-`` keys of
        the Paths Object are extensions, not paths, and are skipped. A path item
        that cannot be read is recorded in :attr:`problems`; an operation that
        cannot be read is listed with its ``problem`` and fails when resolved.
        """
        if self._infos is None:
            root_key = self.documents.root_key
            out: list[OperationInfo] = []
            for raw_path, raw_item in self._paths.items():
                path = str(raw_path)
                if path.startswith("x-"):
                    continue  # a specification extension of the Paths Object, not a path
                self.documents.where = path
                try:
                    item, idoc = self.documents.deref(raw_item, root_key)
                except RefError as exc:
                    self.problems.append(f"path {path!r}: {exc}")
                    continue
                if not isinstance(item, Mapping):
                    self.problems.append(f"path {path!r}: path item is not a mapping")
                    continue
                for method in HTTP_METHODS:
                    raw_op = item.get(method)
                    if raw_op is None:
                        continue
                    out.append(self._info(method.upper(), path, item, idoc, raw_op))
            self._infos = tuple(out)
        return self._infos

    def _info(self, method: str, path: str, item: Mapping[str, Any], idoc: str, raw_op: Any) -> OperationInfo:
        key = f"{method} {path}"
        self.documents.where = key
        try:
            op, odoc = self.documents.deref(raw_op, idoc)
        except RefError as exc:
            return OperationInfo(method=method, path=path, operation_id=None, problem=str(exc))
        if not isinstance(op, Mapping):
            return OperationInfo(method=method, path=path, operation_id=None, problem="operation is not a mapping")
        self._raw[key] = RawOperation(item, idoc, op, odoc)
        op_id = op.get("operationId")
        return OperationInfo(
            method=method,
            path=path,
            operation_id=str(op_id) if isinstance(op_id, str | int) and str(op_id) else None,
            tags=str_tuple(op.get("tags")),
            summary=text(op.get("summary")),
            deprecated=op.get("deprecated") is True,
        )

    def find(self, label: str) -> list[OperationInfo]:
        """Operations whose operationId or ``"METHOD /path"`` equals ``label``."""
        key = _normalise_key(label)
        return [i for i in self.infos() if label == i.operation_id or key == i.key]

    # ------------------------------------------------------------ resolving
    def operation(self, info: OperationInfo, *, with_responses: bool = False) -> Operation:
        """Resolve one operation (cached). Raises an :class:`OpenAPIError` naming it.

        Parameters and the request body are resolved; response schemas only
        with ``with_responses`` (nothing in translation or the runtime reads them).
        """
        cached = self._ops.get((info.key, with_responses))
        if cached is not None:
            return cached
        self.infos()
        raw = self._raw.get(info.key)
        if raw is None:
            raise SpecLoadError(f"{self.name}: operation {info.label} cannot be read: {info.problem or 'not found'}")
        ctx = BuildContext(
            docs=self.documents,
            resolver=self.resolver,
            root=self.root,
            servers=self.servers,
            security=self.security,
            where=info.label,
            with_responses=with_responses,
        )
        builder = swagger2.build_operation if self.dialect == "swagger2" else oas3.build_operation
        try:
            op = builder(ctx, info, raw)
        except RefError as exc:
            raise RefError(exc.ref, exc.reason, where=info.label) from None
        except OpenAPIError:
            raise
        except RecursionError:
            raise SpecLoadError(f"{self.name}: operation {info.label} is nested too deeply") from None
        except (TypeError, ValueError, AttributeError, KeyError) as exc:
            raise SpecLoadError(f"{self.name}: malformed operation {info.label}: {type(exc).__name__}: {exc}") from None
        self._ops[(info.key, with_responses)] = op
        return op

    def spec(self, select: Iterable[OperationInfo] | None = None, *, with_responses: bool = False) -> Spec:
        """The typed model with the given operations resolved (all when ``None``)."""
        infos = self.infos() if select is None else tuple(select)
        return Spec(
            title=self.title,
            version=self.version,
            dialect=self.dialect,
            openapi_version=self.openapi_version,
            servers=self.servers,
            operations=tuple(self.operation(i, with_responses=with_responses) for i in infos),
            security_schemes=self.security_schemes,
            security=self.security,
            description=self.description,
        )

    def schema(self, node: Any, doc: str, where: str) -> Any:
        return self.resolver.schema(node, doc, where=where)


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
    are read only when ``allow_external_refs`` is true, only from the spec's
    folder (or ``base_dir``) and below, relative to the file that refers to
    them, and never over the network (see :mod:`scopegate.openapi.refs`).
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
    folder = bdir if bdir is not None else path.parent
    try:
        root_key = path.resolve().relative_to(folder.resolve()).as_posix()
    except ValueError:
        raise SpecLoadError(f"{path.name}: the spec must be inside base_dir {str(folder)!r}") from None
    return SpecDocument(
        root,
        name=name or path.name,
        base_dir=folder,
        root_key=root_key,
        allow_external_refs=allow_external_refs,
        recursion_depth=recursion_depth,
    )


def load_spec(
    source: str | os.PathLike[str] | Mapping[str, Any] | bytes,
    *,
    allow_external_refs: bool = False,
    recursion_depth: int = 1,
    with_responses: bool = False,
) -> Spec:
    """Load and resolve every operation. Prefer :func:`load_document` + selection for big specs."""
    doc = load_document(source, allow_external_refs=allow_external_refs, recursion_depth=recursion_depth)
    return doc.spec(with_responses=with_responses)
