"""Specs split over many files: refs relative to the referring file, lazily, and never outside the folder."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from scopegate.cli import main
from scopegate.cli.core import ExitCode
from scopegate.openapi.errors import RefError
from scopegate.openapi.loader import load_document
from scopegate.openapi.translate import translate

from .conftest import SHARED_OPENAPI

EXIT_OK = ExitCode.OK

ROOT = """\
openapi: 3.0.3
info: {title: split, version: '1'}
servers: [{url: 'https://api.example.test'}]
paths:
  /things:
    $ref: paths/things.yaml
  /things/{id}:
    get:
      $ref: ops/get_thing.yaml
"""
PATH_ITEM = """\
get:
  operationId: listThings
  parameters:
    - $ref: '../params.yaml#/Limit'
  responses: {'200': {description: ok}}
post:
  operationId: createThing
  requestBody:
    required: true
    content:
      application/json:
        schema: {$ref: '../schemas/common.yaml#/Thing'}
  responses: {'201': {description: created}}
"""
OPERATION = """\
operationId: getThing
parameters:
  - name: id
    in: path
    required: true
    schema: {$ref: '#/definitions/Id'}
  - name: fields
    in: query
    schema: {$ref: '#/definitions/Fields'}
responses: {'200': {description: ok}}
definitions:
  Id: {type: string, pattern: '^t_[0-9]+$', description: 'from the operation file itself'}
  Fields: {type: array, items: {$ref: '../schemas/common.yaml#/Field'}}
"""
PARAMS = """\
Limit:
  name: limit
  in: query
  schema: {$ref: 'schemas/common.yaml#/Count'}
"""
COMMON = """\
Count: {type: integer, minimum: 1, maximum: 100}
Field: {type: string, enum: [name, size]}
Thing:
  type: object
  required: [name]
  properties:
    name: {type: string}
    inner: {$ref: 'more/inner.yaml'}
    size: {$ref: '../schemas/common.yaml#/Count'}
"""
INNER = """\
type: object
description: a whole file as a schema
properties:
  note: {type: string}
  parent: {$ref: '../common.yaml#/Thing'}
"""


@pytest.fixture()
def tree(tmp_path: Path) -> Path:
    files = {
        "api.yaml": ROOT,
        "paths/things.yaml": PATH_ITEM,
        "ops/get_thing.yaml": OPERATION,
        "params.yaml": PARAMS,
        "schemas/common.yaml": COMMON,
        "schemas/more/inner.yaml": INNER,
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, "utf-8")
    return tmp_path / "api.yaml"


def test_refs_are_relative_to_the_referring_file(tree: Path) -> None:
    doc = load_document(tree, allow_external_refs=True)
    assert [i.label for i in doc.infos()] == ["listThings", "createThing", "getThing"]
    spec = doc.spec()
    limit = spec.operation("listThings").parameters[0]
    assert (limit.name, limit.schema) == ("limit", {"type": "integer", "minimum": 1, "maximum": 100})
    get = spec.operation("getThing")
    params = {p.name: p for p in get.parameters}
    # '#/definitions/Id' inside ops/get_thing.yaml points into that file, not into the root.
    assert params["id"].schema["description"] == "from the operation file itself"
    assert params["fields"].schema["items"]["enum"] == ["name", "size"]
    body = spec.operation("createThing").request_body
    assert body is not None
    thing = body.content[0].schema
    assert thing["$ref"] == "#/$defs/Thing"  # Thing -> inner.yaml -> ../common.yaml#/Thing: a recursion
    inner = thing["$defs"]["Thing"]["properties"]["inner"]
    assert inner["description"] == "a whole file as a schema" and inner["properties"]["parent"] == thing_ref()
    tool = translate(doc, doc.find("createThing")).tools[0]
    assert set(tool.parameters["properties"]) == {"name", "inner", "size"}


def thing_ref() -> dict[str, str]:
    return {"$ref": "#/$defs/Thing"}


def test_files_are_read_only_when_needed(tree: Path) -> None:
    doc = load_document(tree, allow_external_refs=True)
    doc.infos()
    # The index needs the path item and the operation file, not the parameter or schema files.
    assert doc.documents.files_read == 2
    doc.operation(doc.find("getThing")[0])
    assert doc.documents.files_read == 3  # + schemas/common.yaml for Field
    doc.spec()
    assert doc.documents.files_read == 5


def test_operation_refs_without_external_refs_fail_loudly(tree: Path) -> None:
    doc = load_document(tree)
    infos = {i.key: i for i in doc.infos()}
    assert "external references are disabled" in infos["GET /things/{id}"].problem
    with pytest.raises(Exception, match=r"cannot be read.*external references are disabled"):
        doc.operation(infos["GET /things/{id}"])
    assert any("paths/things.yaml" in p for p in doc.problems)


@pytest.mark.parametrize(
    ("ref", "message"),
    [
        ("../outside.yaml#/X", "only files next to the spec"),
        ("sub/../../outside.yaml#/X", "only files next to the spec"),
        ("%2e%2e/outside.yaml#/X", "only files next to the spec"),
        ("/etc/passwd#/X", "absolute paths are not allowed"),
        ("file:///etc/passwd#/X", "remote references are not allowed"),
        ("https://evil.example/x.yaml#/X", "remote references are not allowed"),
        ("//evil.example/x.yaml#/X", "remote references are not allowed"),
        ("link.yaml#/X", "a symlink leads outside"),
        ("absent.yaml#/X", "not found"),
    ],
)
def test_refs_never_leave_the_folder(tmp_path: Path, ref: str, message: str) -> None:
    root = tmp_path / "spec"
    root.mkdir()
    (root / "sub").mkdir()
    (tmp_path / "outside.yaml").write_text("X: {type: string}\n", "utf-8")
    os.symlink(tmp_path / "outside.yaml", root / "link.yaml")
    spec = {
        "openapi": "3.0.3",
        "info": {"title": "t", "version": "1"},
        "paths": {
            "/a/{x}": {
                "get": {
                    "operationId": "a",
                    "parameters": [{"name": "x", "in": "path", "required": True, "schema": {"$ref": ref}}],
                    "responses": {},
                }
            }
        },
    }
    (root / "api.json").write_text(json.dumps(spec), "utf-8")
    doc = load_document(root / "api.json", allow_external_refs=True)
    with pytest.raises(RefError, match=message):
        doc.operation(doc.infos()[0])


def _shared(name: str) -> Path:
    path = SHARED_OPENAPI / name
    if not path.is_file():
        pytest.skip(f"shared spec {path} not available")
    return path


def test_digitalocean_operation_refs_keep_their_parameters() -> None:
    doc = load_document(_shared("digitalocean/DigitalOcean-public.v2.yaml"), allow_external_refs=True)
    assert len(doc.infos()) == 659
    assert all(i.operation_id for i in doc.infos())
    tool = translate(doc, doc.find("GET /v2/droplets")).tools[0]
    assert list(tool.parameters["properties"]) == ["per_page", "page", "tag_name", "name", "type"]
    assert {a.location for a in tool.binding.arguments} == {"query"}


def test_a_properties_map_given_by_ref(tmp_path: Path) -> None:
    """DigitalOcean writes ``properties: {$ref: 'attributes.yml#/load_balancer_droplet_ids'}``: the map itself
    by reference. It became one argument named ``ref`` and the required ``droplet_ids`` was lost."""
    (tmp_path / "attributes.yaml").write_text(
        "ids:\n  droplet_ids: {type: array, items: {$ref: '#/Id'}}\nId: {type: integer, minimum: 1}\n", "utf-8"
    )
    (tmp_path / "api.yaml").write_text(
        "openapi: 3.0.3\ninfo: {title: t, version: '1'}\npaths:\n  /lb/droplets:\n    post:\n"
        "      operationId: addDroplets\n      requestBody:\n        required: true\n        content:\n"
        "          application/json:\n            schema:\n"
        "              properties: {$ref: 'attributes.yaml#/ids'}\n              required: [droplet_ids]\n"
        "      responses: {'204': {description: done}}\n"
        # a property *named* "$ref" (JSON Schema meta-schemas) stays a property
        "  /schemas:\n    post:\n      operationId: putSchema\n      requestBody:\n        content:\n"
        "          application/json:\n            schema:\n"
        "              properties: {$ref: {type: string}, title: {type: string}}\n"
        "      responses: {'204': {description: done}}\n",
        "utf-8",
    )
    doc = load_document(tmp_path / "api.yaml", allow_external_refs=True)
    tool = translate(doc, doc.find("addDroplets")).tools[0]
    assert tool.parameters["properties"]["droplet_ids"]["items"] == {"type": "integer", "minimum": 1}
    assert tool.parameters["required"] == ["droplet_ids"]
    named = translate(doc, doc.find("putSchema")).tools[0]
    assert {a.original_name for a in named.binding.arguments} == {"$ref", "title"}


def test_digitalocean_load_balancer_droplets_keep_droplet_ids() -> None:
    doc = load_document(_shared("digitalocean/DigitalOcean-public.v2.yaml"), allow_external_refs=True)
    for op in ("loadBalancers_add_droplets", "loadBalancers_remove_droplets"):
        tool = translate(doc, doc.find(op)).tools[0]
        assert set(tool.parameters["properties"]) == {"lb_id", "droplet_ids"}


def test_lob_path_item_refs() -> None:
    doc = load_document(_shared("lob/lob-api-public.yml"), allow_external_refs=True)
    assert len(doc.infos()) == 105 and not doc.problems


def test_cli_on_a_multi_file_root(capsys: pytest.CaptureFixture[str]) -> None:
    path = str(_shared("digitalocean/DigitalOcean-public.v2.yaml"))
    assert main(["openapi", "inventory", path, "--allow-external-refs", "--format", "json"]) == EXIT_OK
    rows = json.loads(capsys.readouterr().out)["operations"]
    assert len(rows) == 659 and sum(r["translatable"] for r in rows) >= 658
    assert main(["openapi", "declarations", path, "--allow-external-refs", "--allow", "droplets_list"]) == EXIT_OK
    tools = json.loads(capsys.readouterr().out)["tools"]
    assert sorted(tools[0]["parameters"]["properties"]) == ["name", "page", "per_page", "tag_name", "type"]
