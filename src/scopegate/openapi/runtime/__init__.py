"""Calling OpenAPI operations safely at run time, on behalf of one signed-in user.

``OperationToolset(ToolsetSettings(...))`` builds one :class:`OperationTool`
per allowlisted operation; see the modules for each concern: ``request``
(pure request building), ``credentials`` (and ``declared_auth`` for a spec that
declares none), ``uploads`` (files the model names), ``ownership``, ``errors``, ``retry``,
``response`` (bounded shaping), ``http`` (client, timeouts, redirects).
"""

from __future__ import annotations

from scopegate.openapi.runtime.catalog import OperationCatalog
from scopegate.openapi.runtime.config import OperationPolicy, ToolsetSettings
from scopegate.openapi.runtime.credentials import Credential, FromProvider, FromState, FromSubject, Secret
from scopegate.openapi.runtime.declared_auth import DeclaredScheme
from scopegate.openapi.runtime.http import Timeouts
from scopegate.openapi.runtime.ownership import HookOwner, LookupOwner, OwnershipQuestion, ResponseOwner, parse_rule
from scopegate.openapi.runtime.response import ShapeLimits
from scopegate.openapi.runtime.retry import RetryPolicy
from scopegate.openapi.runtime.tool import OperationTool
from scopegate.openapi.runtime.toolset import OperationToolset
from scopegate.openapi.runtime.uploads import UploadLimits

__all__ = [
    "Credential",
    "DeclaredScheme",
    "FromProvider",
    "FromState",
    "FromSubject",
    "HookOwner",
    "LookupOwner",
    "OperationCatalog",
    "OperationPolicy",
    "OperationTool",
    "OperationToolset",
    "OwnershipQuestion",
    "ResponseOwner",
    "RetryPolicy",
    "Secret",
    "ShapeLimits",
    "Timeouts",
    "ToolsetSettings",
    "UploadLimits",
    "parse_rule",
]
