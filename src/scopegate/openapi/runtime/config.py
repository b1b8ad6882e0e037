"""Settings of an OpenAPI toolset at run time: one object, per-operation policies inside."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from scopegate.openapi.runtime.credentials import CredentialSource
from scopegate.openapi.runtime.declared_auth import DeclaredScheme
from scopegate.openapi.runtime.http import RedirectPolicy, Timeouts
from scopegate.openapi.runtime.ownership import OwnershipRule, parse_rule
from scopegate.openapi.runtime.request import RequestLimits
from scopegate.openapi.runtime.response import ShapeLimits
from scopegate.openapi.runtime.retry import RetryPolicy
from scopegate.openapi.runtime.sensitive import DEFAULT_SENSITIVE_FIELDS
from scopegate.openapi.runtime.uploads import UploadLimits
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
    * ``sensitive``: argument names or dotted paths (``"server.root_pass"``) whose values
      are sent but never logged, shown in a confirmation or echoed in an error (besides
      what the spec marks ``format: password`` or ``writeOnly``).
    """

    projection: tuple[str, ...] | None = None
    ownership: OwnershipRule | str | None = None
    bind: Mapping[str, str] = field(default_factory=dict)
    confirm: bool | None = None
    retry: bool = True
    description: str | None = None
    sensitive: tuple[str, ...] = ()

    def ownership_rule(self) -> OwnershipRule | None:
        return parse_rule(self.ownership) if isinstance(self.ownership, str) else self.ownership


@dataclass(frozen=True)
class ToolsetSettings:
    """Everything an OpenAPI toolset is built from.

    ``spec`` is a path (for a multi-file spec, its root file) or a parsed
    document; ``allow`` the operations to expose (operationIds or ``"METHOD
    /path"``), and/or ``include`` rules that add read-only operations
    (``"GET /repos/**"``, ``"tag:issues"``; ``exclude`` removes, deprecated
    operations only with ``include_deprecated``). ``base_url`` is the whole
    base URL every request goes to, path included: it replaces the spec's
    server URL (``https://staging.example.test/v1`` + ``/orders``), and
    redirects must stay on its origin and under its path; without it, each
    operation's first (absolute) server is used. ``credentials`` maps security scheme keys to sources.
    ``security_schemes`` declares how a credential is sent where the spec
    declares none (see :mod:`.declared_auth`); their keys take credentials too.
    ``uploads`` turns on multipart and binary request bodies whose files are
    named by the model and read from the session (see :mod:`.uploads`).
    ``policies`` are keyed by operationId (or tool name).
    ``allow_external_refs`` lets ``$ref`` reach other files in the spec's folder
    (never outside it, never the network); ``strict`` refuses to build when a
    tool would not carry one of its inputs (see ``scopegate openapi inventory``).
    """

    spec: str | os.PathLike[str] | Mapping[str, Any]
    allow: tuple[str, ...]
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    include_deprecated: bool = False
    allow_external_refs: bool = False
    strict: bool = False
    base_url: str | None = None
    credentials: Mapping[str, CredentialSource] = field(default_factory=dict)
    security_schemes: Mapping[str, DeclaredScheme] = field(default_factory=dict)
    policies: Mapping[str, OperationPolicy] = field(default_factory=dict)
    timeouts: Timeouts = field(default_factory=Timeouts)
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    shape: ShapeLimits = field(default_factory=ShapeLimits)
    request_limits: RequestLimits = field(default_factory=RequestLimits)
    # Multipart and binary bodies whose files the model names from the session (None: refused).
    uploads: UploadLimits | None = None
    max_response_bytes: int = 1_000_000
    redirects: RedirectPolicy = "same-origin"
    scope_keys: ScopeKeys = field(default_factory=lambda: ScopeKeys(tenant="user_id", user="user_id"))
    request_id_header: str | None = "X-Request-ID"
    translate_options: TranslateOptions | None = None
    # Call log: argument names only, unless this is set (values may hold personal data).
    log_argument_values: bool = False
    # Field names (any depth, case-insensitive) whose values are masked like format: password.
    sensitive_fields: tuple[str, ...] = DEFAULT_SENSITIVE_FIELDS
    max_connections: int = 20
