"""One OpenAPI operation as a :class:`scopegate.tools.ScopedTool`.

``run`` goes: confirmation refused? -> scope and bound arguments from session
state -> build and validate the request (pure) -> read the files it uploads from
the session (``ctx.files``) -> confirmation asked? ->
ownership check before the call (lookup or hook) -> credentials -> send with
timeouts, redirect policy, byte limit and retries where allowed -> map errors
-> ownership check on the response -> redact secrets -> shape -> result.
It never raises: every failure is an error envelope. Sensitive argument values
(:mod:`.sensitive`) are masked in the call log and the confirmation prompt and
redacted, like credentials, from everything the API sends back and from the
HTTP libraries' logs. A large body is parsed, redacted and shaped in a worker
thread, so the event loop keeps running.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import httpx

from scopegate.context import CallContext
from scopegate.errors import ArgumentsInvalid, ConfigError, NoCredentials, tool_error
from scopegate.openapi.model import SecurityScheme
from scopegate.openapi.runtime import errors as E
from scopegate.openapi.runtime.config import OperationPolicy, ToolsetSettings
from scopegate.openapi.runtime.credentials import AuthParts, Redactor, resolve_auth
from scopegate.openapi.runtime.http import HttpOutcome, exchange
from scopegate.openapi.runtime.ownership import (
    HookOwner,
    LookupOwner,
    OwnershipQuestion,
    OwnershipRule,
    ResponseOwner,
    ask_hook,
    owner_matches,
    state_keys,
)
from scopegate.openapi.runtime.request import BuiltRequest, RequestBuilder
from scopegate.openapi.runtime.reserved_names import ReservedNames, undeclared_credential_names
from scopegate.openapi.runtime.response import UNTRUSTED_NOTE, json_value_estimate, parse_body, shape
from scopegate.openapi.runtime.retry import Verdict, may_retry, with_retries
from scopegate.openapi.runtime.sensitive import SensitiveFields
from scopegate.openapi.translate import ToolDeclaration, TranslateOptions
from scopegate.scope import Scope, ScopeMissing, read_scope
from scopegate.tools import LogFields, ToolOutcome

logger = logging.getLogger("scopegate.openapi.calls")
# Bodies up to this size are parsed and shaped inline; larger ones in a worker thread.
INLINE_BODY_BYTES = 64 * 1024
# A JSON body may hold at most one value per this many bytes of the byte limit (and at least
# MIN_JSON_VALUES): parsed values cost 50-200 bytes each, so memory stays a small multiple of the limit.
BYTES_PER_JSON_VALUE = 10
MIN_JSON_VALUES = 1000


def bound_note(bound: Sequence[str]) -> str:
    """What a bound (server-supplied) argument means for the model: only the caller's own data."""
    names = ", ".join(bound)
    return (
        f"Only the signed-in user's own data: the server sets {names} from the session, so this cannot "
        "return another person's data."
    )


@dataclass
class ToolRuntime:
    """What the tools of one toolset share: the HTTP client, settings, schemes, each other."""

    client: httpx.AsyncClient
    settings: ToolsetSettings
    schemes: Mapping[str, SecurityScheme]
    registry: dict[str, OperationTool]


@dataclass(frozen=True)
class _Fetched:
    status: int
    kind: str
    data: Any
    size: int = 0


@dataclass
class _CallInfo:
    http_status: int | None = None
    attempts: int = 0
    latency_ms: float = 0.0
    upstream_request_id: str | None = None


def _given_key(ctx: CallContext) -> str | None:
    """An idempotency key a composing tool passed (``CallContext.extra``; never from the model)."""
    key = ctx.extra.get("idempotency_key")
    return key if isinstance(key, str) and re.fullmatch(r"[A-Za-z0-9_-]{8,128}", key) else None


def _blank(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


class OperationTool:
    """A tool for one operation of a pinned spec. Implements ``scopegate.tools.ScopedTool``."""

    family = "openapi"

    def __init__(
        self,
        declaration: ToolDeclaration,
        runtime: ToolRuntime,
        policy: OperationPolicy,
        base_url: str,
    ) -> None:
        self.declaration = declaration
        self.operation = declaration.operation
        self.runtime = runtime
        self.policy = policy
        self.name = declaration.name
        self.read_only = not self.operation.state_changing
        self.scope_keys = runtime.settings.scope_keys
        self.requires_confirmation = policy.confirm if policy.confirm is not None else self.operation.state_changing
        self.ownership: OwnershipRule | None = policy.ownership_rule()
        settings = runtime.settings
        checked = set(self.ownership.arguments.values()) if isinstance(self.ownership, LookupOwner) else set()
        self.reserved_names = ReservedNames.build(
            declaration.binding,
            bound=set(policy.bind),
            checked=checked,
            schemes=runtime.schemes,
            credential_names=undeclared_credential_names(
                declaration.binding, (settings.translate_options or TranslateOptions()).sensitive_names
            ),
        )
        self.builder = RequestBuilder(
            declaration.binding,
            base_url,
            hidden=(*policy.bind, *self.reserved_names.shadowed),
            limits=settings.request_limits,
            uploads=settings.uploads,
        )
        unknown = set(policy.bind) - {a.argument for a in declaration.binding.arguments}
        if unknown:
            raise ConfigError(f"{self.name}: bound argument(s) {sorted(unknown)} are not arguments of the operation")
        if isinstance(self.ownership, ResponseOwner) and self.operation.state_changing:
            raise ConfigError(
                f"{self.name}: a state-changing operation needs an ownership check before the call "
                "(a lookup rule or a 'before' hook), not one on its response"
            )
        if isinstance(self.ownership, HookOwner) and self.ownership.phase == "after" and self.operation.state_changing:
            raise ConfigError(f"{self.name}: a state-changing operation needs a 'before' ownership hook")
        description = policy.description or declaration.description
        if policy.bind:
            # Otherwise a model lists the caller's own records and presents them as someone else's.
            description += f"\n\n{bound_note(sorted(policy.bind))}"
        if self.requires_confirmation:
            description += "\n\nChanges data: the user is asked to confirm before the request is sent."
        self.description = description
        self._parameters = self._visible_parameters()
        self.sensitive = SensitiveFields.build(declaration.binding, policy.sensitive, settings.sensitive_fields)

    # ------------------------------------------------------------ protocol
    def parameters_schema(self) -> dict[str, Any]:
        copy: dict[str, Any] = json.loads(json.dumps(self._parameters))  # a private copy
        return copy

    def _visible_parameters(self) -> dict[str, Any]:
        params: dict[str, Any] = json.loads(json.dumps(self.declaration.parameters))
        hidden = self.builder.hidden
        props = params.get("properties") or {}
        for name in hidden:
            props.pop(name, None)
        if "required" in params:
            params["required"] = [r for r in params["required"] if r not in hidden]
            if not params["required"]:
                del params["required"]
        return dict(params)

    def scope_of(self, ctx: CallContext) -> Scope | None:
        try:
            return read_scope(ctx.state, self.scope_keys)
        except ScopeMissing:
            return None

    def describe(self, args: Mapping[str, Any]) -> LogFields:
        known = self.builder.model_arguments
        return {
            "tool": self.name,
            "operation_id": self.operation.operation_id or self.operation.key,
            "method": self.operation.method,
            "path": self.operation.path,
            "arguments": sorted(k for k in args if k in known),
        }

    def _log(self, args: Mapping[str, Any], result: Mapping[str, Any], info: _CallInfo) -> LogFields:
        """Call-log fields: argument names, never values (unless ``log_argument_values``)."""
        known = self.builder.model_arguments
        fields: dict[str, Any] = {
            "tool": self.name,
            "operation_id": self.operation.operation_id or self.operation.key,
            "method": self.operation.method,
            "path": self.operation.path,
            "status": info.http_status,
            "outcome": "ok" if result.get("status") == "ok" else str(result.get("error_code")),
            "latency_ms": round(info.latency_ms, 2),
            "attempts": info.attempts,
            "request_id": result.get("request_id"),
            "arguments": sorted(k for k in args if k in known),
        }
        unknown = [k for k in args if k not in known]
        if unknown:
            fields["unknown_arguments"] = len(unknown)
        if info.upstream_request_id:
            fields["upstream_request_id"] = info.upstream_request_id[:128]
        if self.runtime.settings.log_argument_values:
            fields["argument_values"] = self.sensitive.mask({k: args[k] for k in sorted(args) if k in known})
        return fields

    async def run(self, args: Mapping[str, Any], ctx: CallContext) -> ToolOutcome:
        request_id = uuid.uuid4().hex[:16]
        info = _CallInfo()
        started = time.monotonic()
        safe_args: Mapping[str, Any] = args if isinstance(args, Mapping) else {}
        try:
            result = await self._run(dict(safe_args), ctx, request_id, info, started)
        except Exception as exc:  # never into the agent loop; no details to the model
            logger.error("openapi tool %s failed internally: %s", self.name, type(exc).__name__)
            result = E.internal_error()
        result["request_id"] = request_id
        info.latency_ms = (time.monotonic() - started) * 1000.0
        fields = self._log(safe_args, result, info)
        if logger.isEnabledFor(logging.INFO):
            logger.info(json.dumps(fields, default=str, sort_keys=True))
        return ToolOutcome(result, fields)

    # ------------------------------------------------------------ the call
    async def _run(
        self, args: dict[str, Any], ctx: CallContext, request_id: str, info: _CallInfo, started: float
    ) -> dict[str, Any]:
        if self.requires_confirmation and ctx.confirmed is False:
            return tool_error(
                E.CONFIRMATION_REJECTED, "The user rejected this call; nothing was sent.", retryable=False
            )
        state = ctx.state
        for key in (*self.policy.bind.values(), *state_keys(self.ownership)):
            if _blank(state.get(key)):
                return E.no_scope_error()
        bound = {arg: state[key] for arg, key in self.policy.bind.items()}
        idempotency_key = (_given_key(ctx) or uuid.uuid4().hex) if self.builder.idempotency_header else None
        try:
            built = self._build(args, bound, idempotency_key)
        except ArgumentsInvalid as exc:
            return E.bad_arguments(exc.problems)
        if built.upload is not None:  # the named files, read and checked before the user is asked
            attached = await self._attach_files(built, ctx)
            if isinstance(attached, dict):
                return attached
            built = attached
        if self.requires_confirmation and ctx.confirmed is not True:
            return self._confirmation_required(args)
        deadline = started + self.runtime.settings.timeouts.total

        rule = self.ownership
        if isinstance(rule, LookupOwner):
            refused = await self._lookup_refuses(rule, args, ctx, request_id, deadline)
            if refused is not None:
                return refused
        elif isinstance(rule, HookOwner) and rule.phase == "before":
            question = OwnershipQuestion(self.name, args, state, "before")
            if not await ask_hook(rule.hook, question):
                return E.not_found()

        fetched = await self._send(built, ctx, request_id, deadline, info, args)
        if isinstance(fetched, dict):
            return fetched
        if isinstance(rule, ResponseOwner) and not owner_matches(fetched.data, rule.path, state.get(rule.state_key)):
            return E.not_found()
        if isinstance(rule, HookOwner) and rule.phase == "after":
            question = OwnershipQuestion(self.name, args, state, "after", response=fetched.data)
            if not await ask_hook(rule.hook, question):
                return E.not_found()
        if fetched.size > INLINE_BODY_BYTES:
            return await asyncio.to_thread(self._result, fetched)
        return self._result(fetched)

    def _build(
        self, args: Mapping[str, Any], bound: Mapping[str, Any], idempotency_key: str | None = None
    ) -> BuiltRequest:
        """The request, refused if an argument smuggled a server-owned name onto the wire."""
        built = self.builder.build(args, bound=bound, idempotency_key=idempotency_key)
        smuggled = self.reserved_names.check(built, {**args, **bound})
        if smuggled:
            raise ArgumentsInvalid(smuggled)
        return built

    async def _attach_files(self, built: BuiltRequest, ctx: CallContext) -> BuiltRequest | dict[str, Any]:
        plan, pending = self.builder.upload, built.upload
        assert plan is not None and pending is not None
        loaded = await plan.load(pending, ctx.files)
        if isinstance(loaded, dict):
            return loaded
        body, content_type = plan.encode(pending, loaded)
        return replace(built, body=body, content_type=content_type, upload=None)

    def _confirmation_required(self, args: Mapping[str, Any]) -> dict[str, Any]:
        return tool_error(
            E.CONFIRMATION_REQUIRED,
            "This call changes data and needs the user's approval; nothing was sent.",
            retryable=False,
            confirmation={
                "hint": self.confirmation_hint(args),
                "payload": self.confirmation_payload(args),
            },
        )

    def confirmation_payload(self, args: Mapping[str, Any]) -> dict[str, Any]:
        op = self.operation
        known = self.builder.model_arguments
        return {
            "tool": self.name,
            "operation": op.operation_id or op.key,
            "method": op.method,
            "path": op.path,
            "arguments": self.sensitive.mask({k: args[k] for k in sorted(args) if k in known}),
        }

    def confirmation_hint(self, args: Mapping[str, Any]) -> str:
        op = self.operation
        what = op.summary or op.label
        masked = self.sensitive.mask(args)
        shown = ", ".join(f"{k}={json.dumps(masked[k], ensure_ascii=False)[:80]}" for k in sorted(masked))
        return f"Approve '{what}' ({op.method} {op.path}) with {shown or 'no arguments'}?"

    async def _lookup_refuses(
        self, rule: LookupOwner, args: Mapping[str, Any], ctx: CallContext, request_id: str, deadline: float
    ) -> dict[str, Any] | None:
        lookup = self.runtime.registry.get(rule.operation)
        if lookup is None:
            return E.internal_error()
        lookup_args = {la: args[a] for la, a in rule.arguments.items() if a in args}
        fetched = await lookup.fetch(lookup_args, ctx, request_id, deadline)
        if isinstance(fetched, dict):
            return fetched  # NOT_FOUND for a missing object, or the lookup's own error
        if not owner_matches(fetched.data, rule.path, ctx.state.get(rule.state_key)):
            return E.not_found()
        return None

    async def fetch(
        self, args: Mapping[str, Any], ctx: CallContext, request_id: str, deadline: float
    ) -> _Fetched | dict[str, Any]:
        """Build and send without confirmation or shaping (used for ownership lookups by other tools)."""
        for key in self.policy.bind.values():
            if _blank(ctx.state.get(key)):
                return E.no_scope_error()
        bound = {arg: ctx.state[key] for arg, key in self.policy.bind.items()}
        try:
            built = self._build(args, bound)
        except ArgumentsInvalid as exc:
            return E.bad_arguments(exc.problems)
        fetched = await self._send(built, ctx, request_id, deadline, _CallInfo(), args)
        rule = self.ownership
        if (
            isinstance(fetched, _Fetched)
            and isinstance(rule, ResponseOwner)
            and not owner_matches(fetched.data, rule.path, ctx.state.get(rule.state_key))
        ):
            return E.not_found()
        return fetched

    async def _send(
        self,
        built: BuiltRequest,
        ctx: CallContext,
        request_id: str,
        deadline: float,
        info: _CallInfo,
        args: Mapping[str, Any],
    ) -> _Fetched | dict[str, Any]:
        settings = self.runtime.settings
        try:
            auth = await resolve_auth(self.operation.security, self.runtime.schemes, settings.credentials, ctx)
        except NoCredentials as exc:  # nothing was sent
            return tool_error(exc.code, exc.public_message, retryable=exc.retryable)
        request = self._with_auth(built, auth, request_id)
        redactor = Redactor(auth.secrets).plus(self.sensitive.values(args))
        allowed = self.policy.retry and may_retry(
            self.operation.method, has_idempotency_key=self.builder.idempotency_header is not None
        )

        async def attempt(_n: int) -> HttpOutcome:
            return await exchange(
                self.runtime.client,
                request,
                max_bytes=settings.max_response_bytes,
                timeout=deadline - time.monotonic(),
                redirects=settings.redirects,
                redactor=redactor,
            )

        done = await with_retries(attempt, self._judge, policy=settings.retry, allowed=allowed, deadline=deadline)
        outcome = done.outcome
        info.attempts += done.attempts
        info.http_status = outcome.status
        info.upstream_request_id = outcome.headers.get("x-request-id") or outcome.headers.get("request-id")
        return await self._interpret(outcome, redactor)

    def _with_auth(self, built: BuiltRequest, auth: AuthParts, request_id: str) -> BuiltRequest:
        request = built.with_parts(headers=auth.headers, query=auth.query, cookies=auth.cookies, secret=True)
        header = self.runtime.settings.request_id_header
        if header:
            request = request.with_parts(headers=((header, request_id),))
        return request

    def _judge(self, outcome: HttpOutcome) -> Verdict:
        if outcome.failure in ("timeout", "connect", "network"):
            return Verdict(True)
        if outcome.status is not None and outcome.status in self.runtime.settings.retry.retry_statuses:
            return Verdict(True, E.parse_retry_after(outcome.headers.get("retry-after")))
        return Verdict(False)

    async def _interpret(self, outcome: HttpOutcome, redactor: Redactor) -> _Fetched | dict[str, Any]:
        settings = self.runtime.settings
        if outcome.failure == "timeout":
            return E.timeout_error()
        if outcome.failure in ("connect", "network"):
            return E.unavailable_error()
        if outcome.failure == "redirect":
            return E.redirect_blocked_error()
        if outcome.failure == "encoding":
            return E.unreadable_error("a content encoding (or a stack of them) that is not read")
        if outcome.failure == "decode":
            return E.unreadable_error("its compressed data is broken")
        if outcome.failure is not None or outcome.status is None:
            return E.internal_error()
        content_type = outcome.headers.get("content-type", "")
        status = outcome.status
        if not 200 <= status < 300:
            body = redactor.bytes(outcome.body)
            env = E.error_for_status(
                status,
                body=body,
                content_type=content_type,
                retry_after=E.parse_retry_after(outcome.headers.get("retry-after")),
            )
            result: dict[str, Any] = redactor.value(env)
            return result
        if outcome.too_large:
            return E.too_large_error(settings.max_response_bytes)
        max_values = max(MIN_JSON_VALUES, settings.max_response_bytes // BYTES_PER_JSON_VALUE)
        if "json" in content_type.lower() and json_value_estimate(outcome.body) > max_values:
            return E.too_large_error(settings.max_response_bytes, values=max_values)
        if len(outcome.body) > INLINE_BODY_BYTES:
            parsed = await asyncio.to_thread(_parse_redacted, outcome.body, content_type, redactor)
        else:
            parsed = _parse_redacted(outcome.body, content_type, redactor)
        if parsed is None:
            return E.unreadable_error("its JSON is nested too deeply")
        kind, data = parsed
        return _Fetched(status, kind, data, len(outcome.body))

    def _result(self, fetched: _Fetched) -> dict[str, Any]:
        op = self.operation
        result: dict[str, Any] = {"status": "ok", "operation": op.operation_id or op.key, "http_status": fetched.status}
        if fetched.kind == "empty":
            return result
        shaped = shape(fetched.data, self.runtime.settings.shape, self.policy.projection)
        result["untrusted"] = {"data": shaped.data}
        result["note"] = UNTRUSTED_NOTE
        if shaped.truncated:
            result["truncated"] = True
            if shaped.lists:
                result["lists"] = shaped.lists
            if shaped.strings_capped:
                result["strings_capped"] = shaped.strings_capped
        return result


def _parse_redacted(body: bytes, content_type: str, redactor: Redactor) -> tuple[str, Any] | None:
    """Parse and redact a body; ``None`` when its nesting is too deep for the parser or the redactor."""
    try:
        kind, data = parse_body(redactor.bytes(body), content_type)
        return kind, redactor.value(data)
    except RecursionError:
        return None
