"""``scopegate check CONFIG`` and ``scopegate serve CONFIG``."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
from dataclasses import replace
from typing import Any

from scopegate.config.builder import ToolApp, build_app
from scopegate.config.declarations import declarations
from scopegate.config.model import AppConfig, EmbeddedBackendConfig, load_config
from scopegate.config.schema import config_schema
from scopegate.errors import ConfigError


def _err(text: str) -> None:
    print(text, file=sys.stderr)


def _index_notes(config: AppConfig) -> list[str]:
    notes = []
    for tool in config.search_tools:
        backend = config.backends[tool.backend]
        if isinstance(backend, EmbeddedBackendConfig):
            where = backend.index_path(tool.spec.index)
            state = (
                "present" if (where / "meta.json").exists() else "missing (run `scopegate ingest` or serve --demo-data)"
            )
            notes.append(f"{tool.spec.name}: embedded index {where} {state}")
        else:
            notes.append(
                f"{tool.spec.name}: {backend.kind} index or alias {tool.spec.index!r} at {', '.join(backend.urls)}"
            )
    return notes


def _auth_notes(config: AppConfig) -> list[str]:
    from scopegate.server.auth import BearerVerifier

    if not config.auth.configured:
        return ["http: no auth configured, so `serve --transport http` will refuse to start (stdio only)"]
    verifier = BearerVerifier.from_config(config.auth)  # loads keys and the token table: fails here, not at serve
    notes = []
    if verifier.table is not None:
        notes.append(f"http auth: token table with {len(verifier.table)} token(s)")
    if config.auth.jwt is not None:
        jwt = config.auth.jwt
        notes.append(
            f"http auth: JWT {', '.join(jwt.algorithms)} issuer={jwt.issuer} audience={', '.join(jwt.audience)}"
        )
    return notes


async def _check(config: AppConfig) -> dict[str, Any]:
    app = await build_app(config, offline=True)
    try:
        return {
            "config": str(config.source) if config.source else None,
            "tools": declarations(app.tools),
            "notes": _index_notes(config) + _auth_notes(config),
        }
    finally:
        await app.aclose()


def cmd_check(args: argparse.Namespace) -> int:
    if args.schema:
        print(json.dumps(config_schema(), indent=2))
        return 0
    if not args.config:
        _err("scopegate check: give a CONFIG file (or --schema)")
        return 2
    try:
        config = load_config(args.config)
        report = asyncio.run(_check(config))
    except ConfigError as exc:
        _err(f"scopegate check: {exc}")
        return 1
    print(json.dumps(report, indent=2, ensure_ascii=False))
    _err(f"{args.config}: ok, {len(report['tools'])} tool(s)")
    return 0


def _warn_empty_indexes(app: ToolApp) -> None:
    from scopegate.backends.embedded import EmbeddedBackend

    for backend in app.backends:
        if isinstance(backend, EmbeddedBackend) and backend.count_sync() == 0:
            _err(f"scopegate: warning: the embedded index {backend.path} is empty (scopegate ingest, or --demo-data)")


async def _serve(args: argparse.Namespace, config: AppConfig) -> None:
    app: ToolApp = await build_app(config)
    try:
        if args.demo_data:
            from scopegate.server.demo_data import ensure_demo_data

            await ensure_demo_data(app, say=_err)
        _warn_empty_indexes(app)
        if args.transport == "stdio":
            from scopegate.server.stdio_app import serve_stdio

            await serve_stdio(app)
        else:
            from scopegate.server.http_app import serve_http

            http = replace(
                config.http,
                host=args.host or config.http.host,
                port=args.port if args.port is not None else config.http.port,
            )
            _err(f"scopegate: MCP over streamable HTTP on http://{http.host}:{http.port}{http.path}")
            if http.host not in ("127.0.0.1", "localhost", "::1") and not http.allowed_hosts:
                _err(
                    "scopegate: warning: DNS-rebinding protection (Host header check) is off; "
                    "set server.http.allowed_hosts, and terminate TLS in front of this server"
                )
            await serve_http(app, host=http.host, port=http.port, http=http, log_level=args.log_level)
    finally:
        await app.aclose()


def cmd_serve(args: argparse.Namespace) -> int:
    # Logs go to stderr: on stdio, stdout carries the protocol.
    logging.basicConfig(level=getattr(logging, args.log_level.upper()), stream=sys.stderr)
    try:
        config = load_config(args.config)
        if args.transport == "http" and not config.auth.configured:
            raise ConfigError("HTTP needs auth: configure auth.jwt and/or auth.token_table (stdio needs neither)")
        if args.transport == "stdio":
            from scopegate.server.identity import stdio_identity

            stdio_identity(config.stdio)  # refuse to start without a fixed identity
        asyncio.run(_serve(args, config))
    except ConfigError as exc:
        _err(f"scopegate serve: {exc}")
        return 1
    except KeyboardInterrupt:
        return 0
    return 0


def add_commands(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = subparsers.add_parser(
        "check",
        help="validate a config file and print each tool's declaration",
        description="Validate a scopegate config (YAML, TOML or JSON) against its schema and cross-key rules, "
        "build its tools without opening any index, and print what each tool shows a model.",
    )
    p.add_argument("config", nargs="?", help="config file (.yaml, .yml, .toml or .json)")
    p.add_argument("--schema", action="store_true", help="print the config's JSON Schema (draft 2020-12) and exit")
    p.set_defaults(func=cmd_check)

    p = subparsers.add_parser(
        "serve",
        help="serve a config's tools over MCP (stdio or streamable HTTP)",
        description="Serve the tools of a config file as an MCP server. Over stdio the scope is fixed by the "
        "config's `stdio` section or SCOPEGATE_TENANT/SCOPEGATE_USER/SCOPEGATE_GROUPS; over HTTP it comes from "
        "each request's verified bearer token.",
    )
    p.add_argument("config", help="config file (.yaml, .yml, .toml or .json)")
    p.add_argument("--transport", choices=["stdio", "http"], default="stdio", help="MCP transport (default stdio)")
    p.add_argument("--host", help="HTTP bind address (default: server.http.host, else 127.0.0.1)")
    p.add_argument("--port", type=int, help="HTTP port (default: server.http.port, else 8765)")
    p.add_argument(
        "--demo-data", action="store_true", help="fill empty embedded indexes with the generated demo ticket corpus"
    )
    p.add_argument(
        "--log-level", default="warning", choices=["debug", "info", "warning", "error"], help="log level (stderr)"
    )
    p.set_defaults(func=cmd_serve)
