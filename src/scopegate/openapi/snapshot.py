"""Stable, reviewable JSON of a set of tool declarations, and a contract check against it.

The snapshot holds what the model is told (name, description, parameters) and
how each argument maps back to the request. ``check`` compares only the
``tools`` part, so bumping ``info.version`` alone does not fail a build.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scopegate.openapi.errors import OpenAPIError
from scopegate.openapi.translate import Translation

SNAPSHOT_FORMAT = 1


def snapshot_document(translation: Translation, *, title: str = "", version: str = "") -> dict[str, Any]:
    return {
        "format": SNAPSHOT_FORMAT,
        "spec": {"title": title, "version": version},
        "tools": sorted((t.to_dict() for t in translation.tools), key=lambda t: str(t["name"])),
    }


def dumps(document: Any) -> str:
    """Sorted, indented JSON with a trailing newline: byte-identical for identical input."""
    return json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def _tools(document: Any) -> dict[str, dict[str, Any]]:
    tools = document.get("tools") if isinstance(document, dict) else None
    if not isinstance(tools, list):
        raise OpenAPIError("snapshot has no 'tools' list")
    return {str(t.get("name")): t for t in tools if isinstance(t, dict)}


def summarize_changes(old: Any, new: Any) -> list[str]:
    """Human summary: tools added/removed, arguments added/removed/changed, descriptions changed."""
    before, after = _tools(old), _tools(new)
    lines: list[str] = []
    for name in sorted(before.keys() - after.keys()):
        lines.append(f"tool removed: {name} ({before[name].get('operation')})")
    for name in sorted(after.keys() - before.keys()):
        lines.append(f"tool added: {name} ({after[name].get('operation')})")
    for name in sorted(before.keys() & after.keys()):
        a, b = before[name], after[name]
        if a == b:
            continue
        pa = (a.get("parameters") or {}).get("properties") or {}
        pb = (b.get("parameters") or {}).get("properties") or {}
        for arg in sorted(pa.keys() - pb.keys()):
            lines.append(f"{name}: argument removed: {arg}")
        for arg in sorted(pb.keys() - pa.keys()):
            lines.append(f"{name}: argument added: {arg}")
        for arg in sorted(pa.keys() & pb.keys()):
            if pa[arg] != pb[arg]:
                lines.append(f"{name}: argument changed: {arg}")
        ra = (a.get("parameters") or {}).get("required") or []
        rb = (b.get("parameters") or {}).get("required") or []
        if sorted(ra) != sorted(rb):
            lines.append(f"{name}: required arguments changed: {sorted(ra)} -> {sorted(rb)}")
        for key in ("description", "method", "path", "operation", "arguments", "body_media_type", "omitted"):
            if a.get(key) != b.get(key):
                lines.append(f"{name}: {key} changed")
    return lines


@dataclass(frozen=True)
class CheckResult:
    ok: bool
    summary: tuple[str, ...]
    diff: str


def check(snapshot_text: str, document: dict[str, Any], *, snapshot_name: str = "snapshot") -> CheckResult:
    """Compare a stored snapshot with freshly built declarations."""
    try:
        stored = json.loads(snapshot_text)
    except ValueError as exc:
        raise OpenAPIError(f"{snapshot_name}: not valid JSON: {exc}") from None
    if _tools(stored) == _tools(document):
        return CheckResult(True, (), "")
    old_text = dumps({"tools": stored.get("tools")}).splitlines(keepends=True)
    new_text = dumps({"tools": document.get("tools")}).splitlines(keepends=True)
    diff = "".join(difflib.unified_diff(old_text, new_text, fromfile=snapshot_name, tofile="current spec", n=3))
    return CheckResult(False, tuple(summarize_changes(stored, document)), diff)


def check_file(path: Path, document: dict[str, Any]) -> CheckResult:
    try:
        text = path.read_text("utf-8")
    except OSError as exc:
        raise OpenAPIError(f"cannot read snapshot {path}: {exc.strerror or exc}") from None
    return check(text, document, snapshot_name=str(path))
