"""Settings of an OpenAPI toolset at run time: one object, per-operation policies inside."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from scopegate.openapi.runtime.credentials import CredentialSource
from scopegate.openapi.runtime.http import RedirectPolicy, Timeouts
from scopegate.openapi.runtime.ownership import OwnershipRule, parse_rule
from scopegate.openapi.runtime.request import RequestLimits
from scopegate.openapi.runtime.response import ShapeLimits
from scopegate.openapi.runtime.retry import RetryPolicy
from scopegate.openapi.translate import TranslateOptions
from scopegate.scope import ScopeKeys


@dataclass(frozen=True)
class OperationPolicy:
    """How one operation is exposed and checked.

    * ``projection``: response paths to keep (``("id", "status", "shipping_address.city")``).
    * ``ownership``: a rule (or its text form, see :func:`~.ownership.parse_rule`).
    * ``bind``: arguments filled from session state and hidden from the model
      (``{"customer_id": "user_id"}``): whose data a list returns is never the model's choice.
    * ``confirm``: ask the user before sending; default: state-changing methods ask.
    * ``retry``: allow retries where the method permits them.
    """

    projection: tuple[str, ...] | None = None
    ownership: OwnershipRule | str | None = None
    bind: Mapping[str, str] = field(default_factory=dict)
    confirm: bool | None = None
    retry: bool = True
    description: str | None = None

    def ownership_rule(self) -> OwnershipRule | None:
        return parse_rule(self.ownership) if isinstance(self.ownership, str) else self.ownership


@dataclass(frozen=True)
class ToolsetSettings:
    """Everything an OpenAPI toolset is built from.

    ``spec`` is a path or a parsed document; ``allow`` the operations to expose
    (operationIds or ``"METHOD /path"``). ``base_url`` pins every request to one
    origin; without it, each operation's first (absolute) server is used.
    ``credentials`` maps security scheme keys to sources. ``policies`` are keyed
    by operationId (or tool name).
    """

    spec: str | os.PathLike[str] | Mapping[str, Any]
    allow: tuple[str, ...]
    base_url: str | None = None
    credentials: Mapping[str, CredentialSource] = field(default_factory=dict)
    policies: Mapping[str, OperationPolicy] = field(default_factory=dict)
    timeouts: Timeouts = field(default_factory=Timeouts)
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    shape: ShapeLimits = field(default_factory=ShapeLimits)
    request_limits: RequestLimits = field(default_factory=RequestLimits)
    max_response_bytes: int = 1_000_000
    redirects: RedirectPolicy = "same-origin"
    scope_keys: ScopeKeys = field(default_factory=lambda: ScopeKeys(tenant="user_id", user="user_id"))
    request_id_header: str | None = "X-Request-ID"
    translate_options: TranslateOptions | None = None
    # Call log: argument names only, unless this is set (values may hold personal data).
    log_argument_values: bool = False
    max_connections: int = 20
