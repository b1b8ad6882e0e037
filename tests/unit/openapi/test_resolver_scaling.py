"""Resolution scales with what is used: shared and recursive refs cost once, deep webs do not recurse deeply.

The synthetic specs (scopegate_lab.openapi_synth) have the shapes of a large
payments API: a web of schemas linked through expandable fields
``anyOf: [string, $ref]``, a deep allOf chain, a discriminated oneOf. Wave 1
failed here with "schema too large to resolve (more than 2000000 nodes)" from
about 9 schemas on (it resolved every response eagerly, and stopped memoising
once a recursion cut touched the stack). The assertions count work (refs
resolved, nodes built), never time.
"""

from __future__ import annotations

import json

import jsonschema
import pytest

from scopegate.openapi.errors import RefError
from scopegate.openapi.loader import load_document
from scopegate.openapi.resolver import MAX_INLINE_REFS
from scopegate.openapi.runtime.request import RequestBuilder
from scopegate.openapi.runtime.schema import compile_validator
from scopegate.openapi.translate import translate
from scopegate_lab.openapi_synth import expandable_web


def _mappings(node: object) -> int:
    if isinstance(node, dict):
        return 1 + sum(_mappings(v) for v in node.values())
    if isinstance(node, list):
        return sum(_mappings(v) for v in node)
    return 0


@pytest.mark.parametrize(("schemas", "operations"), [(12, 72), (40, 120)])
def test_an_expandable_web_loads_and_translates(schemas: int, operations: int) -> None:
    spec = expandable_web(schemas, operations)
    doc = load_document(spec)
    result = translate(doc, strict=False)
    assert not result.failures and len(result.tools) == operations
    # Responses too, when asked for: every component is resolved once, whatever the number of paths through it,
    # so the work is bounded by the size of the document itself.
    doc.spec(with_responses=True)
    components = len(doc.root["components"]["schemas"])
    assert doc.resolver.stats.resolved <= components
    assert doc.resolver.stats.nodes <= _mappings(spec)


def test_a_web_of_200_schemas_and_500_operations() -> None:
    doc = load_document(expandable_web(200, 500))
    infos = doc.infos()
    assert len(infos) == 500
    five = translate(doc, infos[:5])
    assert len(five.tools) == 5
    # Five operations resolve only what they use.
    assert doc.resolver.stats.resolved < 60
    assert len(translate(doc, strict=False).tools) == 500
    assert doc.resolver.stats.resolved <= len(doc.root["components"]["schemas"])


def test_responses_are_not_resolved_for_tools() -> None:
    doc = load_document(expandable_web(50, 60))
    list_op = next(i for i in doc.infos() if i.operation_id and i.operation_id.startswith("List"))
    op = doc.operation(list_op)
    assert op.responses == ()
    assert doc.resolver.stats.resolved == 0  # its parameters are inline; its response is not touched
    assert doc.operation(list_op, with_responses=True).responses[0].status == "200"
    assert doc.resolver.stats.resolved > 0


def test_deep_webs_become_definitions_not_deep_recursion() -> None:
    doc = load_document(expandable_web(200, 12, expandable=2))
    s0 = doc.schema({"$ref": "#/components/schemas/S0"}, "", "test")
    assert len(s0["$defs"]) > 0
    text = json.dumps(s0)  # finite
    assert text.count('"$ref"') >= 1
    # A valid 2020-12 schema a validator can use, and it validates a nested instance.
    validator = jsonschema.Draft202012Validator(s0)
    instance = {"id": "x", "object": "s0", "created": 1, "rel_0": {"id": "y", "object": "s1", "created": 2}}
    errors = [e.message for e in validator.iter_errors(instance)]
    assert all("object" in e or "enum" in e or "is not" in e for e in errors)  # checks ran, nothing crashed
    assert MAX_INLINE_REFS < 64


def test_recursion_is_bounded_without_losing_the_non_recursive_parts() -> None:
    spec = {
        "openapi": "3.0.3",
        "info": {"title": "t", "version": "1"},
        "paths": {
            "/n": {
                "post": {
                    "operationId": "put",
                    "requestBody": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Node"}}}},
                    "responses": {},
                }
            }
        },
        "components": {
            "schemas": {
                "Node": {
                    "type": "object",
                    "properties": {
                        "name": {"type": "string"},
                        "meta": {"$ref": "#/components/schemas/Meta"},
                        "children": {"type": "array", "items": {"$ref": "#/components/schemas/Node"}},
                    },
                },
                "Meta": {"type": "object", "properties": {"owner": {"type": "string", "maxLength": 5}}},
            }
        },
    }
    doc = load_document(spec)
    tool = translate(doc).tools[0]
    schema = tool.binding.body_schema
    assert schema is not None
    # The non-recursive part (Meta) stays inline everywhere, the recursion is one back-edge.
    node = schema["$defs"]["Node"]
    assert node["properties"]["meta"]["properties"]["owner"]["maxLength"] == 5
    assert node["properties"]["children"]["items"] == {"$ref": "#/$defs/Node"}
    # The whole depth is validated at run time, deeper than the declaration shows.
    deep = {"name": "a", "children": [{"name": "b", "children": [{"name": "c", "meta": {"owner": "toolong"}}]}]}
    problems = list(compile_validator(schema).iter_errors(deep))
    assert [list(p.absolute_path) for p in problems] == [["children", 0, "children", 0, "meta", "owner"]]
    b = RequestBuilder(tool.binding, "https://api.example.test")
    assert b.build({"name": "a", "children": [{"name": "b", "children": []}]}).body is not None


def test_deep_all_of_chains_and_discriminated_unions() -> None:
    doc = load_document(expandable_web(5, 30, chain_depth=150, variants=60))
    pay = next(i for i in doc.infos() if i.operation_id and i.operation_id.startswith("Pay"))
    tool = translate(doc, [pay]).tools[0]
    props = tool.parameters["properties"]
    assert len(props["payment"]["properties"]["type"]["enum"]) == 60
    chain = props["chain"]
    assert "level_0" in chain["properties"] and "level_150" in chain["properties"]


def test_a_failed_resolution_does_not_poison_the_memo() -> None:
    spec = {
        "openapi": "3.0.3",
        "info": {"title": "t", "version": "1"},
        "paths": {},
        "components": {
            "schemas": {
                "A": {"type": "object", "properties": {"b": {"$ref": "#/components/schemas/B"}}},
                "B": {"type": "object", "properties": {"a": {"$ref": "#/components/schemas/A"}, "x": {"$ref": "#/no"}}},
            }
        },
    }
    doc = load_document(spec)
    for _ in range(2):
        with pytest.raises(RefError, match="#/no"):
            doc.schema({"$ref": "#/components/schemas/A"}, "", "t")
    assert doc.resolver.definition.__self__._memo == {}  # type: ignore[attr-defined]
