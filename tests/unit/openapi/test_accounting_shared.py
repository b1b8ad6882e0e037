"""Nothing is dropped silently: declared inputs + listed omissions == the spec's own inputs, per operation.

``accounting_mismatches`` is run over every shared spec by test_coverage_shared.py
(one load per spec). For every translated operation, the spec's inputs are
read *independently of scopegate's loader* (PyYAML/json and a few lines
that follow ``$ref`` relative to the referring file): the path-level and operation-level
parameters by ``(in, name)``, and the request body's top-level properties
(through ``allOf``, and the union of object ``oneOf``/``anyOf`` variants),
or the body as a whole when it is not an object with named properties. The
declaration's arguments (mapped back to their original names) plus the
binding's listed omissions must be exactly that set.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import yaml

from scopegate.openapi.inventory import inventory
from scopegate.openapi.loader import load_document
from scopegate.openapi.model import ToolBinding

Unit = tuple[str, str]
_OAS3_LOCATIONS = {"path", "query", "header", "cookie"}
_BODY_METHODS = {"post", "put", "patch"}
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class RawSpec:
    """The spec's files as plain data, with ``$ref`` followed relative to the file it appears in."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._files: dict[Path, Any] = {}

    def file(self, path: Path) -> Any:
        path = path.resolve()
        if path not in self._files:
            text = path.read_bytes()
            self._files[path] = json.loads(text) if path.suffix == ".json" else yaml.load(text, Loader=_Loader)
        return self._files[path]

    def deref(self, node: Any, where: Path) -> tuple[Any, Path]:
        for _ in range(50):
            if not (isinstance(node, dict) and isinstance(node.get("$ref"), str)):
                return node, where
            file_part, _, pointer = node["$ref"].partition("#")
            if file_part:
                where = (where.parent / unquote(file_part)).resolve()
            node = self.file(where)
            for token in [t for t in pointer.split("/") if t]:
                token = unquote(token).replace("~1", "/").replace("~0", "~")
                node = node[int(token)] if isinstance(node, list) else node.get(token, node.get(_int(token)))
        raise AssertionError("ref loop")


def _int(token: str) -> Any:
    return int(token) if token.isdigit() else token


def _object_props(raw: RawSpec, node: Any, where: Path, depth: int = 0) -> set[str] | None:
    """Top-level property names of a body schema, or None when it is not an object with named properties."""
    node, where = raw.deref(node, where)
    if not isinstance(node, dict) or depth > 20:
        return None
    names: set[str] = set()
    is_object = node.get("type") in ("object", ["object", "null"], ["null", "object"])
    props = node.get("properties")
    if isinstance(props, dict) and len(props) == 1 and isinstance(props.get("$ref"), str):
        props = raw.deref(props, where)[0]  # the map itself by $ref (DigitalOcean load balancers)
    if isinstance(props, dict):
        names |= {str(k) for k, v in props.items() if v is not False}
        is_object = True
    for part in node.get("allOf") or []:
        found = _object_props(raw, part, where, depth + 1)
        if found is not None:
            names |= found
            is_object = True
    for key in ("oneOf", "anyOf"):
        variants = [
            v for v in node.get(key) or [] if not _is_null(raw.deref(v, where)[0]) and _shapes(raw.deref(v, where)[0])
        ]
        if variants:
            found_all = [_object_props(raw, v, where, depth + 1) for v in variants]
            if any(f is None for f in found_all):
                return None
            for f in found_all:
                names |= f or set()
            is_object = True
    return names if is_object else None


def _shapes(node: Any) -> bool:
    """A union member that declares a shape (not only ``required``/``not`` constraints)."""
    return isinstance(node, dict) and bool(set(node) - {"required", "title", "description", "not", "minProperties"})


def _is_null(node: Any) -> bool:
    return isinstance(node, dict) and node.get("type") in ("null", ["null"])


def _empty(raw: RawSpec, node: Any, where: Path, method: str, media: str) -> bool:
    """An object body that carries nothing (what the translator rightly does not declare)."""
    props = _object_props(raw, node, where)
    body, _ = raw.deref(node, where)
    if props or (props is None and body not in ({}, None)):
        return False
    extra = body.get("additionalProperties") if isinstance(body, dict) else None
    return extra is False or method not in _BODY_METHODS or media == "application/x-www-form-urlencoded"


def spec_units(raw: RawSpec, path: str, method: str, binding: ToolBinding, swagger2: bool) -> set[Unit]:
    top = raw.root
    item, iw = raw.deref(raw.file(top)["paths"][path], top)
    op, ow = raw.deref(item[method], iw)
    merged: dict[tuple[str, str], tuple[Any, Path]] = {}
    for owner, w in ((item, iw), (op, ow)):
        for entry in owner.get("parameters") or []:
            p, pw = raw.deref(entry, w)
            merged[(str(p["in"]), str(p["name"]))] = (p, pw)
    units: set[Unit] = set()
    form: set[str] = set()
    body: tuple[Any, Path] | None = None
    for (where, name), (p, pw) in merged.items():
        if swagger2 and where == "formData":
            form.add(name)
        elif swagger2 and where == "body":
            body = (p.get("schema", {}), pw)
            units.add(("body", "*"))
        elif where in _OAS3_LOCATIONS:
            units.add((where, name))
        else:
            units.add(("parameter", name))
    if form:
        return units | {("body", n) for n in form}
    media = binding.body_media_type
    if not swagger2 and "requestBody" in op:
        rb, rw = raw.deref(op["requestBody"], ow)
        content = rb.get("content") or {}
        chosen = media if media is not None else next(iter(content), None)
        if chosen is not None:
            body = ((content[chosen] or {}).get("schema", {}), rw)
            units.add(("body", "*"))
    if body is not None:
        if _empty(raw, body[0], body[1], method, media or ""):
            units.discard(("body", "*"))
        else:
            props = _object_props(raw, body[0], body[1])
            if props and media is not None:
                units.discard(("body", "*"))
                units |= {("body", n) for n in props}
    return units


def declared_units(binding: ToolBinding) -> tuple[set[Unit], set[Unit]]:
    declared: set[Unit] = set()
    for a in binding.arguments:
        if a.location == "body_property":
            declared.add(("body", a.original_name or ""))
        elif a.location == "body":
            declared.add(("body", "*"))
        else:
            declared.add((a.location, a.original_name or ""))
    omitted: set[Unit] = set()
    for o in binding.omitted:
        if o.reason in ("undefined_security_scheme", "duplicate_parameter", "contradictory_schema"):
            continue  # not an input of the operation: a report on the spec
        if o.location == "body_property":
            omitted.add(("body", o.name))
        elif o.location == "body":
            omitted.add(("body", "*"))
        else:
            omitted.add((o.location, o.name))
    return declared, omitted


def accounting_mismatches(path: Path, doc: Any, rows: Any) -> dict[str, str]:
    """Operation label -> what differs between (declared + omitted) and the spec's own inputs."""
    raw = RawSpec(path)
    mismatches: dict[str, str] = {}
    for row in rows:
        if row.declaration is None:
            continue
        binding = row.declaration.binding
        declared, omitted = declared_units(binding)
        expected = spec_units(raw, row.info.path, row.info.method.lower(), binding, doc.dialect == "swagger2")
        if declared & omitted:
            mismatches[row.info.label] = f"both declared and omitted: {sorted(declared & omitted)}"
        elif declared | omitted != expected:
            missing, extra = sorted(expected - declared - omitted), sorted((declared | omitted) - expected)
            mismatches[row.info.label] = f"silently dropped {missing}; not in the spec {extra}"
    return mismatches


def test_accounting_catches_a_silent_drop(tmp_path: Path) -> None:
    """The check itself: a binding that loses a parameter without listing it is reported."""
    spec = {
        "openapi": "3.0.3",
        "info": {"title": "t", "version": "1"},
        "paths": {
            "/a": {
                "get": {
                    "operationId": "a",
                    "parameters": [
                        {"name": "q", "in": "query", "schema": {"type": "string"}},
                        {"name": "r", "in": "query", "schema": {"type": "string"}},
                    ],
                    "responses": {},
                }
            }
        },
    }
    path = tmp_path / "s.json"
    path.write_text(json.dumps(spec), "utf-8")
    doc = load_document(path)
    rows = inventory(doc).rows
    assert accounting_mismatches(path, doc, rows) == {}
    decl = rows[0].declaration
    assert decl is not None
    lossy = replace(decl, binding=replace(decl.binding, arguments=decl.binding.arguments[:1]))
    assert accounting_mismatches(path, doc, [replace(rows[0], declaration=lossy)]) == {
        "a": "silently dropped [('query', 'r')]; not in the spec []"
    }
