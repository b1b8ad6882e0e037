"""The ``auth`` section -> the identity room's objects: provider, verifier, tool scopes, token exchangers.

Nothing here talks to the network: the provider's metadata and keys are
fetched on first use, so ``scopegate check`` builds the same objects offline.
Secrets (``auth.provider.client_secret_env``, ``auth.jwt.secret_env``) are read
from the environment once, here.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field

from scopegate.config.model import AuthConfig, ExchangeConfig, HttpConfig, ProviderConfig
from scopegate.errors import ConfigError
from scopegate.identity.exchange import ExchangeTarget, TokenExchanger
from scopegate.identity.introspection import Introspector
from scopegate.identity.jwks import RemoteKeySet
from scopegate.identity.jwt_verify import JwtVerifier, key_source_from_files
from scopegate.identity.provider import Provider, ProviderSettings
from scopegate.identity.scopes import ToolScopes
from scopegate.identity.table import TokenTable
from scopegate.identity.tokens import TokenCheck
from scopegate.identity.verifier import Verifier
from scopegate.scope import ScopeKeys

Closer = Callable[[], Awaitable[None]]
LOOPBACK_BINDS = ("127.0.0.1", "localhost", "::1")


def _secret(name: str, where: str, environ: Mapping[str, str]) -> str:
    value = environ.get(name)
    if not value:
        raise ConfigError(f"{where}: environment variable {name} is not set")
    return value


def provider_settings(cfg: ProviderConfig, environ: Mapping[str, str]) -> ProviderSettings:
    env_name = cfg.client_secret_env
    secret = _secret(env_name, "auth.provider.client_secret_env", environ) if env_name else None
    return ProviderSettings(
        issuer=cfg.issuer,
        metadata_url=cfg.metadata_url,
        client_id=cfg.client_id,
        client_secret=secret,
        client_auth=cfg.client_auth,
        timeout_s=cfg.timeout_s,
        metadata_cache_s=cfg.metadata_cache_s,
    )


def tool_scopes(auth: AuthConfig) -> ToolScopes:
    s = auth.scopes
    return ToolScopes.of(required=s.required, read=s.read, write=s.write, tools=s.tools, implies=s.implies)


def default_resource(http: HttpConfig, port: int | None = None) -> str | None:
    """``http://host:port/path`` for a server bound to a concrete host and port, else None."""
    host, port = http.host, http.port if port is None else port
    if host in ("0.0.0.0", "::", "") or not port:
        return None
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}{http.path}"


@dataclass
class IdentityServices:
    """What the ``auth`` section builds, shared by the MCP server and the ADK adapter."""

    auth: AuthConfig
    scopes: ToolScopes
    verifier: Verifier | None = None
    provider: Provider | None = None
    resource: str | None = None
    keys: RemoteKeySet | None = None
    introspector: Introspector | None = None
    exchangers: list[TokenExchanger] = field(default_factory=list)
    closers: list[Closer] = field(default_factory=list)

    @property
    def authorization_servers(self) -> list[str]:
        if self.auth.provider is not None:
            return [self.auth.provider.issuer]
        return [self.auth.jwt.issuer] if self.auth.jwt is not None and self.auth.jwt.remote else []

    def exchanger(self, cfg: ExchangeConfig, scope_keys: ScopeKeys, where: str) -> TokenExchanger:
        if self.provider is None:
            raise ConfigError(f"{where}: token exchange needs auth.provider")
        exchanger = TokenExchanger(
            self.provider,
            ExchangeTarget(audience=cfg.audience, resource=cfg.resource, scopes=cfg.scopes),
            scope_keys=scope_keys,
            verifier=self.verifier,
        )
        self.exchangers.append(exchanger)
        return exchanger

    async def aclose(self) -> None:
        for close in reversed(self.closers):
            await close()


def build_identity(
    auth: AuthConfig,
    *,
    resource: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> IdentityServices:
    """The identity objects of ``auth``; ``resource`` is the server's URI when ``auth.resource`` is unset."""
    env = os.environ if environ is None else environ
    services = IdentityServices(auth=auth, scopes=tool_scopes(auth), resource=auth.resource or resource)
    if auth.provider is not None:
        services.provider = Provider(provider_settings(auth.provider, env))
        services.closers.append(services.provider.aclose)
    checks: list[TokenCheck] = []
    if auth.token_table is not None:
        checks.append(TokenTable.load(auth.token_table))
    extra = (services.resource,) if services.resource else ()
    if auth.jwt is not None:
        jwt_cfg = auth.jwt
        keys = key_source_from_files(jwt_cfg, env)
        if keys is None:
            services.keys = RemoteKeySet(
                _jwks_fetch(services, jwt_cfg.jwks_url),
                cache_s=jwt_cfg.jwks_cache_s,
                min_refresh_s=jwt_cfg.jwks_refresh_min_s,
            )
            keys = services.keys
        checks.append(JwtVerifier(jwt_cfg, keys, extra_audiences=extra))
    if auth.introspection is not None:
        cfg = auth.introspection
        assert services.provider is not None  # AuthConfig.problems refused it otherwise
        claims = cfg.claims or (auth.jwt.claims if auth.jwt is not None else None)
        assert claims is not None
        audiences = cfg.audience or (auth.jwt.audience if auth.jwt is not None else ())
        services.introspector = Introspector(
            services.provider,
            claims=claims,
            audiences=(*audiences, *extra),
            endpoint=cfg.endpoint,
            issuer=auth.provider.issuer if auth.provider is not None else None,
            scope_claim=cfg.scope_claim,
            cache_s=cfg.cache_s,
            inactive_cache_s=cfg.inactive_cache_s,
            max_entries=cfg.max_entries,
            leeway_s=cfg.leeway_s,
        )
        checks.append(services.introspector)
    if checks:
        services.verifier = Verifier(checks)
    return services


def _jwks_fetch(services: IdentityServices, url: str | None) -> Callable[[], Awaitable[Mapping[str, object]]]:
    jwt_cfg = services.auth.jwt
    assert jwt_cfg is not None
    if services.provider is None:
        # A JWKS URL without a provider section: a plain client of its own.
        services.provider = Provider(ProviderSettings(issuer=jwt_cfg.issuer))
        services.closers.append(services.provider.aclose)
    provider = services.provider

    async def fetch() -> Mapping[str, object]:
        return await provider.get_json(url or await provider.endpoint("jwks_uri"), "JWKS")

    return fetch
