"""``scopegate check CONFIG``: validate a config, build its tools offline, say what each shows a model."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Sequence
from typing import Any

from scopegate.backends import embedded_storage as storage
from scopegate.config.builder import build_app
from scopegate.config.declarations import declarations
from scopegate.config.loader import load_config
from scopegate.config.model import AppConfig, EmbeddedBackendConfig
from scopegate.declarations import Profile, ToolDecl, lint_tools, render
from scopegate.errors import install_hint
from scopegate.identity.table import TokenTable
from scopegate.validation import ConfigValidationError, Problem


def index_problems(config: AppConfig) -> list[Problem]:
    """Embedded indexes that exist but were built with another mapping, each field named (read-only)."""
    problems = []
    for i, tool in enumerate(config.search_tools):
        backend = config.backends[tool.backend]
        if isinstance(backend, EmbeddedBackendConfig):
            where = backend.index_path(tool.spec.index)
            for problem in storage.index_problems(where, tool.spec) if where.is_dir() else []:
                problems.append(
                    Problem.at(("search_tools", i), f"the embedded index {where} does not match this tool: {problem}")
                )
    return problems


def _index_notes(config: AppConfig) -> list[str]:
    notes = []
    for tool in config.search_tools:
        backend = config.backends[tool.backend]
        if isinstance(backend, EmbeddedBackendConfig):
            where = backend.index_path(tool.spec.index)
            meta = storage.read_meta(where) if where.is_dir() else None
            if meta is None:
                state = f"missing (scopegate ingest FILE --config CONFIG --tool {tool.spec.name}, or serve --demo-data)"
            elif storage.legacy_keys(meta):
                state = "present, keyed by id alone (older scopegate): run `scopegate migrate` before ingesting"
            else:
                state = "present"
            notes.append(f"{tool.spec.name}: embedded index {where} {state}")
        else:
            notes.append(
                f"{tool.spec.name}: {backend.type} index or alias {tool.spec.index!r} at {', '.join(backend.url)}"
            )
    return notes


def _extra_notes() -> list[str]:
    """What serving needs that this install lacks (``check`` itself needs no extra)."""
    if _installed("mcp"):
        return []
    return [f"serve: needs the 'mcp' extra, not installed here: {install_hint('mcp')}"]


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def _auth_notes(config: AppConfig) -> list[str]:
    auth = config.auth
    if not auth.configured:
        return ["http: no auth configured, so `serve --transport http` will refuse to start (stdio only)"]
    notes = []
    if auth.token_table is not None:
        notes.append(f"http auth: token table with {len(TokenTable.load(auth.token_table))} token(s)")
    if auth.jwt is not None:
        jwt = auth.jwt
        keys = "provider JWKS" if jwt.remote else "local keys"
        notes.append(
            f"http auth: JWT {', '.join(jwt.algorithms)} issuer={jwt.issuer} "
            f"audience={', '.join(jwt.audience)} ({keys})"
        )
    if auth.introspection is not None and auth.provider is not None:
        notes.append(f"http auth: introspection at {auth.provider.issuer} (cached {auth.introspection.cache_s:g}s)")
    if auth.scopes.enabled:
        notes.append("http auth: tools need scopes (auth.scopes); tools/list shows each caller only what it may call")
    return notes


def _deep_index_report(config: AppConfig) -> tuple[list[dict[str, Any]], list[str]]:
    from scopegate.server.indexes import embedded_index_states

    states = embedded_index_states(config, deep=True)
    report = [
        {"tool": s.tool, "path": str(s.path), "present": s.present, "documents": s.documents, "drift": s.drift}
        for s in states
    ]
    return report, [p for p in (s.problem for s in states) if p]


async def check_config(
    path: str | os.PathLike[str], *, deep: bool = False, profiles: Sequence[Profile] = ()
) -> dict[str, Any]:
    """Load and validate ``path``, build its tools without opening any index; raises ConfigError with every
    problem. Returns the config's path, each tool's declaration and notes on indexes and auth. With ``deep``,
    also ``indexes`` (each embedded index opened read-only: documents, drift from the config's spec) and
    ``problems`` (missing, empty or drifted indexes). Each of ``profiles`` (gemini, openai, anthropic, mcp)
    adds the declarations as that API takes them, and each rule they break is a problem."""
    config = load_config(path)
    problems = [] if deep else index_problems(config)  # deep: the index report names every drift instead
    if problems:
        raise ConfigValidationError(str(config.source or path), problems)
    app = await build_app(config, offline=True)
    try:
        report: dict[str, Any] = {
            "config": str(config.source) if config.source else None,
            "tools": declarations(app.tools),
            "notes": _index_notes(config) + _auth_notes(config) + _extra_notes(),
        }
        if deep:
            from scopegate.server.remote_indexes import remote_index_states

            # OpenSearch/Elasticsearch: the live mapping check (read-only; clients open no index).
            remote = await remote_index_states(config, app.backends)
    finally:
        await app.aclose()
    if deep:
        report["indexes"], report["problems"] = _deep_index_report(config)
        report["indexes"] += [state.report() for state in remote]
        report["problems"] += [line for state in remote for line in state.errors]
        report["warnings"] = [line for state in remote for line in state.warnings]
        report["notes"] += [line for state in remote for line in state.notes]
    if profiles:
        neutral = [ToolDecl.from_neutral(d) for d in report["tools"]]
        report["profiles"] = {p: [render(t, p) for t in neutral] for p in profiles}
        report["problems"] = [*report.get("problems", []), *(str(v) for v in lint_tools(neutral, profiles))]
    return report
