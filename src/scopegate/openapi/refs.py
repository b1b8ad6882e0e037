"""Where a ``$ref`` points: documents of one spec, JSON pointers, and the spec's folder as a jail.

A spec is one root document plus, when external references are allowed, the
files it reaches through relative ``$ref``s. Each document is known by its
path relative to the spec's folder (the root file's folder, or ``base_dir``):
``DigitalOcean-public.v2.yaml``, ``resources/droplets/droplets_list.yml``. A
reference is resolved relative to the document it appears in (not the root),
so ``#/components/...`` inside a sibling file points into that sibling.

Refused with a :class:`RefError` that says why: URLs of any scheme
(``http:``, ``https:``, ``file:``...), network-path references (``//host``),
absolute paths, paths that leave the folder (``../`` past the top, or a
symlink whose target is outside), missing files. Nothing is ever fetched over
the network, and a file is parsed only when a reference first needs it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from scopegate.openapi.errors import RefError, SpecLoadError

RefKey = tuple[str, str]
"""(document key, JSON pointer fragment) -- the identity of a reference target."""

MAX_REF_HOPS = 64
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def unescape_pointer_token(token: str) -> str:
    """JSON-pointer token unescaping (RFC 6901), after URI percent-decoding."""
    return unquote(token).replace("~1", "/").replace("~0", "~")


def ref_name(ref: str) -> str:
    """Last pointer segment of a ref (``#/components/schemas/Pet`` -> ``Pet``), else the file stem."""
    file_part, _, fragment = ref.partition("#")
    if fragment.strip("/"):
        return unescape_pointer_token(fragment.rstrip("/").rsplit("/", 1)[-1]) or ref
    stem = Path(unquote(file_part)).stem
    return stem or ref


def lookup_pointer(doc: Any, fragment: str) -> Any:
    """The node at a JSON pointer. Raises ``KeyError`` naming the missing token."""
    if fragment in ("", "/"):
        return doc
    if not fragment.startswith("/"):
        raise KeyError(f"not a JSON pointer: {fragment!r}")
    node = doc
    for raw in fragment[1:].split("/"):
        token = unescape_pointer_token(raw)
        if isinstance(node, Mapping):
            if token in node:
                node = node[token]
            elif token.isdigit() and int(token) in node:  # YAML integer keys (e.g. responses 200)
                node = node[int(token)]
            else:
                raise KeyError(token)
        elif isinstance(node, list):
            if not token.isdigit() or int(token) >= len(node):
                raise KeyError(token)
            node = node[int(token)]
        else:
            raise KeyError(token)
    return node


class Documents:
    """The documents of one spec, loaded on demand and confined to the spec's folder."""

    def __init__(
        self,
        root: Mapping[str, Any],
        *,
        root_key: str = "",
        base_dir: Path | None = None,
        allow_external_refs: bool = False,
        parse_file: Callable[[Path], Any] | None = None,
    ) -> None:
        self.root_key = root_key
        self._docs: dict[str, Any] = {root_key: root}
        self._base = base_dir.resolve() if base_dir is not None else None
        self.allow_external = allow_external_refs
        self._parse_file = parse_file
        self.files_read = 0
        self.where = ""

    @property
    def base_dir(self) -> Path | None:
        return self._base

    def document(self, key: str) -> Any:
        return self._docs[key]

    # ----------------------------------------------------------- locating
    def locate(self, ref: str, doc: str) -> RefKey:
        """Turn a ``$ref`` string seen inside document ``doc`` into a key (loads the file if needed)."""
        file_part, _, fragment = ref.partition("#")
        if not file_part:
            return (doc, fragment)
        return (self._external(ref, file_part, doc), fragment)

    def _refuse(self, ref: str, reason: str) -> RefError:
        return RefError(ref, reason, where=self.where)

    def _external(self, ref: str, file_part: str, doc: str) -> str:
        if _SCHEME.match(file_part) or file_part.startswith("//"):
            raise self._refuse(ref, "remote references are not allowed (only relative file paths)")
        if not self.allow_external:
            raise self._refuse(ref, "external references are disabled (allow_external_refs=False)")
        if self._base is None:
            raise self._refuse(ref, "external references need a spec loaded from a file")
        rel = unquote(file_part)
        if "\x00" in rel:
            raise self._refuse(ref, "invalid file name")
        if rel.startswith(("/", "\\")) or Path(rel).is_absolute():
            raise self._refuse(ref, "absolute paths are not allowed; only files next to the spec may be referenced")
        current = Path(doc).parent if doc else Path(".")
        lexical = Path(os.path.normpath(self._base / current / rel))
        if not _inside(lexical, self._base):
            raise self._refuse(ref, "only files next to the spec (its folder or below) may be referenced")
        target = lexical.resolve()
        if not _inside(target, self._base):
            raise self._refuse(ref, "only files next to the spec may be referenced (a symlink leads outside)")
        key = target.relative_to(self._base).as_posix()
        if key not in self._docs:
            if self._parse_file is None or not target.is_file():
                raise self._refuse(ref, f"file {key!r} not found next to the spec")
            try:
                self._docs[key] = self._parse_file(target)
            except SpecLoadError as exc:
                raise self._refuse(ref, str(exc)) from exc
            self.files_read += 1
        return key

    def lookup(self, key: RefKey, ref: str) -> Any:
        try:
            return lookup_pointer(self._docs[key[0]], key[1])
        except KeyError as exc:
            raise self._refuse(ref, f"no such element {exc}") from None

    def deref(self, node: Any, doc: str) -> tuple[Any, str]:
        """Follow a chain of ``$ref`` for a non-schema object (path item, operation, parameter...).

        Sibling keys of a ``$ref`` (3.1 ``summary``/``description``) override the target's.
        Returns the object and the key of the document it lives in.
        """
        siblings: dict[str, Any] = {}
        seen: set[RefKey] = set()
        while isinstance(node, Mapping) and isinstance(node.get("$ref"), str):
            ref = node["$ref"]
            for k, v in node.items():
                if k != "$ref":
                    siblings.setdefault(k, v)
            key = self.locate(ref, doc)
            if key in seen or len(seen) > MAX_REF_HOPS:
                raise self._refuse(ref, "reference loop")
            seen.add(key)
            node = self.lookup(key, ref)
            doc = key[0]
        if siblings and isinstance(node, Mapping):
            merged = dict(node)
            merged.update(siblings)
            return merged, doc
        return node, doc


def _inside(path: Path, root: Path) -> bool:
    try:
        path.relative_to(root)
    except ValueError:
        return False
    return True
