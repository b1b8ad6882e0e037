"""OpenAPI toolsets from the config: ``openapi:`` entries -> :class:`OperationToolset`.

The config is translated into the runtime's own :class:`ToolsetSettings`
(the object a Python user passes), so both build the same tools. Service
credentials come from the environment, read once at start-up; the MCP
client's own ``Authorization`` header is never a credential source.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from typing import Any

from scopegate.config.builder import optional_module
from scopegate.config.model import AppConfig, OpenAPIConfig
from scopegate.errors import ConfigError
from scopegate.tools import ScopedTool


def _env(name: str, where: str, environ: Mapping[str, str]) -> str:
    value = environ.get(name)
    if not value:
        raise ConfigError(f"{where}: environment variable {name} is not set")
    return value


def credential_sources(cfg: OpenAPIConfig, environ: Mapping[str, str]) -> dict[str, Any]:
    """Security scheme key -> FromProvider (environment) or FromState (session state)."""
    rt = optional_module("scopegate.openapi.runtime", "OpenAPI toolsets")
    sources: dict[str, Any] = {}
    for scheme, raw in cfg.credentials.items():
        where = f"openapi[{cfg.name}].credentials.{scheme}"
        if "state_key" in raw:
            sources[scheme] = rt.FromState(raw["state_key"], raw.get("username_state_key"))
        elif "env" in raw:
            secret = _env(raw["env"], where, environ)
            sources[scheme] = rt.FromProvider(lambda _ctx, _scheme, value=secret: value)
        else:
            pair = (_env(raw["username_env"], where, environ), _env(raw["password_env"], where, environ))
            sources[scheme] = rt.FromProvider(lambda _ctx, _scheme, value=pair: value)
    return sources


def toolset_settings(cfg: OpenAPIConfig, config: AppConfig, environ: Mapping[str, str] | None = None) -> Any:
    """The :class:`ToolsetSettings` this config entry describes."""
    rt = optional_module("scopegate.openapi.runtime", "OpenAPI toolsets")
    env = os.environ if environ is None else environ
    policies = {}
    for key, raw in cfg.policies.items():
        policies[key] = rt.OperationPolicy(
            projection=tuple(raw["projection"]) if "projection" in raw else None,
            ownership=raw.get("ownership"),
            bind=dict(raw.get("bind", {})),
            confirm=raw.get("confirm"),
            retry=bool(raw.get("retry", True)),
            description=raw.get("description"),
        )
    defaults = rt.ToolsetSettings(spec=cfg.spec, allow=cfg.allow)
    timeouts = defaults.timeouts
    if cfg.timeout_s is not None:
        timeouts = dataclasses.replace(timeouts, total=cfg.timeout_s, read=min(timeouts.read, cfg.timeout_s))
    if cfg.connect_timeout_s is not None:
        timeouts = dataclasses.replace(timeouts, connect=cfg.connect_timeout_s)
    retry = defaults.retry if cfg.retry is not False else dataclasses.replace(defaults.retry, max_attempts=1)
    shape = defaults.shape
    if cfg.max_result_chars is not None:
        shape = dataclasses.replace(shape, max_result_chars=cfg.max_result_chars)
    return dataclasses.replace(
        defaults,
        base_url=cfg.base_url,
        credentials=credential_sources(cfg, env),
        policies=policies,
        timeouts=timeouts,
        retry=retry,
        shape=shape,
        max_response_bytes=cfg.max_response_bytes or defaults.max_response_bytes,
        redirects=cfg.redirects or defaults.redirects,
        scope_keys=config.scope_keys,
    )


def _confirm_everything(settings: Any, toolset: Any) -> Any:
    """Settings where every operation without an explicit ``confirm`` asks the user."""
    policies = dict(settings.policies)
    for tool in toolset.tools:
        op = tool.operation
        keys = [k for k in (op.operation_id, tool.name, op.key) if k]
        found = next((k for k in keys if k in policies), None)
        if tool.policy.confirm is None:
            policies[found or keys[0]] = dataclasses.replace(tool.policy, confirm=True)
    return dataclasses.replace(settings, policies=policies)


def build_openapi_toolset(
    cfg: OpenAPIConfig, config: AppConfig, environ: Mapping[str, str] | None = None
) -> tuple[list[ScopedTool], list[Any]]:
    """The toolset's tools and the closer of its HTTP client."""
    rt = optional_module("scopegate.openapi.runtime", "OpenAPI toolsets")
    if not cfg.spec.is_file():
        raise ConfigError(f"openapi[{cfg.name}].spec: no such file {cfg.spec}")
    settings = toolset_settings(cfg, config, environ)
    try:
        toolset = rt.OperationToolset(settings)
        if cfg.confirm == "always":
            first = toolset
            toolset = rt.OperationToolset(_confirm_everything(settings, first))
            closers = [first.aclose]
        else:
            closers = []
    except ConfigError as exc:
        raise ConfigError(f"openapi[{cfg.name}]: {exc}") from exc
    return list(toolset.tools), [*closers, toolset.aclose]
