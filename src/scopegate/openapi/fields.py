"""Small readers for OpenAPI fields shared by the 3.x and 2.0 loaders."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scopegate.openapi.model import SecurityRequirement, SecurityScheme, Server, ServerVariable


def text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def str_tuple(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list):
        return ()
    return tuple(str(v) for v in value if isinstance(v, str | int | float))


def security_requirements(value: Any) -> tuple[SecurityRequirement, ...]:
    if not isinstance(value, list):
        return ()
    out: list[SecurityRequirement] = []
    for entry in value:
        if isinstance(entry, Mapping):
            out.append({str(k): str_tuple(v) for k, v in entry.items()})
    return tuple(out)


def parse_servers(value: Any) -> tuple[Server, ...]:
    if not isinstance(value, list):
        return ()
    servers: list[Server] = []
    for entry in value:
        if not isinstance(entry, Mapping) or not isinstance(entry.get("url"), str):
            continue
        variables: dict[str, ServerVariable] = {}
        raw_vars = entry.get("variables")
        if isinstance(raw_vars, Mapping):
            for vname, var in raw_vars.items():
                if isinstance(var, Mapping):
                    variables[str(vname)] = ServerVariable(
                        default=str(var.get("default", "")),
                        enum=str_tuple(var.get("enum")),
                        description=text(var.get("description")),
                    )
        servers.append(Server(url=entry["url"], description=text(entry.get("description")), variables=variables))
    return tuple(servers)


def parse_security_schemes(raw: Any) -> dict[str, SecurityScheme]:
    schemes: dict[str, SecurityScheme] = {}
    if not isinstance(raw, Mapping):
        return schemes
    for key, s in raw.items():
        if not isinstance(s, Mapping):
            continue
        stype = s.get("type")
        if stype not in ("apiKey", "http", "oauth2", "openIdConnect", "mutualTLS"):
            continue
        location = s.get("in")
        schemes[str(key)] = SecurityScheme(
            key=str(key),
            type=stype,
            scheme=str(s["scheme"]).lower() if isinstance(s.get("scheme"), str) else None,
            name=s.get("name") if isinstance(s.get("name"), str) else None,
            location=location if location in ("query", "header", "cookie") else None,
            bearer_format=s.get("bearerFormat") if isinstance(s.get("bearerFormat"), str) else None,
            flows=dict(s["flows"]) if isinstance(s.get("flows"), Mapping) else {},
            open_id_connect_url=s.get("openIdConnectUrl") if isinstance(s.get("openIdConnectUrl"), str) else None,
            description=text(s.get("description")),
        )
    return schemes
