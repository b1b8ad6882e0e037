"""Find the OpenAPI/Swagger *documents* in a folder, by content, not by file name.

A multi-file spec is one root document plus fragments reached through
``$ref``; only the root has a top-level ``openapi:`` or ``swagger:`` field.
``find_documents`` returns the roots (sorted), so a folder of specs split over
thousands of fragments yields the few documents to load.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

SPEC_SUFFIXES = (".json", ".yaml", ".yml")
_YAML_TOP_LEVEL = re.compile(rb"^(?:openapi|swagger|['\"](?:openapi|swagger)['\"])[ \t]*:", re.M)
_JSON_KEY = re.compile(rb'"(?:openapi|swagger)"\s*:')


def is_openapi_document(path: Path) -> bool:
    """True when the file is a JSON or YAML document with a top-level ``openapi`` or ``swagger`` field."""
    try:
        data = path.read_bytes()
    except OSError:
        return False
    head = data.lstrip()[:1]
    if head == b"{":
        if not _JSON_KEY.search(data):
            return False
        try:
            root = json.loads(data)
        except ValueError:
            return False
        return isinstance(root, dict) and ("openapi" in root or "swagger" in root)
    # YAML: a top-level key starts in column 0 (block style, which is what specs use).
    return _YAML_TOP_LEVEL.search(data) is not None


def find_documents(folder: Path) -> list[Path]:
    """Every OpenAPI/Swagger document under ``folder`` (recursively), sorted."""
    if not folder.is_dir():
        return []
    return sorted(
        p for p in folder.rglob("*") if p.suffix.lower() in SPEC_SUFFIXES and p.is_file() and is_openapi_document(p)
    )
