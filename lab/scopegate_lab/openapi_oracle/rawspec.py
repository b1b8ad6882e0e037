"""A spec's files as plain data, with ``$ref`` followed relative to the file it appears in.

Written independently of scopegate's loader (PyYAML/json and a few lines of
pointer walking), so that checks built on it do not share the loader's
mistakes. Every node is located by ``(file, JSON pointer)``, which is what a
``referencing`` registry needs to validate with the original schemas.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

import yaml

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


@dataclass(frozen=True)
class Node:
    """A value and where it is: ``file`` (absolute path, or None for an in-memory root) and ``pointer``."""

    value: Any
    file: Path | None
    pointer: str

    def child(self, key: str | int) -> Node:
        v = self.value[int(key)] if isinstance(self.value, list) else self.value.get(key)
        return Node(v, self.file, f"{self.pointer}/{escape(str(key))}")

    def get(self, key: str, default: Any = None) -> Any:
        return self.value.get(key, default) if isinstance(self.value, dict) else default

    def __contains__(self, key: str) -> bool:
        return isinstance(self.value, dict) and key in self.value

    @property
    def uri(self) -> str:
        base = self.file.as_uri() if self.file is not None else "urn:scopegate-oracle:root"
        return f"{base}#{quote(self.pointer, safe='/~')}"


class RawSpec:
    """Follows refs through the files of one spec (root given as a path or as a parsed mapping)."""

    def __init__(self, root: Path | dict[str, Any]) -> None:
        self._files: dict[Path | None, Any] = {}
        self._schema_files: dict[Path, Any] = {}
        if isinstance(root, Path):
            self.root_file: Path | None = root.resolve()
        else:
            self.root_file = None
            self._files[None] = root

    def file(self, path: Path | None) -> Any:
        if path is None:
            return self._files[None]
        path = path.resolve()
        if path not in self._files:
            text = path.read_bytes()
            self._files[path] = json.loads(text) if path.suffix == ".json" else yaml.load(text, Loader=_Loader)
        return self._files[path]

    def schema_file(self, path: Path) -> Any:
        """A file as JSON Schema tools can read it: ``properties: {$ref: "…"}`` (the map itself by reference,
        DigitalOcean) inlined with its refs made absolute. JSON Schema reads that ``$ref`` as a property named
        "$ref" whose schema is a string, and referencing's crawler (openapi-core's too) crashes on it."""
        path = path.resolve()
        if path not in self._schema_files:
            self._schema_files[path] = _inline_property_maps(self, self.file(path), path)
        return self._schema_files[path]

    @property
    def root(self) -> Node:
        return Node(self.file(self.root_file), self.root_file, "")

    def lookup(self, file: Path | None, pointer: str) -> Node:
        node = self.file(file)
        for raw in [t for t in pointer.split("/") if t != ""]:
            token = unquote(raw).replace("~1", "/").replace("~0", "~")
            if isinstance(node, list):
                node = node[int(token)]
            elif token in node:
                node = node[token]
            else:
                node = node[int(token)]
        return Node(node, file, pointer)

    def deref(self, node: Node) -> Node:
        for _ in range(64):
            ref = node.get("$ref")
            if not isinstance(ref, str):
                return node
            file_part, _, pointer = ref.partition("#")
            file = node.file
            if file_part:
                if file is None:
                    raise ValueError(f"external ref {ref!r} in an in-memory spec")
                file = (file.parent / unquote(file_part)).resolve()
            node = self.lookup(file, pointer)
        raise ValueError("reference loop")


def _inline_property_maps(raw: RawSpec, node: Any, file: Path) -> Any:
    """A copy of ``node`` with every ``properties: {$ref: "…"}`` (the map itself by reference, DigitalOcean) inlined,
    its refs made absolute: JSON Schema reads ``$ref`` there as a property named "$ref" (and referencing crashes)."""
    if isinstance(node, list):
        return [_inline_property_maps(raw, v, file) for v in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for key, value in node.items():
        if key == "properties" and isinstance(value, dict) and len(value) == 1 and isinstance(value.get("$ref"), str):
            target = raw.deref(Node(value, file, ""))
            assert target.file is not None
            value = _absolute_refs(target.value, target.file)
        out[key] = _inline_property_maps(raw, value, file)
    return out


def _absolute_refs(node: Any, file: Path) -> Any:
    if isinstance(node, list):
        return [_absolute_refs(v, file) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: _absolute_refs(v, file) for k, v in node.items()}
    ref = node.get("$ref")
    if isinstance(ref, str) and "://" not in ref:
        file_part, _, pointer = ref.partition("#")
        target = (file.parent / unquote(file_part)).resolve() if file_part else file
        out["$ref"] = f"{target.as_uri()}#{pointer}"
    return out
