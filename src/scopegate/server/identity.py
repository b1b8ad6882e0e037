"""The MCP server's identities: from verified tokens (HTTP) or from the config or environment (stdio).

:class:`Identity` and the claim mapping live in :mod:`scopegate.identity` (shared with the ADK
adapter); they are re-exported here for the server modules.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from scopegate.config.model import StdioScope
from scopegate.errors import ConfigError, IdentityError
from scopegate.identity.claims import claim, identity_from_claims
from scopegate.identity.model import Identity

__all__ = [
    "ENV_GROUPS",
    "ENV_TENANT",
    "ENV_USER",
    "Identity",
    "IdentityError",
    "claim",
    "identity_from_claims",
    "stdio_identity",
]

ENV_TENANT = "SCOPEGATE_TENANT"
ENV_USER = "SCOPEGATE_USER"
ENV_GROUPS = "SCOPEGATE_GROUPS"


def stdio_identity(cfg: StdioScope, environ: Mapping[str, str] | None = None) -> Identity:
    """The fixed identity of a stdio server: the config's ``stdio`` section, else the environment."""
    env = os.environ if environ is None else environ
    tenant = cfg.tenant or env.get(ENV_TENANT)
    if not tenant:
        raise ConfigError(
            f"the stdio transport serves one fixed identity: set stdio.tenant in the config or {ENV_TENANT} "
            "in the environment"
        )
    user = cfg.user or env.get(ENV_USER) or None
    groups: list[str] | None = list(cfg.groups) if cfg.groups is not None else None
    if groups is None and env.get(ENV_GROUPS):
        # Empty items are skipped; every other one must follow the identity rule ("a, b" is refused, not stripped).
        groups = [g for g in env[ENV_GROUPS].split(",") if g != ""]
    try:
        return Identity.checked(tenant, user, groups)
    except IdentityError as exc:
        raise ConfigError(f"invalid stdio identity: {exc}") from exc
