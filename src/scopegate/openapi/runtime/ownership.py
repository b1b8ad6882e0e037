"""Ownership rules: whose data an argument selects, checked against the session's user.

Declarative rules, one per operation:

* :class:`ResponseOwner` — after the call, a field of the response must equal a
  session-state value (``"response.customer_id == state.user_id"``). Only for
  reads: a change must be checked before it is made.
* :class:`LookupOwner` — before the call, another (read) operation is called
  with arguments taken from this call, and a field of *its* response must
  equal the state value (``getOrder(orderId=orderId).customer_id ==
  state.user_id``).
* :class:`HookOwner` — a callable of the application, before or after the call.

A refusal looks exactly like a real 404 (:func:`~.errors.not_found`), so it
does not reveal that the object exists.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from scopegate.errors import ConfigError

MISSING = object()


@dataclass(frozen=True)
class OwnershipQuestion:
    """What a hook is asked: may the session's user see/touch this?"""

    operation: str
    arguments: Mapping[str, Any]
    state: Mapping[str, Any]
    phase: Literal["before", "after"]
    response: Any = None


OwnershipHook = Callable[[OwnershipQuestion], Awaitable[bool] | bool]


@dataclass(frozen=True)
class ResponseOwner:
    """After the call: ``response.<path>`` must equal ``state[<state_key>]``."""

    path: str
    state_key: str = "user_id"
    phase: Literal["after"] = "after"


@dataclass(frozen=True)
class LookupOwner:
    """Before the call: ``<operation>(**{lookup_arg: this_call[arg]}).<path> == state[<state_key>]``."""

    operation: str
    arguments: Mapping[str, str]
    path: str
    state_key: str = "user_id"
    phase: Literal["before"] = "before"


@dataclass(frozen=True)
class HookOwner:
    hook: OwnershipHook
    phase: Literal["before", "after"] = "before"
    needs_state: tuple[str, ...] = field(default_factory=tuple)


OwnershipRule = ResponseOwner | LookupOwner | HookOwner

_RESPONSE_RULE = re.compile(r"^\s*response\.([\w.\[\]-]+)\s*==\s*state\.([\w-]+)\s*$")
_LOOKUP_RULE = re.compile(r"^\s*([\w.-]+)\(([^)]*)\)\.([\w.\[\]-]+)\s*==\s*state\.([\w-]+)\s*$")


def parse_rule(text: str) -> ResponseOwner | LookupOwner:
    """Parse ``"response.customer_id == state.user_id"`` or
    ``"getOrder(orderId=orderId).customer_id == state.user_id"``."""
    m = _RESPONSE_RULE.match(text)
    if m:
        return ResponseOwner(path=m.group(1), state_key=m.group(2))
    m = _LOOKUP_RULE.match(text)
    if m:
        args: dict[str, str] = {}
        for part in filter(None, (p.strip() for p in m.group(2).split(","))):
            if "=" not in part:
                raise ConfigError(f"ownership rule {text!r}: lookup arguments are name=argument pairs")
            left, right = (x.strip() for x in part.split("=", 1))
            args[left] = right
        return LookupOwner(operation=m.group(1), arguments=args, path=m.group(3), state_key=m.group(4))
    raise ConfigError(f"cannot parse ownership rule {text!r}")


def field_at(data: Any, path: str) -> Any:
    """The value at a dotted path (``"order.customer_id"``), or MISSING."""
    current = data
    for part in path.replace("[]", "").split("."):
        if isinstance(current, Mapping) and part in current:
            current = current[part]
        else:
            return MISSING
    return current


def owner_matches(data: Any, path: str, expected: Any) -> bool:
    """True only when the field exists, is a scalar, and equals ``expected`` (both as text)."""
    found = field_at(data, path)
    if found is MISSING or found is None or isinstance(found, Mapping | list) or expected is None:
        return False
    return str(found) == str(expected)


async def ask_hook(hook: OwnershipHook, question: OwnershipQuestion) -> bool:
    answer = hook(question)
    if inspect.isawaitable(answer):
        answer = await answer
    return answer is True


def state_keys(rule: OwnershipRule | None) -> tuple[str, ...]:
    if isinstance(rule, ResponseOwner | LookupOwner):
        return (rule.state_key,)
    if isinstance(rule, HookOwner):
        return rule.needs_state
    return ()
