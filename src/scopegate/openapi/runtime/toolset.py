"""Build the operation tools of one pinned spec: load, select (allowlist), translate, wire up.

Framework neutral; :mod:`scopegate.adapters.adk_openapi` wraps it for ADK.
The toolset owns its HTTP client unless one is passed in; ``aclose()`` releases it.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from urllib.parse import urlsplit

import httpx

from scopegate.errors import ConfigError, UnknownNameError
from scopegate.openapi.loader import load_document
from scopegate.openapi.model import Operation
from scopegate.openapi.runtime.catalog import DEFAULT_MAX_RESULTS, OperationCatalog
from scopegate.openapi.runtime.config import OperationPolicy, ToolsetSettings
from scopegate.openapi.runtime.declared_auth import add_declared_schemes
from scopegate.openapi.runtime.http import make_client
from scopegate.openapi.runtime.ownership import LookupOwner
from scopegate.openapi.runtime.request import pin_base_url
from scopegate.openapi.runtime.tool import OperationTool, ToolRuntime
from scopegate.openapi.select import Selection, select_operations
from scopegate.openapi.translate import TranslateOptions, translate
from scopegate.tools import ToolWrapper

logger = logging.getLogger("scopegate.openapi")


def _base_url(settings: ToolsetSettings, op: Operation, warned: set[str]) -> str:
    """``base_url`` when set (the whole base URL, path included), else the operation's first absolute server."""
    if settings.base_url:
        pinned = pin_base_url(settings.base_url)
        _warn_dropped_path(pinned, op, warned)
        return pinned
    for server in op.servers:
        url = server.default_url()
        if url.startswith(("http://", "https://")):
            return pin_base_url(url)
    raise ConfigError(f"{op.label}: no absolute server URL in the spec; pass base_url")


def _warn_dropped_path(base_url: str, op: Operation, warned: set[str]) -> None:
    """``base_url`` replaces the server URL, path included: say so when that drops the spec's base path.

    ``base_url: http://127.0.0.1:8080`` read as an origin would lose a server's ``/v1``; the behaviour
    stays (a config giving the path it wants keeps working), the warning names the URL requests go to.
    """
    if urlsplit(base_url).path:
        return
    for server in op.servers[:1]:
        path = urlsplit(server.default_url()).path.rstrip("/")
        if path and path not in warned:
            warned.add(path)
            logger.warning(
                "openapi base_url %s replaces the spec's server URL %s, path included: requests go to %s/..., "
                "not under %s (give the path in base_url if the API lives there)",
                base_url,
                server.default_url(),
                base_url,
                path,
            )


class OperationToolset:
    """The tools for ``settings.allow``, sharing one client, credentials and limits."""

    def __init__(self, settings: ToolsetSettings, *, client: httpx.AsyncClient | None = None) -> None:
        if not settings.allow and not settings.include:
            raise ConfigError("an OpenAPI toolset needs an allowlist of operations (or include rules)")
        self.settings = settings
        doc = load_document(settings.spec, allow_external_refs=settings.allow_external_refs)
        add_declared_schemes(doc, settings.security_schemes)
        unknown_schemes = sorted(set(settings.credentials) - set(doc.security_schemes))
        if unknown_schemes:
            # A typo here would otherwise send every request without credentials.
            raise ConfigError(
                f"credentials for security schemes the spec does not define: {unknown_schemes}; "
                f"the spec defines {sorted(doc.security_schemes)}"
            )
        selection = Selection.build(
            allow=settings.allow,
            include=settings.include,
            exclude=settings.exclude,
            include_deprecated=settings.include_deprecated,
        )
        infos = select_operations(doc.infos(), selection)
        options = settings.translate_options or TranslateOptions()
        if settings.strict:
            options = replace(options, strict=True)
        if settings.uploads is not None:
            options = replace(options, file_uploads=True)
        translation = translate(doc, infos, options)
        for decl in translation.tools:
            lost = [o for o in decl.binding.omitted if o.lost]
            if lost:
                logger.warning(
                    "openapi tool %s does not carry: %s",
                    decl.name,
                    "; ".join(f"{o.location} {o.name!r} ({o.reason})" for o in lost),
                )
        self._own_client = client is None
        self.client = client or make_client(settings.timeouts, max_connections=settings.max_connections)
        registry: dict[str, OperationTool] = {}
        runtime = ToolRuntime(self.client, settings, doc.security_schemes, registry)
        used: set[str] = set()
        warned: set[str] = set()
        tools: list[OperationTool] = []
        for decl in translation.tools:
            op = decl.operation
            keys = [k for k in (op.operation_id, decl.name, op.key) if k]
            policy = next((settings.policies[k] for k in keys if k in settings.policies), OperationPolicy())
            used.update(k for k in keys if k in settings.policies)
            tool = OperationTool(decl, runtime, policy, _base_url(settings, op, warned))
            tools.append(tool)
            for key in keys:
                registry[key] = tool
        unused = set(settings.policies) - used
        if unused:
            raise ConfigError(f"policies for operations that are not in the toolset: {sorted(unused)}")
        for tool in tools:
            rule = tool.ownership
            if isinstance(rule, LookupOwner):
                lookup = registry.get(rule.operation)
                if lookup is None or not lookup.read_only:
                    raise ConfigError(f"{tool.name}: ownership lookup {rule.operation!r} must be an allowlisted read")
                missing = set(rule.arguments.values()) - {a.argument for a in tool.declaration.binding.arguments}
                if missing:
                    raise ConfigError(f"{tool.name}: ownership lookup uses unknown argument(s) {sorted(missing)}")
        self.tools: tuple[OperationTool, ...] = tuple(tools)

    def tool(self, name: str) -> OperationTool:
        for tool in self.tools:
            if name in (tool.name, tool.operation.operation_id):
                return tool
        raise UnknownNameError("tool", name, [t.name for t in self.tools])

    async def aclose(self) -> None:
        if self._own_client:
            await self.client.aclose()

    def catalog(
        self, *, guard: ToolWrapper | None = None, max_results: int = DEFAULT_MAX_RESULTS, prefix: str = ""
    ) -> OperationCatalog:
        """These operations as the three catalog tools (``find_operations``, ``describe_operation``,
        ``call_operation``), each operation run under ``guard`` when given; closing the catalog closes this
        toolset: ``ScopegateToolset(toolset.catalog(guard=guard), guard=guard)``."""
        runners = [guard.wrap(t) for t in self.tools] if guard is not None else None
        return OperationCatalog.of(
            list(self.tools), runners, max_results=max_results, prefix=prefix, on_close=self.aclose
        )
