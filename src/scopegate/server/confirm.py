"""Asking the user to approve a state-changing call, through MCP elicitation.

Two protocol eras, one rule ("nothing is sent until the user said yes"):

* handshake era (<= 2025-11-25): the server sends ``elicitation/create`` to the
  client while the ``tools/call`` is open and waits for the answer;
* 2026-07-28: the server answers the ``tools/call`` with an
  ``InputRequiredResult`` carrying the elicitation; the client asks the user
  and retries the call with the answer and the echoed ``requestState``. The
  state is sealed by the SDK's ``RequestStateBoundary`` and bound to the tool,
  its arguments and the caller's identity, so an answer cannot be replayed
  onto other arguments or by another caller, and an answer sent without a
  question the server asked is ignored.

A client that cannot elicit gets a structured refusal that explains why; the
call is not made.

Replicas: the sealing keys come from the environment variables named by
``server.http.request_state_keys_env`` (:func:`state_keys`), so a question
asked by one replica is answered on any other. An answer is good for one call:
the first retry carrying it claims its ``call_id`` in the deployment's shared
:mod:`.approvals` ledger, and any later one (on any replica) is refused with
:data:`CONFIRMATION_USED` before anything is sent.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping, Sequence
from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from scopegate.errors import (
    CONFIRMATION_REQUIRED,
    CONFIRMATION_UNAVAILABLE,
    CONFIRMATION_USED,
    ConfigError,
    tool_error,
)

log = logging.getLogger("scopegate.server.confirm")

CONFIRM_KEY = "scopegate_confirm"
CONFIRM_FIELD = "approve"
__all__ = ["CONFIRMATION_REQUIRED", "CONFIRMATION_UNAVAILABLE", "CONFIRMATION_USED"]
CONFIRM_TIMEOUT_S = 300.0
# How long a used approval is remembered: the state's lifetime plus the SDK's allowance for a replica's
# clock running behind (its 60 s future skew), with room to spare.
USED_TTL_S = CONFIRM_TIMEOUT_S + 120.0
STATE_VERSION = 1
MAX_HINT_CHARS = 1000


MIN_STATE_KEY_BYTES = 32


def state_keys(names: Sequence[str], environ: Mapping[str, str] | None = None) -> list[bytes]:
    """The request-state key ring from the environment variables ``names`` (first seals, all open).

    Empty ``names``: one random key for this process (state minted here opens
    only here: a single replica). A variable that is unset or shorter than 32
    bytes is a :class:`ConfigError` naming it, before the server starts.
    """
    if not names:
        return [os.urandom(MIN_STATE_KEY_BYTES)]
    env = os.environ if environ is None else environ
    keys: list[bytes] = []
    for name in names:
        value = env.get(name)
        if not value:
            raise ConfigError(f"server.http.request_state_keys_env names {name}, which is not set")
        secret = value.encode("utf-8")
        if len(secret) < MIN_STATE_KEY_BYTES:
            raise ConfigError(
                f"{name} holds {len(secret)} bytes; a request-state key needs at least {MIN_STATE_KEY_BYTES} "
                '(python -c "import secrets; print(secrets.token_hex(32))")'
            )
        if secret in keys:
            raise ConfigError(f"{name} repeats an earlier request-state key")
        keys.append(secret)
    return keys


def is_modern(ctx: ServerRequestContext[Any, Any]) -> bool:
    return ctx.protocol_version in MODERN_PROTOCOL_VERSIONS


def elicitation_supported(ctx: ServerRequestContext[Any, Any]) -> bool:
    """The client declared form elicitation (an empty ``elicitation`` object means form)."""
    caps = ctx.session.client_capabilities
    if caps is None or caps.elicitation is None:
        return False
    elicitation = caps.elicitation
    return not (elicitation.form is None and elicitation.url is not None)


def confirm_schema() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            CONFIRM_FIELD: {
                "type": "boolean",
                "title": "Approve",
                "description": "Send this request? Nothing is sent unless you approve.",
            }
        },
        "required": [CONFIRM_FIELD],
    }


def approval_message(hint: str) -> str:
    text = " ".join(str(hint).split())
    return text[:MAX_HINT_CHARS] if text else "Approve this change?"


def decision_of(answer: types.ElicitResult) -> bool:
    """True only for an explicit accept with the approve box set."""
    if answer.action != "accept" or not answer.content:
        return False
    return answer.content.get(CONFIRM_FIELD) is True


def unavailable(pending: Mapping[str, Any], why: str) -> dict[str, Any]:
    """The refusal a model gets when the user cannot be asked; nothing was sent."""
    extra: dict[str, Any] = {}
    if isinstance(pending.get("confirmation"), Mapping):
        extra["confirmation"] = pending["confirmation"]
    return tool_error(
        CONFIRMATION_UNAVAILABLE,
        f"This call changes data and needs the user's approval, but {why}; nothing was sent. "
        "Tell the user what you wanted to do so they can do it themselves or use a client that can ask them.",
        retryable=False,
        **extra,
    )


def already_used() -> dict[str, Any]:
    """The refusal of an approval sent a second time; nothing was sent this time."""
    return tool_error(
        CONFIRMATION_USED,
        "This approval was already used: one approval runs one call, and nothing was sent now. If the first "
        "call's result was lost, check the current state before asking the user to approve the change again.",
        retryable=False,
    )


def not_recorded() -> dict[str, Any]:
    """The refusal when the approval could not be recorded as used (the ledger is unreachable)."""
    return tool_error(
        CONFIRMATION_UNAVAILABLE,
        "The approval could not be recorded, so the call was not made; nothing was sent. Try again shortly.",
        retryable=True,
    )


def elicit_request(hint: str) -> types.ElicitRequest:
    return types.ElicitRequest(
        params=types.ElicitRequestFormParams(message=approval_message(hint), requested_schema=confirm_schema())
    )


def input_required(hint: str, call_id: str) -> types.InputRequiredResult:
    state = json.dumps({"v": STATE_VERSION, "call_id": call_id}, separators=(",", ":"))
    return types.InputRequiredResult(input_requests={CONFIRM_KEY: elicit_request(hint)}, request_state=state)


def answered_round(params: types.CallToolRequestParams) -> tuple[str, bool] | None:
    """(call_id, decision) when this call is the retry answering our question, else None.

    ``request_state`` has already been unsealed (and verified) by the SDK's
    boundary, so it is state this server minted for this tool and arguments.
    """
    if not params.request_state:
        return None
    try:
        state = json.loads(params.request_state)
    except ValueError:
        return None
    if not isinstance(state, dict) or state.get("v") != STATE_VERSION or not isinstance(state.get("call_id"), str):
        return None
    answer = (params.input_responses or {}).get(CONFIRM_KEY)
    if not isinstance(answer, types.ElicitResult):
        return None
    return state["call_id"], decision_of(answer)


async def ask_now(ctx: ServerRequestContext[Any, Any], hint: str) -> bool | None:
    """Handshake era: ask over the back-channel. None when the question could not be asked."""
    try:
        with anyio.fail_after(CONFIRM_TIMEOUT_S):
            answer = await ctx.session.elicit_form(
                approval_message(hint), confirm_schema(), related_request_id=ctx.request_id
            )
    except TimeoutError:
        log.info("confirmation timed out")
        return None
    except Exception as exc:
        log.info("confirmation could not be asked: %s", type(exc).__name__)
        return None
    return decision_of(answer)
