"""The lab's spec world (lab/scopegate_lab/spec_world): schema-shaped answers from a small world, no network."""

from __future__ import annotations

from typing import Any

from scopegate_lab.spec_world import SpecWorld, World

SPEC: dict[str, Any] = {
    "openapi": "3.0.3",
    "info": {"title": "t", "version": "1"},
    "paths": {
        "/accounts/{account_id}": {"get": {"operationId": "getAccount", "responses": {"200": {"description": "ok",
            "content": {"application/json": {"schema": {"allOf": [
                {"$ref": "#/components/schemas/Envelope"},
                {"type": "object", "properties": {"result": {"type": "object"}}}]}}}}}}},
        "/accounts/{account_id}/zones": {"get": {"operationId": "listZones", "responses": {"200": {"description": "ok",
            "content": {"application/json": {"schema": {"allOf": [
                {"$ref": "#/components/schemas/Envelope"},
                {"type": "object", "properties": {
                    "result": {"type": "array", "items": {"$ref": "#/components/schemas/Zone"}}}}]}}}}}}},
        "/zones/{zone_id}": {"get": {"operationId": "getZone", "responses": {"200": {"description": "ok",
            "content": {"application/json": {"schema": {"type": "object", "properties": {
                "result": {"$ref": "#/components/schemas/Zone"}}}}}}}}},
    },
    "components": {"schemas": {
        "Envelope": {"type": "object", "required": ["success", "errors"],
                     "properties": {"success": {"type": "boolean"}, "errors": {"type": "array", "items": {}}}},
        "Zone": {"type": "object", "required": ["id"], "properties": {
            "id": {"type": "string"}, "name": {"type": "string"},
            "status": {"type": "string", "enum": ["active", "pending"]},
            "account": {"type": "object", "properties": {"id": {"type": "string"}, "name": {"type": "string"}}}}},
    }},
}  # fmt: skip
WORLD = World(
    kinds={
        "account": {"plural": "accounts", "params": ["account_id"],
                    "records": {"a1": {"id": "a1", "name": "Acme"}, "a2": {"id": "a2", "name": "Globex"}}},
        "zone": {"plural": "zones", "params": ["zone_id"],
                 "records": {"z1": {"id": "z1", "name": "acme.example", "account_id": "a1", "status": "pending"},
                             "z2": {"id": "z2", "name": "globex.example", "account_id": "a2"}}},
    },
    error_style="cloudflare", list_key="result", record_key="result",
)  # fmt: skip


def test_a_record_fills_its_schema_and_links_its_parent() -> None:
    status, body, operation = SpecWorld(SPEC, WORLD).answer("GET", "/zones/z1", None)
    assert (status, operation) == (200, "getZone")
    assert body == {"result": {"id": "z1", "name": "acme.example", "status": "pending",
                               "account": {"id": "a1", "name": "Acme"}}}  # fmt: skip


def test_a_listing_shows_only_the_parents_records() -> None:
    status, body, _op = SpecWorld(SPEC, WORLD).answer("GET", "/accounts/a1/zones", None)
    assert status == 200 and body["success"] is True and body["errors"] == []
    assert [z["id"] for z in body["result"]] == ["z1"]


def test_a_free_form_result_is_the_record_and_unknown_ids_are_404() -> None:
    world = SpecWorld(SPEC, WORLD)
    assert world.answer("GET", "/accounts/a2", None)[1]["result"] == {"id": "a2", "name": "Globex"}
    status, body, _op = world.answer("GET", "/zones/nope", None)
    assert status == 404 and body["success"] is False and body["errors"][0]["code"] == 7003
