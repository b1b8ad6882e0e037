"""Hand-written tools from the config: ``app_tools:`` entries -> bound :class:`~scopegate.apptools.AppTool` s.

Each entry names a function decorated with ``@app_tool`` (``package.module:attribute``); it is
bound to the config's scope keys, to the tools of this config it ``uses`` (called with the
caller's scope) and to its credential source, exactly as ``tool.bind(...)`` does in Python.
Service secrets come from the environment, read once at start-up.
"""

from __future__ import annotations

import dataclasses
import importlib
import os
from collections.abc import Mapping, Sequence

from scopegate.apptools import AppTool, CredentialProvider, Fixed, FromState
from scopegate.config.model import AppToolConfig, CredentialConfig
from scopegate.config.openapi import required_env
from scopegate.errors import ConfigError
from scopegate.openapi.runtime.credentials import Credential, Secret
from scopegate.openapi.runtime.response import ShapeLimits
from scopegate.scope import ScopeKeys
from scopegate.tools import ScopedTool


def load_function(target: str, where: str) -> AppTool:
    """The ``@app_tool`` object at ``package.module:attribute``."""
    module_name, _, attribute = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # an import error in the application's module, reported where it is named
        raise ConfigError(f"{where}: cannot import {module_name!r}: {type(exc).__name__}: {exc}") from exc
    found = getattr(module, attribute, None)
    if found is None:
        raise ConfigError(f"{where}: module {module_name!r} has no attribute {attribute!r}")
    if not isinstance(found, AppTool):
        raise ConfigError(f"{where}: {target} is not an app tool; decorate the function with @app_tool(read_only=...)")
    return found


def credential_provider(cfg: CredentialConfig, where: str, environ: Mapping[str, str]) -> CredentialProvider:
    """The user's own token from session state, or a service secret from the environment."""
    if cfg.state_key is not None:
        return FromState(cfg.state_key, cfg.username_state_key)
    if cfg.env is not None:
        return Fixed(Credential(Secret(required_env(cfg.env, where, environ))))
    if cfg.exchange is not None or cfg.per_identity is not None:
        raise ConfigError(f"{where}: an app tool's credential comes from env, state_key or username_env/password_env")
    assert cfg.username_env is not None and cfg.password_env is not None  # CredentialConfig checked it
    password = required_env(cfg.password_env, where, environ)
    return Fixed(Credential(Secret(password), username=required_env(cfg.username_env, where, environ)))


def build_app_tools(
    configs: Sequence[AppToolConfig],
    scope_keys: ScopeKeys,
    available: Sequence[ScopedTool],
    environ: Mapping[str, str] | None = None,
) -> tuple[list[AppTool], set[str]]:
    """The bound app tools, and the names of the tools only they may call (``hide``)."""
    env = os.environ if environ is None else environ
    known: dict[str, ScopedTool] = {t.name: t for t in available}
    built: list[AppTool] = []
    hidden: set[str] = set()
    for i, cfg in enumerate(configs):
        where = f"app_tools[{i}]"
        tool = load_function(cfg.function, where)
        missing = [name for name in cfg.uses if name not in known]
        if missing:
            raise ConfigError(f"{where}.uses: no tool named {missing} in this config; known: {sorted(known)}")
        limits = tool.limits
        if cfg.max_result_chars is not None:
            limits = dataclasses.replace(ShapeLimits(), max_result_chars=cfg.max_result_chars)
        credentials = credential_provider(cfg.credential, f"{where}.credential", env) if cfg.credential else None
        try:
            bound = tool.bind(
                scope_keys=scope_keys,
                tools=[known[name] for name in cfg.uses],
                credentials=credentials,
                limits=limits,
                timeout_s=cfg.timeout_s,
                name=cfg.name,
                description=cfg.description,
            )
        except ConfigError as exc:
            raise ConfigError(f"{where}: {exc}") from exc
        built.append(bound)
        known[bound.name] = bound
        hidden.update(cfg.hide)
    return built, hidden
