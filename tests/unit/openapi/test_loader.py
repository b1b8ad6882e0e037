"""Loading: formats, dialects, $ref resolution, cycles, external refs, Swagger 2.0 conversion."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scopegate.errors import ConfigError
from scopegate.openapi.errors import RefError, SpecLoadError
from scopegate.openapi.loader import load_document, load_spec
from scopegate.openapi.model import FORM_URLENCODED, MULTIPART_FORM

MINI = {
    "openapi": "3.0.3",
    "info": {"title": "Mini", "version": "1"},
    "paths": {"/a": {"get": {"operationId": "getA", "responses": {"200": {"description": "ok"}}}}},
}


def _write(tmp_path: Path, name: str, data: object) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data) if not isinstance(data, str) else data, "utf-8")
    return path


def test_loads_yaml_from_path_string_bytes_and_mapping(tickets_path: Path) -> None:
    text = tickets_path.read_text("utf-8")
    docs = [
        load_document(tickets_path),
        load_document(str(tickets_path)),
        load_document(text),
        load_document(text.encode()),
    ]
    keys = [[i.key for i in d.infos()] for d in docs]
    assert all(k == keys[0] for k in keys)
    assert docs[0].dialect == "oas31"
    assert docs[0].title == "Tickets" and docs[0].version == "1.2.0"
    assert load_document(MINI).dialect == "oas30"


def test_operation_index_does_not_resolve_refs(tmp_path: Path) -> None:
    spec = {
        **MINI,
        "paths": {
            "/good": {"get": {"operationId": "good", "responses": {"200": {"description": "ok"}}}},
            "/bad": {
                "get": {
                    "operationId": "bad",
                    "parameters": [{"$ref": "#/components/parameters/Nope"}],
                    "responses": {"200": {"description": "ok"}},
                }
            },
            "/worse/{id}": {
                "get": {
                    "operationId": "worse",
                    "parameters": [{"name": "id", "in": "path", "schema": {"$ref": "#/components/schemas/Gone"}}],
                    "responses": {"200": {"description": "ok"}},
                }
            },
        },
    }
    doc = load_document(spec)
    assert [i.label for i in doc.infos()] == ["good", "bad", "worse"]
    assert doc.resolver.stats.resolved == 0
    assert doc.spec(doc.find("good")).operations[0].operation_id == "good"
    # An optional input whose $ref does not resolve is left out and listed, naming the ref...
    bad = doc.operation(doc.find("bad")[0])
    assert bad.parameters == ()
    assert [(o.location, o.reason) for o in bad.omitted] == [("parameter", "unresolvable_ref")]
    assert "#/components/parameters/Nope" in bad.omitted[0].detail
    # ...a required one fails the operation, naming the ref and the operation.
    with pytest.raises(RefError) as exc:
        doc.operation(doc.find("worse")[0])
    assert "#/components/schemas/Gone" in str(exc.value)
    assert "worse" in str(exc.value)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ("[1, 2]", "mapping"),
        ("title: nothing\n", "not an OpenAPI document"),
        ('{"swagger": "1.2", "paths": {}}', "unsupported swagger version"),
        ('{"openapi": "4.0.0", "paths": {}}', "unsupported openapi version"),
        ("openapi: 3.0.0\npaths: [\n", "not valid JSON or YAML"),
        ('{"openapi": "3.0.0", "paths": [1]}', "'paths' must be a mapping"),
    ],
)
def test_bad_specs_raise_config_errors(tmp_path: Path, data: str, message: str) -> None:
    path = _write(tmp_path, "bad.yaml", data)
    with pytest.raises(SpecLoadError) as exc:
        load_document(path)
    assert message in str(exc.value)
    assert isinstance(exc.value, ConfigError)


def test_missing_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(SpecLoadError, match="cannot read spec"):
        load_document(tmp_path / "absent.json")


def test_yaml_dates_stay_strings_and_status_codes_are_strings(tmp_path: Path) -> None:
    text = (
        "openapi: 3.0.0\ninfo: {title: t, version: 2020-01-01}\npaths:\n  /a:\n    get:\n"
        "      responses:\n        200: {description: ok}\n"
    )
    doc = load_document(_write(tmp_path, "d.yaml", text))
    assert doc.version == "2020-01-01"
    assert doc.spec().operations[0].responses == ()  # responses are resolved only on request
    op = doc.spec(with_responses=True).operations[0]
    assert [r.status for r in op.responses] == ["200"]
    assert op.operation_id is None and op.label == "GET /a"


def test_refs_params_merge_servers_and_security(tickets_path: Path) -> None:
    doc = load_document(tickets_path)
    spec = doc.spec()
    get = spec.operation("getTicket")
    params = {(p.location, p.name): p for p in get.parameters}
    assert params[("path", "ticket_id")].schema["pattern"] == "^T-[0-9]+$"
    assert params[("path", "ticket_id")].required is True
    # The operation-level parameter overrides the path-level one with the same (in, name).
    assert params[("query", "verbose")].description == "operation-level wins"
    assert len([p for p in get.parameters if p.name == "verbose"]) == 1
    assert get.servers[0].url == "https://{region}.tickets.example/v1"
    assert get.servers[0].default_url() == "https://eu.tickets.example/v1"
    assert spec.operation("updateTicket").servers[0].url == "https://write.tickets.example/v1"
    assert spec.operation("addContact").servers[0].url == "https://contacts.tickets.example"
    assert get.security == ({"apiKeyHeader": ()},)
    assert spec.operation("deleteTicket").security == ()
    schemes = spec.security_schemes
    assert schemes["apiKeyHeader"].location == "header" and schemes["apiKeyHeader"].name == "X-Api-Key"
    assert schemes["bearer"].type == "http" and schemes["bearer"].scheme == "bearer"
    assert spec.operation("deleteTicket").state_changing and not get.state_changing


def test_json_pointer_escapes(tickets_path: Path) -> None:
    op = load_document(tickets_path).spec().operation("getEscaped")
    assert op.parameters[0].schema == {"type": "string", "description": "escaped pointer target"}


def test_type_arrays_and_nullable_normalised_to_2020_12() -> None:
    spec = {
        **MINI,
        "paths": {
            "/a": {
                "get": {
                    "parameters": [
                        {
                            "name": "n",
                            "in": "query",
                            "schema": {
                                "type": "integer",
                                "nullable": True,
                                "minimum": 0,
                                "exclusiveMinimum": True,
                                "example": 3,
                            },
                        },
                        {"name": "e", "in": "query", "schema": {"type": "string", "enum": ["a"], "nullable": True}},
                    ],
                    "responses": {},
                }
            }
        },
    }
    params = load_spec(spec).operations[0].parameters
    assert params[0].schema == {"type": ["integer", "null"], "exclusiveMinimum": 0}
    assert params[1].schema == {"type": ["string", "null"], "enum": ["a", None]}


def test_ref_siblings_override_target() -> None:
    spec = {
        **MINI,
        "openapi": "3.1.0",
        "components": {"schemas": {"S": {"type": "string", "description": "target"}}},
        "paths": {
            "/a": {
                "get": {
                    "parameters": [
                        {"name": "s", "in": "query", "schema": {"$ref": "#/components/schemas/S", "description": "own"}}
                    ],
                    "responses": {},
                }
            }
        },
    }
    assert load_spec(spec).operations[0].parameters[0].schema == {"type": "string", "description": "own"}


def test_recursion_is_a_back_edge_into_defs(tickets_path: Path) -> None:
    doc = load_document(tickets_path)
    op = doc.spec(doc.find("putTree")).operations[0]
    schema = op.request_body.content[0].schema if op.request_body else {}
    assert schema["$ref"] == "#/$defs/Node"
    node = schema["$defs"]["Node"]
    assert node["description"] == "A tree node."
    assert node["properties"]["children"]["items"] == {"$ref": "#/$defs/Node"}
    json.dumps(schema)  # a finite, self-contained JSON Schema


@pytest.mark.parametrize("depth", [1, 2])
def test_cycles_terminate_with_recursive_placeholder(tickets_path: Path, depth: int) -> None:
    from scopegate.openapi.translate import translate

    doc = load_document(tickets_path, recursion_depth=depth)
    node = translate(doc, doc.find("putTree")).tools[0].parameters  # the body's properties are the arguments
    for _ in range(depth - 1):
        node = node["properties"]["children"]["items"]
        assert "properties" in node
    node = node["properties"]["children"]["items"]
    assert node["type"] == "object"
    assert "Recursive schema Node" in node["description"]
    assert "properties" not in node


def test_mutual_recursion_and_self_ref_loops() -> None:
    from scopegate.openapi.translate import translate

    spec = {
        **MINI,
        "components": {
            "schemas": {
                "A": {"type": "object", "properties": {"b": {"$ref": "#/components/schemas/B"}}},
                "B": {"type": "object", "properties": {"a": {"$ref": "#/components/schemas/A"}}},
                "Loop": {"$ref": "#/components/schemas/Loop"},
            }
        },
        "paths": {
            "/a": {
                "get": {
                    "parameters": [
                        {
                            "name": "x",
                            "in": "query",
                            "style": "deepObject",
                            "schema": {"$ref": "#/components/schemas/A"},
                        },
                        {"name": "y", "in": "query", "schema": {"$ref": "#/components/schemas/Loop"}},
                    ],
                    "responses": {},
                }
            }
        },
    }
    doc = load_document(spec)
    op = doc.spec().operations[0]
    a = op.parameters[0].schema
    assert a["$ref"] == "#/$defs/A" and a["$defs"]["A"]["properties"]["b"]["properties"]["a"] == {"$ref": "#/$defs/A"}
    # A schema that is nothing but a reference to itself means nothing: the input is left out, listed.
    assert [p.name for p in op.parameters] == ["x"]
    assert [(o.name, o.reason) for o in op.omitted] == [("y", "unresolvable_ref")]
    assert "reference loop" in op.omitted[0].detail
    declared = translate(doc).tools[0].parameters["properties"]
    assert "Recursive schema A" in declared["x"]["properties"]["b"]["properties"]["a"]["description"]


def test_unresolvable_ref_names_ref_and_operation() -> None:
    spec = {
        **MINI,
        "paths": {
            "/a/{x}": {
                "get": {
                    "operationId": "getA",
                    "parameters": [
                        {
                            "name": "x",
                            "in": "path",
                            "required": True,
                            "schema": {"$ref": "#/components/schemas/Missing"},
                        }
                    ],
                    "responses": {},
                }
            }
        },
    }
    with pytest.raises(RefError) as exc:
        load_spec(spec)
    assert exc.value.ref == "#/components/schemas/Missing"
    assert exc.value.where == "getA"


def _external_spec(ref: str) -> dict[str, object]:
    return {
        **MINI,
        "paths": {
            "/a/{x}": {
                "get": {
                    "operationId": "getA",
                    "parameters": [{"name": "x", "in": "path", "required": True, "schema": {"$ref": ref}}],
                    "responses": {},
                }
            }
        },
    }


def test_external_refs_only_when_allowed_and_only_next_to_the_spec(tmp_path: Path) -> None:
    (tmp_path / "defs").mkdir()
    _write(
        tmp_path / "defs",
        "common.yaml",
        "Id:\n  type: string\n  description: from file\nWrapped:\n  $ref: '#/Id'\n",
    )
    path = _write(tmp_path, "spec.json", _external_spec("defs/common.yaml#/Wrapped"))
    with pytest.raises(RefError) as exc:
        load_spec(path)
    assert "defs/common.yaml#/Wrapped" in str(exc.value) and "disabled" in str(exc.value)
    schema = load_spec(path, allow_external_refs=True).operations[0].parameters[0].schema
    assert schema == {"type": "string", "description": "from file"}

    outside = tmp_path.parent / f"{tmp_path.name}-outside.yaml"
    outside.write_text("X: {type: string}\n", "utf-8")
    try:
        path2 = _write(tmp_path, "spec2.json", _external_spec(f"../{outside.name}#/X"))
        with pytest.raises(RefError, match="only files next to the spec"):
            load_spec(path2, allow_external_refs=True)
    finally:
        outside.unlink()
    path3 = _write(tmp_path, "spec3.json", _external_spec("https://evil.example/x.yaml#/X"))
    with pytest.raises(RefError, match="remote references are not allowed"):
        load_spec(path3, allow_external_refs=True)
    path4 = _write(tmp_path, "spec4.json", _external_spec("absent.yaml#/X"))
    with pytest.raises(RefError, match="not found"):
        load_spec(path4, allow_external_refs=True)
    # A spec given as a string has no folder, so even allowed external refs fail clearly.
    with pytest.raises(RefError, match="loaded from a file"):
        load_spec(json.dumps(_external_spec("defs/common.yaml#/Id")), allow_external_refs=True)


def test_swagger2_conversion(petstore2_path: Path) -> None:
    spec = load_spec(petstore2_path, with_responses=True)
    assert spec.dialect == "swagger2"
    assert [s.url for s in spec.servers] == ["https://pets.example/api", "http://pets.example/api"]
    assert spec.security_schemes["basicAuth"].type == "http"
    assert spec.security_schemes["basicAuth"].scheme == "basic"
    assert spec.security_schemes["oauth"].flows["authorizationCode"]["tokenUrl"] == "https://a.example/token"
    list_pets = spec.operation("listPets")
    params = {p.name: p for p in list_pets.parameters}
    assert params["limit"].schema == {"type": "integer", "minimum": 1, "exclusiveMaximum": 100}
    assert (params["tags"].style, params["tags"].explode) == ("form", True)
    assert (params["ids"].style, params["ids"].explode) == ("form", False)
    assert list_pets.security == ({"basicAuth": ()},)
    assert list_pets.responses[0].content[0].schema["items"]["properties"]["tag"]["type"] == ["string", "null"]

    add = spec.operation("addPet")
    assert add.request_body is not None and add.request_body.required
    assert [m.media_type for m in add.request_body.content] == ["application/json"]
    assert add.request_body.content[0].schema["required"] == ["name"]
    assert add.security == ({"oauth": ("pets:read",)},)

    upload = spec.operation("uploadPhoto")
    assert upload.request_body is not None
    media = upload.request_body.content[0]
    assert media.media_type == MULTIPART_FORM
    assert media.schema["properties"]["file"] == {"type": "string", "format": "binary"}
    assert media.schema["properties"]["note"]["description"] == "a note"
    assert media.schema["required"] == ["file"]
    rename = spec.operation("renamePet")
    assert rename.request_body is not None
    assert rename.request_body.content[0].media_type == FORM_URLENCODED


def test_swagger2_without_host_uses_base_path() -> None:
    spec = load_spec({"swagger": "2.0", "info": {"title": "x", "version": "1"}, "basePath": "/v2", "paths": {}})
    assert [s.url for s in spec.servers] == ["/v2"]


def test_oas3_without_servers_defaults_to_root() -> None:
    assert [s.url for s in load_spec(MINI).servers] == ["/"]


def test_huge_alias_expansion_is_bounded(tmp_path: Path) -> None:
    # A "billion laughs" document must fail fast, not eat the machine.
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 9):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]")
    lines.append("openapi: 3.0.0\ninfo: {title: t, version: '1'}\npaths:\n  /a:\n    get:\n      parameters:")
    lines.append("        - {name: q, in: query, schema: {enum: *a8}}\n      responses: {}")
    path = _write(tmp_path, "laughs.yaml", "\n".join(lines) + "\n")
    with pytest.raises(SpecLoadError):
        load_spec(path)


def test_alias_bomb_refused_by_the_parser() -> None:
    from scopegate.openapi import parse

    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 9):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]")
    with pytest.raises(SpecLoadError, match="alias"):
        parse.parse_text("\n".join(lines) + "\n")
    # ...and a normal document still parses, dates as strings.
    assert parse.parse_text("openapi: 3.0.0\nd: 2020-01-01\n") == {"openapi": "3.0.0", "d": "2020-01-01"}


def test_duplicate_keys_are_refused_with_both_lines() -> None:
    # Changed on purpose (issue 10): the last value used to win silently, so one of two
    # definitions of a path or parameter vanished without anyone reviewing it.
    from scopegate.openapi.parse import parse_text

    with pytest.raises(SpecLoadError, match=r"spec.yaml:3:1: duplicate key 'a' \(first at line 1\)"):
        parse_text("a: 1\nb: 2\na: 2\n", name="spec.yaml")
    with pytest.raises(SpecLoadError, match=r"spec.json:2: duplicate key 'a' \(first at line 1\)"):
        parse_text('{"a": 1,\n "a": 2}', name="spec.json")
