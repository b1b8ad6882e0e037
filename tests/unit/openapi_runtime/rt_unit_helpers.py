"""Build real ToolBindings (via the real loader + translator) from small inline specs."""

from __future__ import annotations

from typing import Any

from scopegate.openapi.loader import load_document
from scopegate.openapi.model import ToolBinding
from scopegate.openapi.runtime.request import RequestBuilder
from scopegate.openapi.translate import translate


def spec_with(path: str, method: str, operation: dict[str, Any], **components: Any) -> dict[str, Any]:
    return {
        "openapi": "3.0.3",
        "info": {"title": "t", "version": "1"},
        "servers": [{"url": "https://api.example.test/v1"}],
        "paths": {path: {method: {"responses": {"200": {"description": "ok"}}, **operation}}},
        "components": components,
    }


def binding(spec: dict[str, Any], operation_id: str) -> ToolBinding:
    doc = load_document(spec)
    infos = [i for i in doc.infos() if i.operation_id == operation_id]
    return translate(doc, infos).tools[0].binding


def builder(spec: dict[str, Any], operation_id: str, base_url: str = "https://api.example.test/v1") -> RequestBuilder:
    return RequestBuilder(binding(spec, operation_id), base_url)


def param(name: str, where: str, schema: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "in": where,
        "required": where == "path" or extra.pop("required", False),
        "schema": schema,
        **extra,
    }
