"""Translation defects found on real specs (issue 11.3, 21.2): each test fails on the wave-1 translator."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from scopegate.cli.core import ExitCode
from scopegate.openapi.errors import TranslationError
from scopegate.openapi.loader import load_document
from scopegate.openapi.runtime.request import ArgumentsInvalid, RequestBuilder
from scopegate.openapi.select import Selection, select_operations
from scopegate.openapi.simplify import Simplifier
from scopegate.openapi.text import bound_text, plain_text
from scopegate.openapi.translate import ToolDeclaration, TranslateOptions, translate

EXIT_OK, EXIT_CONFIG = ExitCode.OK, ExitCode.USAGE

BASE = "https://api.example.test"


def spec(paths: dict[str, Any], schemas: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "openapi": "3.0.3",
        "info": {"title": "t", "version": "1"},
        "servers": [{"url": BASE}],
        "paths": paths,
        "components": {"schemas": schemas or {}, **extra},
    }


def tool(s: dict[str, Any], op_id: str | None = None, **opts: Any) -> ToolDeclaration:
    doc = load_document(s)
    infos = [i for i in doc.infos() if op_id in (None, i.operation_id)]
    return translate(doc, infos, TranslateOptions(**opts)).tools[0]


def body_spec(method: str, schema: dict[str, Any], media: str = "application/json", **schemas: Any) -> dict[str, Any]:
    return spec(
        {
            "/x": {
                method: {"operationId": "op", "requestBody": {"content": {media: {"schema": schema}}}, "responses": {}}
            }
        },
        schemas,
    )


# ---------------------------------------------------------------- credentials
def test_required_path_parameter_named_like_a_credential_is_kept() -> None:
    s = spec(
        {
            "/invites/{token}": {
                "get": {
                    "operationId": "getInvite",
                    "parameters": [{"name": "token", "in": "path", "required": True, "schema": {"type": "string"}}],
                    "responses": {},
                }
            }
        }
    )
    t = tool(s)
    assert t.parameters["required"] == ["token"]
    assert t.binding.argument("token").sensitive
    assert RequestBuilder(t.binding, BASE).build({"token": "abc"}).path == "/invites/abc"


def test_credentials_are_what_the_security_schemes_say() -> None:
    s = spec(
        {
            "/x": {
                "post": {
                    "operationId": "op",
                    "parameters": [
                        {"name": "X-Api-Key", "in": "header", "schema": {"type": "string"}},
                        {"name": "X-Session-Token", "in": "header", "schema": {"type": "string"}},
                        {"name": "Cookie", "in": "header", "schema": {"type": "string"}},
                    ],
                    "requestBody": {
                        "content": {
                            "application/json": {
                                "schema": {
                                    "type": "object",
                                    "properties": {
                                        "client_secret": {"type": "string"},
                                        "password": {"type": "string", "format": "password"},
                                        "name": {"type": "string"},
                                    },
                                }
                            }
                        }
                    },
                    "responses": {},
                }
            }
        },
        securitySchemes={"key": {"type": "apiKey", "in": "header", "name": "X-API-KEY"}},
    )
    t = tool(s)
    assert list(t.parameters["properties"]) == ["X_Session_Token", "client_secret", "password", "name"]
    sensitive = {a.argument for a in t.binding.arguments if a.sensitive}
    assert sensitive == {"X_Session_Token", "client_secret", "password"}
    assert {(o.name, o.reason, o.detail) for o in t.binding.omitted} == {
        ("X-Api-Key", "credential", "security scheme 'key'"),
        ("Cookie", "forbidden_header", "a model may never set this header"),
    }
    req = RequestBuilder(t.binding, BASE).build({"X_Session_Token": "sess-123", "client_secret": "s3", "name": "n"})
    shown = json.dumps(req.describe())
    assert "sess-123" not in shown and '"***"' in shown


def test_sensitive_values_are_masked_in_logs_and_confirmations(caplog: pytest.LogCaptureFixture) -> None:
    import httpx

    from scopegate.openapi.runtime.config import OperationPolicy, ToolsetSettings
    from scopegate.openapi.runtime.sensitive import MASK
    from scopegate.openapi.runtime.tool import OperationTool, ToolRuntime, _CallInfo

    s = body_spec("post", {"type": "object", "properties": {"client_secret": {"type": "string"}}})
    t = tool(s)
    settings = ToolsetSettings(spec=s, allow=("op",), log_argument_values=True)
    runtime = ToolRuntime(httpx.AsyncClient(), settings, {}, {})
    op_tool = OperationTool(t, runtime, OperationPolicy(), BASE)
    args = {"client_secret": "hunter2-secret"}
    assert "hunter2" not in json.dumps(op_tool.confirmation_payload(args))
    assert "hunter2" not in op_tool.confirmation_hint(args)
    fields = op_tool._log(args, {"status": "ok"}, _CallInfo())
    assert fields["argument_values"] == {"client_secret": MASK}


# ---------------------------------------------------------------- bodies
def test_all_of_with_additional_properties_false_validates_the_merged_body() -> None:
    s = body_spec(
        "post",
        {"allOf": [{"$ref": "#/components/schemas/Base"}, {"properties": {"size": {"type": "string"}}}]},
        Base={"type": "object", "additionalProperties": False, "properties": {"name": {"type": "string"}}},
    )
    t = tool(s)
    assert set(t.parameters["properties"]) == {"name", "size"}
    b = RequestBuilder(t.binding, BASE)
    assert json.loads(b.build({"name": "n", "size": "s-1"}).body or b"") == {"name": "n", "size": "s-1"}
    with pytest.raises(ArgumentsInvalid):  # the constraint still holds for the merged set
        b.build({"name": "n", "size": 3})


def test_read_only_through_an_all_of_override_is_honoured() -> None:
    s = body_spec(
        "put",
        {
            "allOf": [
                {"$ref": "#/components/schemas/Volume"},
                {"properties": {"size": {"readOnly": True}}, "required": ["size"]},
            ]
        },
        Volume={"type": "object", "properties": {"name": {"type": "string"}, "size": {"type": "integer"}}},
    )
    t = tool(s)
    assert list(t.parameters["properties"]) == ["name"]
    assert [(o.name, o.reason) for o in t.binding.omitted] == [("size", "read_only")]
    req = RequestBuilder(t.binding, BASE).build({"name": "v"})  # size is required, but read-only: not asked for
    assert json.loads(req.body or b"") == {"name": "v"}


def test_required_beside_a_union_whose_variants_make_it_read_only() -> None:
    """Cloudflare's DNS record: ``required: [id, type, ...]`` beside a oneOf whose variants' allOf parts mark
    ``id`` readOnly. Every create/update was refused with ``body.id: is required``."""
    base = {"type": "object", "properties": {"id": {"type": "string", "readOnly": True}, "ttl": {"type": "integer"}}}
    variant = {
        "allOf": [
            {"properties": {"type": {"type": "string", "enum": ["A"]}, "content": {"type": "string"}}},
            {"$ref": "#/components/schemas/Base"},
        ],
        "required": ["type", "content"],
    }
    s = body_spec(
        "post",
        {"$ref": "#/components/schemas/Record"},
        Base=base,
        A=variant,
        Record={"oneOf": [{"$ref": "#/components/schemas/A"}], "required": ["id", "type", "content"], "type": "object"},
    )
    t = tool(s)
    assert "id" not in t.parameters["properties"]
    req = RequestBuilder(t.binding, BASE).build({"type": "A", "content": "198.51.100.4"})
    assert json.loads(req.body or b"") == {"type": "A", "content": "198.51.100.4"}
    with pytest.raises(ArgumentsInvalid):  # what is not readOnly stays required
        RequestBuilder(t.binding, BASE).build({"type": "A"})


@pytest.mark.parametrize("method", ["get", "delete"])
def test_empty_form_body_on_get_and_delete_is_not_an_argument(method: str) -> None:
    empty = {"type": "object", "properties": {}, "additionalProperties": False}
    t = tool(body_spec(method, empty, "application/x-www-form-urlencoded"))
    assert t.parameters == {"type": "object", "properties": {}}
    assert t.binding.body_media_type is None
    req = RequestBuilder(t.binding, BASE).build({})
    assert req.body is None and req.content_type is None


def test_descriptions_become_plain_text_within_the_bound() -> None:
    html_desc = (
        "<p>Creates a <strong>charge</strong>. See <a href='https://x.test/docs'>the docs</a> &amp; "
        "<code>expand[]</code>.</p><ul><li>one</li><li>two</li></ul><!-- hidden --><script>x()</script>"
    )
    assert plain_text(html_desc) == "Creates a charge. See the docs & expand[].\n\n- one\n- two"
    assert plain_text("Use [the API](https://a.test/x_(y)) **now**, a < b > c") == "Use the API now, a < b > c"
    s = spec(
        {"/x": {"get": {"operationId": "op", "summary": "<b>List</b>", "description": html_desc, "responses": {}}}}
    )
    t = tool(s, max_tool_description=40)
    assert "<" not in t.description and len(t.description) <= 40
    assert bound_text(html_desc, 20).endswith("…")


# ---------------------------------------------------------------- selection
def _deprecated_spec() -> dict[str, Any]:
    return spec(
        {
            "/a": {"get": {"operationId": "old", "deprecated": True, "responses": {}}},
            "/b": {"get": {"operationId": "new", "responses": {}}},
        }
    )


def test_include_deprecated(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from scopegate.cli import main

    s = _deprecated_spec()
    doc = load_document(s)
    rule = Selection.build(include=["GET /**"])
    assert [i.operation_id for i in select_operations(doc.infos(), rule)] == ["new"]
    with_old = Selection.build(include=["GET /**"], include_deprecated=True)
    assert [i.operation_id for i in select_operations(doc.infos(), with_old)] == ["old", "new"]
    path = tmp_path / "s.json"
    path.write_text(json.dumps(s), "utf-8")
    assert main(["openapi", "declarations", str(path), "--include", "GET /**", "--include-deprecated"]) == EXIT_OK
    assert [t["operation"] for t in json.loads(capsys.readouterr().out)["tools"]] == ["new", "old"]


def test_toolset_settings_include_rules_and_deprecated() -> None:
    from scopegate.openapi.runtime import OperationToolset, ToolsetSettings

    s = _deprecated_spec()
    plain = OperationToolset(ToolsetSettings(spec=s, allow=(), include=("GET /**",)))
    assert [t.operation.operation_id for t in plain.tools] == ["new"]
    both = OperationToolset(ToolsetSettings(spec=s, allow=(), include=("GET /**",), include_deprecated=True))
    assert [t.operation.operation_id for t in both.tools] == ["old", "new"]


# ---------------------------------------------------------------- strict
def test_strict_fails_on_an_unsupported_construct_and_names_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    from scopegate.cli import main
    from scopegate.openapi.runtime import OperationToolset, ToolsetSettings

    s = spec(
        {
            "/x": {
                "get": {
                    "operationId": "op",
                    "parameters": [
                        {"name": "q", "in": "query", "schema": {"type": "string"}},
                        {"name": "f", "in": "query", "style": "matrix", "schema": {"type": "string"}},
                    ],
                    "responses": {},
                }
            }
        }
    )
    assert list(tool(s).parameters["properties"]) == ["q"]
    with pytest.raises(TranslationError, match=r"strict.*query 'f': unsupported_parameter"):
        tool(s, strict=True)
    with pytest.raises(TranslationError, match="'f'"):
        OperationToolset(ToolsetSettings(spec=s, allow=("op",), strict=True))
    with caplog.at_level(logging.WARNING, logger="scopegate.openapi"):
        OperationToolset(ToolsetSettings(spec=s, allow=("op",)))
    assert "does not carry: query 'f' (unsupported_parameter)" in caplog.text
    path = tmp_path / "s.json"
    path.write_text(json.dumps(s), "utf-8")
    assert main(["openapi", "inventory", str(path)]) == EXIT_OK
    out = capsys.readouterr().out
    assert "not carried: query 'f' (unsupported_parameter: style 'matrix'" in out
    assert main(["openapi", "inventory", str(path), "--strict"]) == EXIT_CONFIG
    assert main(["openapi", "declarations", str(path), "--allow", "op", "--strict"]) == EXIT_CONFIG
    assert "query 'f': unsupported_parameter" in capsys.readouterr().err


# ---------------------------------------------------------------- simplifier
def test_union_of_objects_whose_property_types_are_lists() -> None:
    """DigitalOcean dropletActions_post: a property typed ["string","null"] in one variant, "integer" in another."""
    schema = {
        "oneOf": [
            {"type": "object", "properties": {"type": {"enum": ["a"]}, "v": {"type": ["string", "integer"]}}},
            {"type": "object", "properties": {"type": {"enum": ["b"]}, "v": {"type": "integer"}}},
        ],
        "discriminator": {"propertyName": "type"},
    }
    out = Simplifier().run(schema)
    assert out["properties"]["v"]["anyOf"] == [{"type": ["string", "integer"]}, {"type": "integer"}]


def test_required_only_variants_are_a_constraint_not_a_union() -> None:
    """anyOf [{required: [name]}, {required: [company]}] (Lob addresses): one object, with a note."""
    schema = {
        "type": "object",
        "properties": {"name": {"type": "string"}, "company": {"type": "string"}},
        "anyOf": [{"required": ["name"]}, {"required": ["company"]}],
    }
    out = Simplifier().run(schema)
    assert set(out["properties"]) == {"name", "company"}
    assert "At least one of: name | company." in out["description"]


def test_nested_unions_inside_variants_keep_their_properties() -> None:
    """A variant that is itself a oneOf (Cloudflare workers-ai): its members' properties are not lost."""
    schema = {
        "oneOf": [
            {"type": "object", "properties": {"text": {"type": "string"}}},
            {"type": "object", "oneOf": [{"properties": {"audio": {"type": "string"}}}, {"properties": {"img": {}}}]},
        ]
    }
    out = Simplifier().run(schema)
    assert set(out["properties"]) == {"text", "audio", "img"}


def test_single_variant_keeps_the_properties_around_it() -> None:
    """allOf [{properties: a}, {oneOf: [{properties: b}]}] (Cloudflare deployments): both a and b."""
    schema = {
        "allOf": [
            {"type": "object", "properties": {"annotations": {"type": "object"}}},
            {"oneOf": [{"type": "object", "properties": {"strategy": {"type": "string"}}}]},
        ]
    }
    assert set(Simplifier().run(schema)["properties"]) == {"annotations", "strategy"}
