"""The realm the local Keycloak imports: two tenants, users, clients and scopes (a pure builder, no I/O).

:func:`realm` returns a Keycloak realm representation (the JSON ``kc.sh
--import-realm`` reads) from a :class:`RealmSpec`. The default spec is what the
tests and ``scopegate engine keycloak start`` use:

* client scopes: ``basic`` (``sub``, ``preferred_username``), ``tenant`` (the
  ``tenant_id``, ``customer_id`` and ``groups`` claims from user attributes and
  groups), ``mcp-audience`` (adds the MCP server's client id to ``aud``),
  ``orders-audience`` (adds the orders API), and the permission scopes
  ``tickets:read``, ``orders:read``, ``orders:write``;
* clients: the MCP server as resource server (``scopegate-mcp``, confidential,
  allowed to introspect and to run standard token exchange for the orders API),
  the orders API (``orders-api``, no flows: an audience only), a test agent
  (``agent-cli``: password grant), one client-credentials bot per tenant
  (``acme-bot``, ``globex-bot``, their service accounts carrying the tenant),
  a client whose tokens are not for the MCP server (``reporting-app``), a
  short-lived one (``short-lived``) and an administrator for tests that rotate
  keys and end sessions (``scopegate-admin``: ``manage-realm`` and ``manage-users`` in this realm only);
* users: ``alice`` (tenant ``acme``, customer ``cust_alice``), ``carol``
  (``acme``, no customer), ``bob`` (``globex``, ``cust_bob``) and ``nobody``
  (no tenant).

:func:`rotation_spec` is a second, smaller realm (``scopegate-rotation``) for
tests that rotate and remove signing keys.

``tenant`` and ``customer_id`` are declared user-profile attributes that only
administrators may edit: a user cannot change their own tenant through the
account console (an unmanaged attribute policy of ``ENABLED`` would let them).

Secrets and passwords are fixed, fake, and only meaningful for a Keycloak bound
to 127.0.0.1 by the tests.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

REALM = "scopegate"
MCP_CLIENT = "scopegate-mcp"
ORDERS_CLIENT = "orders-api"
AGENT_CLIENT = "agent-cli"
ADMIN_CLIENT = "scopegate-admin"
READ_SCOPES = ("tickets:read", "orders:read")
WRITE_SCOPES = ("orders:write",)
PASSWORD = "scopegate-test-password"


@dataclass(frozen=True)
class RealmUser:
    username: str
    tenant: str | None
    customer_id: str | None = None
    groups: tuple[str, ...] = ()
    password: str = PASSWORD

    @property
    def email(self) -> str:
        return f"{self.username}@example.test"


@dataclass(frozen=True)
class RealmClient:
    client_id: str
    secret: str | None = None  # None: a public client
    password_grant: bool = False
    service_account_tenant: str | None = None  # client credentials, the service account in this tenant
    default_scopes: tuple[str, ...] = ("basic", "tenant", "mcp-audience")
    optional_scopes: tuple[str, ...] = (*READ_SCOPES, *WRITE_SCOPES)
    token_exchange: bool = False
    access_token_lifespan_s: int | None = None
    bearer_only: bool = False  # an audience, not an OAuth client (no flow enabled)


@dataclass(frozen=True)
class RealmSpec:
    name: str = REALM
    access_token_lifespan_s: int = 300
    users: tuple[RealmUser, ...] = (
        RealmUser("alice", "acme", "cust_alice", ("support",)),
        RealmUser("carol", "acme", None, ("billing",)),
        RealmUser("bob", "globex", "cust_bob", ("support",)),
        RealmUser("nobody", None),
    )
    clients: tuple[RealmClient, ...] = (
        RealmClient(
            MCP_CLIENT,
            secret="scopegate-mcp-secret-5b1f0c9e",
            default_scopes=("basic", "tenant", "orders-audience"),
            token_exchange=True,
        ),
        RealmClient(ORDERS_CLIENT, secret="orders-api-secret-7d2e4a61", bearer_only=True, default_scopes=()),
        RealmClient(AGENT_CLIENT, secret="agent-cli-secret-3c8a9f14", password_grant=True),
        RealmClient(
            "acme-bot",
            secret="acme-bot-secret-91e0d7b2",
            service_account_tenant="acme",
            default_scopes=("basic", "tenant", "mcp-audience", "tickets:read"),
        ),
        RealmClient(
            "globex-bot",
            secret="globex-bot-secret-4f6b2c80",
            service_account_tenant="globex",
            default_scopes=("basic", "tenant", "mcp-audience", "tickets:read"),
        ),
        RealmClient(
            "reporting-app",
            secret="reporting-app-secret-0a7c5e39",
            password_grant=True,
            default_scopes=("basic", "tenant"),
        ),
        RealmClient(
            "short-lived", secret="short-lived-secret-6e3d1b95", password_grant=True, access_token_lifespan_s=2
        ),
        RealmClient(
            ADMIN_CLIENT,
            secret="scopegate-admin-secret-2d9f7a43",
            service_account_tenant=None,
            default_scopes=("basic",),
            optional_scopes=(),
        ),
    )
    scopes: tuple[str, ...] = (*READ_SCOPES, *WRITE_SCOPES)
    mcp_client: str = MCP_CLIENT
    orders_client: str = ORDERS_CLIENT
    admin_client: str = ADMIN_CLIENT

    def client(self, client_id: str) -> RealmClient:
        return next(c for c in self.clients if c.client_id == client_id)

    def user(self, username: str) -> RealmUser:
        return next(u for u in self.users if u.username == username)


def rotation_spec() -> RealmSpec:
    """A second, small realm whose keys tests may rotate and remove without disturbing the main one."""
    main = RealmSpec()
    return RealmSpec(
        name=f"{REALM}-rotation",
        users=(main.user("bob"),),
        clients=(main.client(MCP_CLIENT), main.client(AGENT_CLIENT), main.client(ADMIN_CLIENT)),
    )


def _mapper(name: str, mapper: str, config: Mapping[str, str]) -> dict[str, Any]:
    return {"name": name, "protocol": "openid-connect", "protocolMapper": mapper, "config": dict(config)}


_TOKEN_CLAIM = {"access.token.claim": "true", "introspection.token.claim": "true", "id.token.claim": "false"}


def _attribute(attribute: str, claim: str) -> dict[str, Any]:
    config = {**_TOKEN_CLAIM, "user.attribute": attribute, "claim.name": claim, "jsonType.label": "String"}
    return _mapper(claim, "oidc-usermodel-attribute-mapper", config)


def _audience(name: str, client_id: str) -> dict[str, Any]:
    return _mapper(name, "oidc-audience-mapper", {**_TOKEN_CLAIM, "included.client.audience": client_id})


def _client_scope(name: str, mappers: Sequence[dict[str, Any]] = (), *, in_scope: bool = True) -> dict[str, Any]:
    return {
        "name": name,
        "protocol": "openid-connect",
        "attributes": {"include.in.token.scope": "true" if in_scope else "false", "display.on.consent.screen": "false"},
        "protocolMappers": list(mappers),
    }


def client_scopes(spec: RealmSpec) -> list[dict[str, Any]]:
    basic = [
        _mapper("sub", "oidc-sub-mapper", {"access.token.claim": "true", "introspection.token.claim": "true"}),
        _mapper(
            "username",
            "oidc-usermodel-attribute-mapper",
            {
                **_TOKEN_CLAIM,
                "user.attribute": "username",
                "claim.name": "preferred_username",
                "jsonType.label": "String",
            },
        ),
    ]
    tenant = [
        _attribute("tenant", "tenant_id"),
        _attribute("customer_id", "customer_id"),
        _mapper(
            "groups", "oidc-group-membership-mapper", {**_TOKEN_CLAIM, "claim.name": "groups", "full.path": "false"}
        ),
    ]
    return [
        _client_scope("basic", basic, in_scope=False),
        _client_scope("tenant", tenant, in_scope=False),
        _client_scope("mcp-audience", [_audience("mcp audience", spec.mcp_client)], in_scope=False),
        _client_scope("orders-audience", [_audience("orders audience", spec.orders_client)], in_scope=False),
        *(_client_scope(name) for name in spec.scopes),
    ]


def client_representation(client: RealmClient) -> dict[str, Any]:
    attributes: dict[str, str] = {}
    if client.token_exchange:
        attributes["standard.token.exchange.enabled"] = "true"
    if client.access_token_lifespan_s is not None:
        attributes["access.token.lifespan"] = str(client.access_token_lifespan_s)
    service_account = client.service_account_tenant is not None or client.client_id == ADMIN_CLIENT
    mappers = []
    if client.client_id == ADMIN_CLIENT:  # its realm-management roles, where the admin API looks for them
        mappers.append(
            _mapper(
                "client roles",
                "oidc-usermodel-client-role-mapper",
                {**_TOKEN_CLAIM, "claim.name": "resource_access.${client_id}.roles", "multivalued": "true"},
            )
        )
    return {
        "clientId": client.client_id,
        "enabled": True,
        "protocol": "openid-connect",
        "publicClient": client.secret is None,
        **({"secret": client.secret, "clientAuthenticatorType": "client-secret"} if client.secret else {}),
        "standardFlowEnabled": False,
        "implicitFlowEnabled": False,
        "directAccessGrantsEnabled": client.password_grant and not client.bearer_only,
        "serviceAccountsEnabled": service_account and not client.bearer_only,
        # Only the admin client carries its roles (realm-management) into its tokens.
        "fullScopeAllowed": client.client_id == ADMIN_CLIENT,
        "defaultClientScopes": list(client.default_scopes),
        "optionalClientScopes": list(client.optional_scopes),
        "attributes": attributes,
        "protocolMappers": mappers,
    }


def _user(user: RealmUser) -> dict[str, Any]:
    attributes: dict[str, list[str]] = {}
    if user.tenant is not None:
        attributes["tenant"] = [user.tenant]
    if user.customer_id is not None:
        attributes["customer_id"] = [user.customer_id]
    return {
        "username": user.username,
        "enabled": True,
        "email": user.email,
        "emailVerified": True,
        "firstName": user.username.title(),
        "lastName": "Test",
        "attributes": attributes,
        "groups": [f"/{g}" for g in user.groups],
        "credentials": [{"type": "password", "value": user.password, "temporary": False}],
    }


def _service_account(client: RealmClient) -> dict[str, Any]:
    user: dict[str, Any] = {
        "username": f"service-account-{client.client_id}",
        "enabled": True,
        "serviceAccountClientId": client.client_id,
        "attributes": {"tenant": [client.service_account_tenant]} if client.service_account_tenant else {},
    }
    if client.client_id == ADMIN_CLIENT:
        user["clientRoles"] = {"realm-management": ["manage-realm", "view-realm", "manage-users", "view-users"]}
    return user


def _attribute_def(name: str, *, required: bool = False, user_edit: bool = True) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": name,
        "displayName": name,
        "permissions": {"view": ["admin", "user"], "edit": ["admin", "user"] if user_edit else ["admin"]},
        "multivalued": False,
    }
    if required:
        out["required"] = {"roles": ["user"]}
    return out


def user_profile() -> dict[str, Any]:
    """The declarative user profile: the usual four attributes plus admin-only ``tenant`` and ``customer_id``."""
    username = _attribute_def("username")
    username["validations"] = {"length": {"min": 3, "max": 255}, "username-prohibited-characters": {}}
    return {
        "attributes": [
            username,
            _attribute_def("email"),
            _attribute_def("firstName"),
            _attribute_def("lastName"),
            _attribute_def("tenant", user_edit=False),
            _attribute_def("customer_id", user_edit=False),
        ],
        "unmanagedAttributePolicy": "ADMIN_VIEW",
    }


def realm(spec: RealmSpec | None = None) -> dict[str, Any]:
    """The realm representation for ``spec`` (the default spec when None)."""
    spec = spec or RealmSpec()
    groups = sorted({g for u in spec.users for g in u.groups})
    service_accounts = [c for c in spec.clients if c.service_account_tenant is not None or c.client_id == ADMIN_CLIENT]
    return {
        "realm": spec.name,
        "enabled": True,
        "sslRequired": "none",
        "accessTokenLifespan": spec.access_token_lifespan_s,
        # Test users only: a cheap hash keeps every password grant (and the import) fast.
        "passwordPolicy": "hashAlgorithm(pbkdf2-sha256) and hashIterations(1000)",
        "defaultDefaultClientScopes": [],
        "defaultOptionalClientScopes": [],
        "clientScopes": client_scopes(spec),
        "clients": [client_representation(c) for c in spec.clients],
        "groups": [{"name": g, "path": f"/{g}"} for g in groups],
        "users": [_user(u) for u in spec.users] + [_service_account(c) for c in service_accounts],
        "components": {
            "org.keycloak.userprofile.UserProfileProvider": [
                {
                    "providerId": "declarative-user-profile",
                    "subComponents": {},
                    "config": {"kc.user.profile.config": [json.dumps(user_profile(), separators=(",", ":"))]},
                }
            ]
        },
    }


@dataclass(frozen=True)
class RealmInfo:
    """Where things are in a running realm (the tests' view of it)."""

    base_url: str
    spec: RealmSpec = field(default_factory=RealmSpec)

    @property
    def issuer(self) -> str:
        return f"{self.base_url}/realms/{self.spec.name}"

    @property
    def token_endpoint(self) -> str:
        return f"{self.issuer}/protocol/openid-connect/token"

    @property
    def jwks_uri(self) -> str:
        return f"{self.issuer}/protocol/openid-connect/certs"

    @property
    def admin_url(self) -> str:
        return f"{self.base_url}/admin/realms/{self.spec.name}"

    def secret(self, client_id: str) -> str:
        secret = self.spec.client(client_id).secret
        if secret is None:
            raise KeyError(f"{client_id} is a public client")
        return secret
