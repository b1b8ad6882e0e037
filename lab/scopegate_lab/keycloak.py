"""Talking to the test realm of a local Keycloak: tokens for its users and clients, key rotation, logout.

For tests and local experiments against :mod:`scopegate_lab.keycloak_node`
(the realm is :func:`scopegate_lab.keycloak_realm.realm`). Administration
uses the realm's own ``scopegate-admin`` service account (``manage-realm``, ``manage-users`` in
this realm only), never the master realm. Synchronous ``httpx`` with timeouts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import httpx
import jwt

from scopegate_lab.keycloak_realm import AGENT_CLIENT, RealmInfo

TIMEOUT = httpx.Timeout(30.0, connect=5.0)


class RealmClient:
    def __init__(self, info: RealmInfo) -> None:
        self.info = info
        self.http = httpx.Client(timeout=TIMEOUT, trust_env=False)

    def close(self) -> None:
        self.http.close()

    # -- tokens ------------------------------------------------------------------------------
    def _token(self, form: Mapping[str, str]) -> dict[str, Any]:
        resp = self.http.post(self.info.token_endpoint, data=dict(form))
        if resp.status_code != 200:
            raise AssertionError(f"token request refused: HTTP {resp.status_code} {resp.text[:300]}")
        data: dict[str, Any] = resp.json()
        return data

    def password_token(self, username: str, *, client: str = AGENT_CLIENT, scopes: Iterable[str] = ()) -> str:
        """An access token for a test user (resource owner password grant: tests only, no browser)."""
        user = self.info.spec.user(username)
        form = {
            "grant_type": "password",
            "client_id": client,
            "client_secret": self.info.secret(client),
            "username": user.username,
            "password": user.password,
        }
        if scopes:
            form["scope"] = " ".join(scopes)
        return str(self._token(form)["access_token"])

    def client_token(self, client: str, *, scopes: Iterable[str] = ()) -> str:
        """An access token for a client's service account (client credentials)."""
        form = {"grant_type": "client_credentials", "client_id": client, "client_secret": self.info.secret(client)}
        if scopes:
            form["scope"] = " ".join(scopes)
        return str(self._token(form)["access_token"])

    @staticmethod
    def claims(token: str) -> dict[str, Any]:
        """A token's claims, unverified (for assertions only)."""
        claims: dict[str, Any] = jwt.decode(token, options={"verify_signature": False})
        return claims

    # -- administration (the realm's own admin service account) -----------------------------
    def _admin(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.client_token(self.info.spec.admin_client)}"}

    def _admin_call(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        resp = self.http.request(method, f"{self.info.admin_url}{path}", headers=self._admin(), **kwargs)
        if resp.status_code >= 400:
            raise AssertionError(f"admin {method} {path}: HTTP {resp.status_code} {resp.text[:300]}")
        return resp

    def signing_keys(self) -> list[dict[str, Any]]:
        """The realm's active RS256 keys (``kid``, ``providerId`` = component id, ``priority``)."""
        keys = self._admin_call("GET", "/keys").json().get("keys", [])
        return [k for k in keys if k.get("algorithm") == "RS256" and k.get("status") == "ACTIVE"]

    def add_signing_key(self, name: str, *, priority: int = 1000) -> tuple[str, str]:
        """A new RSA signing key that outranks the others: (component id, kid). New tokens are signed with it."""
        realm_id = self._admin_call("GET", "").json()["id"]
        body = {
            "name": name,
            "providerId": "rsa-generated",
            "providerType": "org.keycloak.keys.KeyProvider",
            "parentId": realm_id,
            "config": {
                "priority": [str(priority)],
                "enabled": ["true"],
                "active": ["true"],
                "keySize": ["2048"],
                "algorithm": ["RS256"],
            },
        }
        resp = self._admin_call("POST", "/components", json=body)
        component = resp.headers["location"].rstrip("/").rsplit("/", 1)[-1]
        kid = next(k["kid"] for k in self.signing_keys() if k.get("providerId") == component)
        return component, str(kid)

    def remove_component(self, component: str) -> None:
        self._admin_call("DELETE", f"/components/{component}")

    def user_id(self, username: str) -> str:
        found = self._admin_call("GET", "/users", params={"username": username, "exact": "true"}).json()
        return str(found[0]["id"])

    def logout(self, username: str) -> None:
        """End every session of ``username``: its tokens become inactive (introspection says so)."""
        self._admin_call("POST", f"/users/{self.user_id(username)}/logout")
