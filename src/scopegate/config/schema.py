"""The JSON Schema (draft 2020-12) of a scopegate config file.

One source of truth: the loader validates against it, ``scopegate check
--schema`` prints it (point an editor's YAML language server at that output).
Checks that need more than one key at a time (a tool naming a backend that
exists, unique tool names, spec bounds) live in :mod:`scopegate.config.model`.
"""

from __future__ import annotations

import copy
from typing import Any

SCHEMA_ID = "https://scopegate.dev/schema/config-v1.json"

_NAME = {"type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_]{0,63}$"}
_FIELD = {"type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_.]{0,127}$"}
_KEY = {"type": "string", "minLength": 1, "maxLength": 128}
_TEXT = {"type": "string", "maxLength": 4000}
_POS_INT = {"type": "integer", "minimum": 1}
_POS_NUM = {"type": "number", "exclusiveMinimum": 0}
_PATH = {"type": "string", "minLength": 1, "maxLength": 4096}
_URL = {"type": "string", "pattern": "^https?://", "maxLength": 2048}
_STR_LIST = {"type": "array", "items": {"type": "string", "minLength": 1}}


def _obj(properties: dict[str, Any], required: list[str] | None = None, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        out["required"] = required
    out.update(extra)
    return out


_EMBEDDED_KEYS = {
    "type": {"const": "embedded"},
    "path": {**_PATH, "description": "Folder holding one tantivy index per search tool, named by its index."},
    "threads": {"type": "integer", "minimum": 1, "maximum": 64},
}
_REMOTE_KEYS = {
    "type": {"enum": ["opensearch", "elasticsearch"]},
    "url": {"anyOf": [_URL, {"type": "array", "items": _URL, "minItems": 1}]},
    "username": {"type": "string"},
    "password": {"type": "string"},
    "api_key": {"type": "string"},
    "verify_certs": {"type": "boolean"},
    "ca_certs": _PATH,
    "server_major": {"type": "integer", "minimum": 7, "maximum": 9, "description": "Elasticsearch major version."},
    "shards": _POS_INT,
    "replicas": {"type": "integer", "minimum": 0},
}
# if/then rather than oneOf: a typo gets "unexpected key", not "valid under none of the schemas".
_BACKEND = {
    "type": "object",
    "properties": {"type": {"enum": ["embedded", "opensearch", "elasticsearch"]}},
    "required": ["type"],
    "if": {"properties": {"type": {"const": "embedded"}}},
    "then": _obj(_EMBEDDED_KEYS, ["type", "path"]),
    "else": _obj(_REMOTE_KEYS, ["type", "url"]),
}

_TEXT_FIELD = {
    "anyOf": [
        {"type": "string", "pattern": r"^[A-Za-z_][A-Za-z0-9_.]{0,127}(\^[0-9]+(\.[0-9]+)?)?$"},
        _obj({"name": _FIELD, "boost": _POS_NUM}, ["name"]),
    ]
}

_FILTER = _obj(
    {
        "name": _NAME,
        "allowed": {"type": "array", "items": {"type": "string", "minLength": 1, "maxLength": 256}, "minItems": 1},
        "description": _TEXT,
    },
    ["name", "allowed"],
)

_SEARCH_TOOL = _obj(
    {
        "backend": {**_KEY, "description": "Name of an entry under `backends`."},
        "name": _NAME,
        "description": _TEXT,
        "index": {"type": "string", "pattern": "^[A-Za-z0-9_.-]{1,255}$", "description": "Index or alias name."},
        "text_fields": {"type": "array", "items": _TEXT_FIELD, "minItems": 1},
        "filters": {"type": "array", "items": _FILTER},
        "id_field": _FIELD,
        "tenant_field": _FIELD,
        "group_field": {"anyOf": [_FIELD, {"type": "null"}]},
        "keyword_fields": {"type": "array", "items": _FIELD},
        "result_fields": {"type": "array", "items": _FIELD},
        "snippet_field": _FIELD,
        "page_size": {"type": "integer", "minimum": 1, "maximum": 50},
        "max_page": {"type": "integer", "minimum": 1, "maximum": 100},
        "snippet_chars": {"type": "integer", "minimum": 40, "maximum": 4000},
        "min_query_chars": _POS_INT,
        "max_query_chars": {"type": "integer", "minimum": 1, "maximum": 4000},
        "hits_char_budget": {"type": "integer", "minimum": 200, "maximum": 200_000},
        "result_field_chars": _POS_INT,
        "next_page_horizon": _POS_INT,
        "many_hits_threshold": _POS_INT,
        "track_total_up_to": _POS_INT,
        "engine_timeout_s": _POS_NUM,
        "client_timeout_s": _POS_NUM,
        "query_description": _TEXT,
        "page_description": _TEXT,
        "fetch": {"type": "boolean", "description": "Also serve the fetch-by-id tool (default true)."},
        "fetch_name": _NAME,
        "fetch_description": _TEXT,
        "fetch_body_chars": _POS_INT,
    },
    ["backend", "name", "description", "text_fields"],
)

_POLICY = _obj(
    {
        "projection": _STR_LIST,
        "ownership": {"type": "string", "minLength": 1, "description": "Ownership rule in its text form."},
        "bind": {"type": "object", "additionalProperties": _KEY, "description": "argument -> session-state key"},
        "confirm": {"type": "boolean"},
        "retry": {"type": "boolean"},
        "description": _TEXT,
    }
)

_ENV_NAME = {"type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_]*$"}
_CREDENTIAL = _obj(
    {
        "env": {**_ENV_NAME, "description": "Environment variable holding the token or API key."},
        "username_env": {**_ENV_NAME, "description": "HTTP basic: environment variable holding the user name."},
        "password_env": {**_ENV_NAME, "description": "HTTP basic: environment variable holding the password."},
        "state_key": {**_KEY, "description": "Session-state key holding the user's own token (ADK sessions)."},
        "username_state_key": _KEY,
    }
)

_OPENAPI = _obj(
    {
        "name": _NAME,
        "spec": {**_PATH, "description": "Path of the pinned OpenAPI/Swagger document."},
        "base_url": _URL,
        "allow": {"type": "array", "items": {"type": "string", "minLength": 1}, "minItems": 1},
        "policies": {"type": "object", "additionalProperties": _POLICY},
        "credentials": {"type": "object", "additionalProperties": _CREDENTIAL},
        "confirm": {
            "enum": ["state_changing", "always"],
            "description": "Which calls need the user's approval (default state_changing); a policy's confirm wins.",
        },
        "timeout_s": _POS_NUM,
        "connect_timeout_s": _POS_NUM,
        "max_response_bytes": _POS_INT,
        "redirects": {"enum": ["same-origin", "none"]},
        "retry": {"type": "boolean"},
        "max_result_chars": {"type": "integer", "minimum": 200, "maximum": 200_000},
    },
    ["name", "spec", "allow"],
)

_CLAIM = {"type": "string", "minLength": 1, "maxLength": 256, "description": "Claim name; dots reach nested claims."}

_JWT = _obj(
    {
        "public_key_file": _PATH,
        "jwks_file": _PATH,
        "secret_env": {"type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_]*$"},
        "algorithms": {
            "type": "array",
            "items": {
                "enum": [
                    "RS256",
                    "RS384",
                    "RS512",
                    "PS256",
                    "PS384",
                    "PS512",
                    "ES256",
                    "ES384",
                    "ES512",
                    "EdDSA",
                    "HS256",
                    "HS384",
                    "HS512",
                ]
            },
            "minItems": 1,
        },
        "issuer": {"type": "string", "minLength": 1},
        "audience": {"anyOf": [{"type": "string", "minLength": 1}, {"type": "array", "items": {"type": "string"}}]},
        "leeway_s": {"type": "number", "minimum": 0, "maximum": 300},
        "max_age_s": _POS_NUM,
        "claims": _obj({"tenant": _CLAIM, "user": _CLAIM, "groups": _CLAIM}, ["tenant"]),
    },
    ["issuer", "audience", "claims"],
)

_HTTP = _obj(
    {
        "host": {"type": "string", "minLength": 1},
        "port": {"type": "integer", "minimum": 0, "maximum": 65535},
        "path": {"type": "string", "pattern": "^/[A-Za-z0-9/_-]*$"},
        "metrics_path": {"anyOf": [{"type": "string", "pattern": "^/[A-Za-z0-9/_-]*$"}, {"type": "null"}]},
        "allowed_hosts": _STR_LIST,
        "allowed_origins": _STR_LIST,
        "stateless": {"type": "boolean"},
        "json_response": {"type": "boolean"},
        "max_sessions": _POS_INT,
        "session_idle_timeout_s": _POS_NUM,
        "max_request_bytes": _POS_INT,
    }
)

_GUARDS = _obj(
    {
        "enabled": {"type": "boolean"},
        "cap": _obj(
            {
                "families": {"type": "object", "additionalProperties": {"type": "integer", "minimum": 0}},
                "tools": {"type": "object", "additionalProperties": {"type": "integer", "minimum": 0}},
                "default": {"anyOf": [{"type": "integer", "minimum": 0}, {"type": "null"}]},
                "window_s": {
                    **_POS_NUM,
                    "description": "MCP only: the per-session budget renews every window (ADK counts per invocation).",
                },
            }
        ),
        "rate_limit": _obj({"rate": _POS_NUM, "burst": _POS_INT}, ["rate", "burst"]),
        "cache": _obj(
            {
                "enabled": {"type": "boolean"},
                "ttl_s": _POS_NUM,
                "max_entries": _POS_INT,
                "redis_url": {"type": "string", "pattern": "^rediss?://"},
                "families": _STR_LIST,
                "generation_ttl_s": {"type": "number", "minimum": 0},
            }
        ),
        "log": _obj(
            {
                "path": _PATH,
                "max_bytes": {"type": "integer", "minimum": 1024},
                "backups": {"type": "integer", "minimum": 0},
            },
            ["path"],
        ),
        "metrics": {"type": "boolean"},
        "call_timeout_s": _POS_NUM,
    }
)

_STATE_KEY_OR_NULL = {"anyOf": [_KEY, {"type": "null"}]}

CONFIG_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": SCHEMA_ID,
    "title": "scopegate config",
    "description": "Backends, search tools, OpenAPI toolsets, scope mapping, auth and guards of one scopegate app.",
    **_obj(
        {
            "version": {"const": 1},
            "server": _obj(
                {
                    "name": {"type": "string", "minLength": 1, "maxLength": 128},
                    "instructions": _TEXT,
                    "http": _HTTP,
                }
            ),
            "backends": {
                "type": "object",
                "propertyNames": {"pattern": "^[A-Za-z0-9_-]{1,64}$"},
                "additionalProperties": _BACKEND,
            },
            "search_tools": {"type": "array", "items": _SEARCH_TOOL},
            "openapi": {"type": "array", "items": _OPENAPI},
            "scope": _obj(
                {
                    "state_keys": _obj({"tenant": _KEY, "user": _STATE_KEY_OR_NULL, "groups": _STATE_KEY_OR_NULL}),
                }
            ),
            "auth": _obj({"jwt": _JWT, "token_table": _PATH}),
            "stdio": _obj(
                {
                    "tenant": {"type": "string", "minLength": 1, "maxLength": 256},
                    "user": {"type": "string", "minLength": 1, "maxLength": 256},
                    "groups": {"type": "array", "items": {"type": "string", "minLength": 1, "maxLength": 256}},
                }
            ),
            "guards": _GUARDS,
        },
        ["version"],
    ),
}


def config_schema() -> dict[str, Any]:
    """A copy of the schema (callers may change it freely)."""
    return copy.deepcopy(CONFIG_SCHEMA)
