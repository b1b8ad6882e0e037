"""The identity provider as scopegate talks to it: HTTP clients, its metadata, bounded JSON reads.

:class:`Provider` owns an ``httpx2.AsyncClient`` for metadata and keys and,
when scopegate has its own client id at the provider, authlib's
``AsyncOAuth2Client`` (on the same ``httpx2`` the MCP SDK uses) so
introspection and token exchange authenticate the way the provider expects
(``client_secret_basic`` or ``client_secret_post``). Every request has connect
and read timeouts and follows no redirects; bodies are read with a byte limit.
Metadata comes from the configured URL or is discovered from the issuer
(RFC 8414 path insertion, then OpenID Connect Discovery: the three URLs the MCP
authorization spec lists, in its order); the document's ``issuer`` must equal
the configured issuer exactly, or the metadata is refused. Endpoints must be
``https`` unless they are on a loopback host.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import urlsplit, urlunsplit

import httpx2
from authlib.integrations.httpx_client import AsyncOAuth2Client

from scopegate.errors import ConfigError, ProviderUnavailable

log = logging.getLogger("scopegate.identity")

LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})
MAX_DOCUMENT_BYTES = 1 << 20
DEFAULT_TIMEOUT_S = 5.0
ClientAuth = Literal["client_secret_basic", "client_secret_post"]


def check_endpoint(url: str, what: str) -> str:
    """``url`` if it is https, or http on a loopback host; else :class:`ProviderUnavailable`."""
    parts = urlsplit(url)
    if parts.scheme == "https" or (parts.scheme == "http" and (parts.hostname or "") in LOOPBACK):
        return url
    raise ProviderUnavailable(f"{what} {url!r} is not https (only loopback hosts may use http)")


def metadata_urls(issuer: str) -> list[str]:
    """Where an issuer's metadata may be, in the MCP authorization spec's order."""
    parts = urlsplit(issuer)
    path = parts.path.rstrip("/")
    origin = urlunsplit((parts.scheme, parts.netloc, "", "", ""))
    if path:
        return [
            f"{origin}/.well-known/oauth-authorization-server{path}",
            f"{origin}/.well-known/openid-configuration{path}",
            f"{origin}{path}/.well-known/openid-configuration",
        ]
    return [f"{origin}/.well-known/oauth-authorization-server", f"{origin}/.well-known/openid-configuration"]


@dataclass(frozen=True)
class ProviderMetadata:
    """The parts of an authorization server's metadata scopegate uses."""

    issuer: str
    jwks_uri: str | None = None
    token_endpoint: str | None = None
    introspection_endpoint: str | None = None
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def parse(cls, data: Mapping[str, Any], issuer: str) -> ProviderMetadata:
        if data.get("issuer") != issuer:
            raise ProviderUnavailable(f"metadata names issuer {data.get('issuer')!r}, not {issuer!r}; refused")

        def endpoint(name: str) -> str | None:
            value = data.get(name)
            if value is None:
                return None
            if not isinstance(value, str):
                raise ProviderUnavailable(f"metadata field {name} is not a URL")
            return check_endpoint(value, name)

        return cls(
            issuer=issuer,
            jwks_uri=endpoint("jwks_uri"),
            token_endpoint=endpoint("token_endpoint"),
            introspection_endpoint=endpoint("introspection_endpoint"),
            raw=dict(data),
        )


@dataclass(frozen=True)
class ProviderSettings:
    issuer: str
    metadata_url: str | None = None
    client_id: str | None = None
    client_secret: str | None = field(default=None, repr=False)
    client_auth: ClientAuth = "client_secret_basic"
    timeout_s: float = DEFAULT_TIMEOUT_S
    metadata_cache_s: float = 3600.0


class Provider:
    """One authorization server: its HTTP client and cached metadata."""

    def __init__(
        self,
        settings: ProviderSettings,
        *,
        transport: httpx2.AsyncBaseTransport | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.settings = settings
        if settings.metadata_url is not None:
            check_endpoint(settings.metadata_url, "metadata_url")
        timeout = httpx2.Timeout(settings.timeout_s, connect=min(settings.timeout_s, 3.0))
        common: dict[str, Any] = {"timeout": timeout, "follow_redirects": False, "trust_env": False}
        if transport is not None:
            common["transport"] = transport
        self.http = httpx2.AsyncClient(**common)
        self.oauth: AsyncOAuth2Client | None = None
        if settings.client_id is not None:
            if not settings.client_secret:
                raise ConfigError("the provider's client needs a secret (auth.provider.client_secret_env)")
            self.oauth = AsyncOAuth2Client(
                client_id=settings.client_id,
                client_secret=settings.client_secret,
                token_endpoint_auth_method=settings.client_auth,
                **common,
            )
        self._clock = clock
        self._metadata: ProviderMetadata | None = None
        self._fetched_at = 0.0
        self._lock = asyncio.Lock()

    @property
    def issuer(self) -> str:
        return self.settings.issuer

    async def get_json(self, url: str, what: str) -> Mapping[str, Any]:
        """GET a JSON object, at most :data:`MAX_DOCUMENT_BYTES`; :class:`ProviderUnavailable` otherwise."""
        check_endpoint(url, what)
        try:
            async with self.http.stream("GET", url, headers={"Accept": "application/json"}) as resp:
                if resp.status_code != 200:
                    raise ProviderUnavailable(f"{what} {url} answered HTTP {resp.status_code}")
                body = bytearray()
                async for chunk in resp.aiter_bytes():
                    body += chunk
                    if len(body) > MAX_DOCUMENT_BYTES:
                        raise ProviderUnavailable(f"{what} {url} is larger than {MAX_DOCUMENT_BYTES} bytes")
        except httpx2.HTTPError as exc:
            raise ProviderUnavailable(f"{what} {url} could not be read: {type(exc).__name__}") from exc
        try:
            data = json.loads(bytes(body))
        except ValueError as exc:
            raise ProviderUnavailable(f"{what} {url} is not JSON") from exc
        if not isinstance(data, dict):
            raise ProviderUnavailable(f"{what} {url} is not a JSON object")
        return data

    async def metadata(self) -> ProviderMetadata:
        """The provider's metadata (cached for ``metadata_cache_s``; a stale copy is kept if a refresh fails)."""
        fresh = self._metadata is not None and self._clock() - self._fetched_at < self.settings.metadata_cache_s
        if fresh:
            assert self._metadata is not None
            return self._metadata
        async with self._lock:
            if self._metadata is not None and self._clock() - self._fetched_at < self.settings.metadata_cache_s:
                return self._metadata
            try:
                self._metadata = await self._discover()
                self._fetched_at = self._clock()
            except ProviderUnavailable:
                if self._metadata is None:
                    raise
                log.warning("provider metadata refresh failed; keeping the previous copy", exc_info=True)
                self._fetched_at = self._clock() - self.settings.metadata_cache_s + 30.0  # retry in 30 s
            return self._metadata

    async def _discover(self) -> ProviderMetadata:
        urls = [self.settings.metadata_url] if self.settings.metadata_url else metadata_urls(self.issuer)
        failures: list[str] = []
        for url in urls:
            try:
                return ProviderMetadata.parse(await self.get_json(url, "metadata"), self.issuer)
            except ProviderUnavailable as exc:  # absent, unreadable, or for another issuer: try the next one
                failures.append(str(exc))
        raise ProviderUnavailable("no usable metadata for issuer " + self.issuer + ": " + "; ".join(failures))

    async def endpoint(self, name: Literal["jwks_uri", "token_endpoint", "introspection_endpoint"]) -> str:
        found: str | None = getattr(await self.metadata(), name)
        if found is None:
            raise ProviderUnavailable(f"the provider's metadata has no {name}")
        return found

    def oauth_client(self, what: str) -> AsyncOAuth2Client:
        if self.oauth is None:
            raise ConfigError(f"{what} needs scopegate's own client at the provider (auth.provider.client_id)")
        return self.oauth

    async def aclose(self) -> None:
        await self.http.aclose()
        if self.oauth is not None:
            await self.oauth.aclose()
