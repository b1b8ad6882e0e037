"""OpenAPI toolsets from the config: ``openapi:`` entries -> :class:`OperationToolset`.

The config is translated into the runtime's own :class:`ToolsetSettings` (the object a Python
user passes), so both build the same tools. Service credentials come from the environment, read
once at start-up; per-user credentials from session state, from token exchange at the identity
provider (``exchange``) or from a per-identity store (``per_identity``: the verified caller's own
secret, no provider needed); the MCP client's own ``Authorization`` header is never sent downstream.
``security_schemes`` says how a credential is sent where the pinned spec declares none.
"""

from __future__ import annotations

import dataclasses
import importlib
import os
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING

from scopegate.config.model import (
    CredentialConfig,
    OpenAPIConfig,
    PerIdentityConfig,
    PolicyConfig,
    SecuritySchemeConfig,
)
from scopegate.errors import ConfigError
from scopegate.identity.secrets import IdentitySecrets
from scopegate.openapi.runtime import (
    DeclaredScheme,
    FromProvider,
    FromState,
    FromSubject,
    OperationPolicy,
    OperationToolset,
    ToolsetSettings,
)
from scopegate.openapi.runtime.catalog import OperationCatalog
from scopegate.openapi.runtime.credentials import CredentialSource
from scopegate.openapi.runtime.uploads import UploadLimits
from scopegate.scope import ScopeKeys
from scopegate.tools import ScopedTool

if TYPE_CHECKING:
    from scopegate.config.identity import IdentityServices

Closer = Callable[[], Awaitable[None]]


def required_env(name: str, where: str, environ: Mapping[str, str]) -> str:
    value = environ.get(name)
    if not value:
        raise ConfigError(f"{where}: environment variable {name} is not set")
    return value


def credential_source(
    cfg: CredentialConfig,
    where: str,
    environ: Mapping[str, str],
    *,
    scope_keys: ScopeKeys | None = None,
    identity: IdentityServices | None = None,
) -> CredentialSource:
    """FromState (the user's token in session state), FromSubject (token exchange) or FromProvider (a secret)."""
    if cfg.state_key is not None:
        return FromState(cfg.state_key, cfg.username_state_key)
    if cfg.exchange is not None:
        if identity is None:
            raise ConfigError(f"{where}.exchange: token exchange needs auth.provider")
        return FromSubject(identity.exchanger(cfg.exchange, scope_keys or ScopeKeys(), f"{where}.exchange"))
    if cfg.per_identity is not None:
        return FromSubject(per_identity_secrets(cfg.per_identity, f"{where}.per_identity", environ, scope_keys))
    if cfg.env is not None:
        secret = required_env(cfg.env, where, environ)
        return FromProvider(lambda _ctx, _scheme: secret)
    assert cfg.username_env is not None and cfg.password_env is not None  # CredentialConfig checked it
    pair = (required_env(cfg.username_env, where, environ), required_env(cfg.password_env, where, environ))
    return FromProvider(lambda _ctx, _scheme: pair)


def per_identity_secrets(
    cfg: PerIdentityConfig, where: str, environ: Mapping[str, str], scope_keys: ScopeKeys | None
) -> IdentitySecrets:
    """The per-identity store this config names: environment variables, a mode-checked file, or a callable."""
    if cfg.env is not None:
        return IdentitySecrets.from_env(cfg.env, environ, scope_keys=scope_keys, label=f"{where}.env")
    if cfg.file is not None:
        return IdentitySecrets.from_file(cfg.file, scope_keys=scope_keys, label=f"{where}.file")
    assert cfg.function is not None  # PerIdentityConfig checked it
    module_name, _, attribute = cfg.function.partition(":")
    try:
        found = getattr(importlib.import_module(module_name), attribute)
    except Exception as exc:  # the application's module, reported where it is named
        raise ConfigError(f"{where}.function: cannot load {cfg.function}: {type(exc).__name__}: {exc}") from exc
    if not callable(found):
        raise ConfigError(f"{where}.function: {cfg.function} is not callable")
    return IdentitySecrets.from_function(found, scope_keys=scope_keys, label=f"{where}.function")


def declared_scheme(cfg: SecuritySchemeConfig) -> DeclaredScheme:
    return DeclaredScheme(cfg.type, header=cfg.header, query=cfg.query, cookie=cfg.cookie)


def operation_policy(cfg: PolicyConfig) -> OperationPolicy:
    return OperationPolicy(
        projection=cfg.projection,
        ownership=cfg.ownership,
        bind=dict(cfg.bind),
        confirm=cfg.confirm,
        retry=cfg.retry,
        description=cfg.description,
        sensitive=cfg.sensitive,
    )


def toolset_settings(
    cfg: OpenAPIConfig,
    scope_keys: ScopeKeys,
    environ: Mapping[str, str] | None = None,
    identity: IdentityServices | None = None,
) -> ToolsetSettings:
    """The :class:`ToolsetSettings` this config entry describes."""
    env = os.environ if environ is None else environ
    defaults = ToolsetSettings(spec=cfg.spec, allow=cfg.allow)
    timeouts = defaults.timeouts
    if cfg.timeout_s is not None:
        timeouts = dataclasses.replace(timeouts, total=cfg.timeout_s, read=min(timeouts.read, cfg.timeout_s))
    if cfg.connect_timeout_s is not None:
        timeouts = dataclasses.replace(timeouts, connect=cfg.connect_timeout_s)
    retry = defaults.retry if cfg.retry is not False else dataclasses.replace(defaults.retry, max_attempts=1)
    shape = defaults.shape
    if cfg.max_result_chars is not None:
        shape = dataclasses.replace(shape, max_result_chars=cfg.max_result_chars)
    credentials = {
        scheme: credential_source(
            raw, f"openapi[{cfg.name}].credentials.{scheme}", env, scope_keys=scope_keys, identity=identity
        )
        for scheme, raw in cfg.credentials.items()
    }
    return dataclasses.replace(
        defaults,
        include=cfg.include,
        exclude=cfg.exclude,
        include_deprecated=cfg.include_deprecated,
        base_url=cfg.base_url,
        credentials=credentials,
        security_schemes={key: declared_scheme(raw) for key, raw in cfg.security_schemes.items()},
        policies={key: operation_policy(raw) for key, raw in cfg.policies.items()},
        timeouts=timeouts,
        retry=retry,
        shape=shape,
        max_response_bytes=cfg.max_response_bytes or defaults.max_response_bytes,
        redirects=cfg.redirects or defaults.redirects,
        scope_keys=scope_keys,
        sensitive_fields=defaults.sensitive_fields if cfg.sensitive_fields is None else cfg.sensitive_fields,
        allow_external_refs=cfg.allow_external_refs,
        strict=cfg.strict,
        uploads=None
        if cfg.uploads is None
        else UploadLimits(cfg.uploads.max_file_bytes, cfg.uploads.max_total_bytes, cfg.uploads.max_files),
    )


def _confirm_everything(settings: ToolsetSettings, toolset: OperationToolset) -> ToolsetSettings:
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
    cfg: OpenAPIConfig,
    scope_keys: ScopeKeys,
    environ: Mapping[str, str] | None = None,
    identity: IdentityServices | None = None,
    wrap: Callable[[ScopedTool], ScopedTool] | None = None,
) -> tuple[list[ScopedTool], list[Closer]]:
    """The toolset's tools and the closer of its HTTP client.

    In catalog mode the tools are the catalog's three; each operation runs wrapped by ``wrap``
    (the guard), so it keeps its own cap, cache and call-log line behind ``call_operation``.
    """
    if not cfg.spec.is_file():
        raise ConfigError(f"openapi[{cfg.name}].spec: no such file {cfg.spec}")
    settings = toolset_settings(cfg, scope_keys, environ, identity)
    closers: list[Closer] = []
    try:
        toolset = OperationToolset(settings)
        if cfg.confirm == "always":
            first = toolset
            toolset = OperationToolset(_confirm_everything(settings, first))
            closers.append(first.aclose)
        if cfg.mode == "catalog":
            operations = list(toolset.tools)
            runners = [wrap(t) for t in operations] if wrap is not None else None
            catalog = OperationCatalog.of(
                operations, runners, max_results=cfg.catalog.max_results, prefix=cfg.catalog.prefix
            )
            return list(catalog.tools), [*closers, toolset.aclose]
    except ConfigError as exc:
        raise ConfigError(f"openapi[{cfg.name}]: {exc}") from exc
    return list(toolset.tools), [*closers, toolset.aclose]
