"""What a hand-written tool receives from scopegate: the caller's scope, a credential, its sibling tools.

An :class:`AppContext` is built per call from the adapter's :class:`~scopegate.context.CallContext`
(never from the model's arguments):

* ``scope``: the verified :class:`~scopegate.scope.Scope` (tenant, groups, user) read from session
  state under the tool's scope keys;
* ``credential``: the per-user downstream credential, when the tool asked for one and a provider
  resolved it (see :mod:`.credentials`);
* ``tools``: a handle to sibling tools (search, fetch, OpenAPI operations, other app tools) that
  calls them with the *same* call context: the same scope, invocation and session;
* ``confirm(hint)``: for state-changing tools, the point where the user is asked. Until the user
  approved, it raises :class:`~scopegate.errors.ConfirmationRequired` and no state-changing
  sibling can be called; after a rejection the tool does not run at all.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from scopegate.context import CallContext
from scopegate.errors import CompositionError, ConfirmationRequired, ToolFailure
from scopegate.openapi.runtime.credentials import Credential
from scopegate.scope import Scope, state_for
from scopegate.tools import ScopedTool

MAX_SIBLING_CALLS = 16
IDEMPOTENCY_PREFIX = "sg-"
STEP_FIELDS = ("operation_id", "status", "total", "error_code")


@dataclass(frozen=True)
class ToolReply:
    """What a sibling tool answered: its result envelope, as the model would have seen it."""

    tool: str
    result: dict[str, Any]

    @property
    def ok(self) -> bool:
        return self.result.get("status") != "error"

    @property
    def error_code(self) -> str | None:
        return None if self.ok else str(self.result.get("error_code"))

    @property
    def data(self) -> Any:
        """An API tool's response data (under ``untrusted``), else the result without its envelope keys."""
        untrusted = self.result.get("untrusted")
        if isinstance(untrusted, Mapping) and "data" in untrusted:
            return untrusted["data"]
        return {k: v for k, v in self.result.items() if k not in ("status", "note")}

    def raise_for_error(self) -> ToolReply:
        """Stop the tool with the sibling's own (model-safe) error envelope when it failed; else return self."""
        if self.ok:
            return self
        extra = {k: v for k, v in self.result.items() if k not in ("status", "error_code", "message", "retryable")}
        raise ToolFailure(
            str(self.result.get("error_code") or "INTERNAL"),
            str(self.result.get("message") or "a step of this tool failed"),
            retryable=bool(self.result.get("retryable", False)),
            **extra,
        )


@dataclass
class _Run:
    """Per-call bookkeeping shared by the context and its sibling handle."""

    tool: str
    read_only: bool
    confirmed: bool  # the user approved this call (the adapter's decision, re-checked here)
    asked: ConfirmationRequired | None = None
    steps: list[dict[str, Any]] = field(default_factory=list)


class Siblings:
    """The tools an app tool may call, with the caller's own call context."""

    def __init__(self, tools: Mapping[str, ScopedTool], call: CallContext, scope: Scope, run: _Run) -> None:
        self._tools = tools
        self._call = call
        self._scope = scope
        self._run = run

    def names(self) -> list[str]:
        return sorted(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    async def call(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        /,
        *,
        idempotency_key: str | None = None,
        **more: Any,
    ) -> ToolReply:
        """Run sibling ``name`` with ``arguments`` (a mapping and/or keywords) in the caller's scope.

        A state-changing sibling runs only after this call's user approval (``ctx.confirm``), and
        never from a read-only tool. ``idempotency_key`` is sent to API operations that declare an
        ``Idempotency-Key`` header, so a retried workflow does not change state twice.
        """
        run = self._run
        tool = self._tools.get(name)
        if tool is None:
            raise CompositionError(f"{run.tool}: no sibling tool named {name!r}; known: {', '.join(self.names())}")
        if not tool.read_only or tool.requires_confirmation:
            if run.read_only:
                raise CompositionError(f"{run.tool} is declared read-only but called {name!r}, which changes data")
            if not run.confirmed:
                raise CompositionError(f"{run.tool} called {name!r}, which changes data, before ctx.confirm()")
        if len(run.steps) >= MAX_SIBLING_CALLS:
            raise CompositionError(f"{run.tool} made more than {MAX_SIBLING_CALLS} sibling calls")
        args = {**(arguments or {}), **more}
        extra: dict[str, Any] = {**self._call.extra, "parent_tool": run.tool}
        if idempotency_key is not None:
            extra["idempotency_key"] = idempotency_key
        ctx = CallContext(
            # The same verified scope, under the sibling's own state keys when they differ.
            state={**self._call.state, **state_for(self._scope, tool.scope_keys)},
            invocation_id=self._call.invocation_id,
            session_id=self._call.session_id,
            confirmed=True if tool.requires_confirmation else None,
            extra=extra,
            files=self._call.files,  # the caller's own files, for a sibling that uploads
        )
        outcome = await tool.run(args, ctx)
        step: dict[str, Any] = {"tool": name, "outcome": "ok" if outcome.ok else outcome.error_code}
        step.update({k: outcome.log[k] for k in STEP_FIELDS if k in outcome.log and outcome.log[k] is not None})
        run.steps.append(step)
        return ToolReply(name, outcome.result)


class AppContext:
    """The caller as scopegate verified it. Hand-written tools take one as a parameter (any name)."""

    def __init__(
        self,
        *,
        scope: Scope,
        call: CallContext,
        tools: Mapping[str, ScopedTool],
        credential: Credential | None,
        run: _Run,
    ) -> None:
        self.scope = scope
        self.credential = credential
        self.invocation_id = call.invocation_id
        self.session_id = call.session_id
        self.tools = Siblings(tools, call, scope, run)
        self._run = run

    @property
    def tool_name(self) -> str:
        return self._run.tool

    @property
    def confirmed(self) -> bool:
        """Whether the user approved this call (only ever true for state-changing tools)."""
        return self._run.confirmed

    async def confirm(self, hint: str, *, details: Mapping[str, Any] | None = None) -> None:
        """Ask the user to approve before anything changes; returns only once they did.

        ``hint`` is what the user reads ("Cancel order ord_1001 (2 items, 45.10 EUR)?"). On the
        first run this raises :class:`ConfirmationRequired` (the call answers
        ``CONFIRMATION_REQUIRED`` and the adapter asks); when the adapter resumes the call with
        the user's approval it returns. Everything before it must only read.
        """
        run = self._run
        if run.read_only:
            raise CompositionError(f"{run.tool} is read-only and cannot ask for confirmation")
        if run.confirmed:
            return
        payload = {"tool": run.tool, **({"details": dict(details)} if details else {})}
        asked = ConfirmationRequired(" ".join(str(hint).split())[:1000] or f"Approve {run.tool}?", payload)
        run.asked = asked
        raise asked

    def idempotency_key(self, *parts: Any) -> str:
        """A key that is the same for the same tool, caller and ``parts`` (e.g. the order id), every time.

        Pass it to a state-changing sibling: a repeated or retried call is then recognised by
        the API instead of being applied twice.
        """
        scope = self.scope
        material = json.dumps(
            [self._run.tool, scope.tenant_id, scope.user_id or "", [str(p) for p in parts]], separators=(",", ":")
        )
        return IDEMPOTENCY_PREFIX + hashlib.sha256(material.encode("utf-8")).hexdigest()[:32]
