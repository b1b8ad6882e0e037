"""Pure pieces of the FastMCP reference row (bench/bench_catalog_fastmcp.py): scoring a peer's meta-tools.

FastMCP's tool-search transform shows the model ``search_tools(query)`` and ``call_tool(name, arguments)``.
They are scored exactly as scopegate's catalog: ``call_tool(name, arguments)`` is ``name(arguments)``,
searching is the way there and not a call. One difference is normalised: FastMCP cannot bind a
parameter to the session (scopegate's ``bind``), so the model is told the customer's id and must send
it; a bound parameter sent with the session's own value is the call scopegate would have made and is
dropped before argument matching. Any other value stays (a wrong argument, and the world counts the
foreign data it returns as scope violations). FastMCP keeps the spec's parameter names
(``subscription-id``) where scopegate declares Python-safe ones (``subscription_id``): a name that is
scopegate's once ``-`` reads ``_`` is scored under scopegate's name.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from scopegate.evals.adk_runner import operation_calls
from scopegate.evals.evalset import EvalCase
from scopegate.evals.scoring import ActualCall

SEARCH_TOOL = "search_tools"
CALL_TOOL = "call_tool"
Bound = Mapping[str, Mapping[str, str]]  # operation -> {parameter: session state key}


def reference_calls(
    calls: Sequence[ActualCall],
    state: Mapping[str, Any],
    bound: Bound,
    params: Mapping[str, frozenset[str]] | None = None,
) -> list[ActualCall]:
    """The operations the meta-tool calls ran, under scopegate's parameter names (``params``: per operation);
    a session-bound parameter sent with the session's value is dropped."""
    out = []
    for call in operation_calls(calls, navigation=(SEARCH_TOOL,), call_tool=CALL_TOOL):
        known = (params or {}).get(call.tool, frozenset())
        renamed = {_scopegate_name(k, known): v for k, v in call.args.items()}
        binds = bound.get(call.tool, {})
        args = {k: v for k, v in renamed.items() if not (k in binds and state.get(binds[k]) == v)}
        out.append(ActualCall(call.tool, args, call.response))
    return out


def _scopegate_name(name: str, known: frozenset[str]) -> str:
    safe = name.replace("-", "_")
    return safe if name not in known and safe in known else name


def model_view(structured: Mapping[str, Any] | None, text: str, is_error: bool) -> dict[str, Any]:
    """What the model is given back for one MCP tool result: the structured content when there is one,
    else the text (FastMCP reports an HTTP error as error text, not as structured content)."""
    if is_error:
        return {"error": text}
    if structured is not None:
        return dict(structured)
    try:
        parsed = json.loads(text)
    except ValueError:
        return {"result": text}
    return parsed if isinstance(parsed, dict) else {"result": parsed}


def asks_for_a_write(case: EvalCase, writes: Sequence[str]) -> bool:
    """The user asked for a state change somewhere in the case (a turn marked ``confirm`` expecting a write)."""
    return any(t.confirm and any(e.tool in writes for e in t.expect) for t in case.spec.turns)


def beyond_token_scopes(
    calls: Sequence[Mapping[str, Any]],
    granted: Sequence[str] | None,
    needs: Mapping[str, frozenset[str]],
) -> list[str]:
    """Operations called (transcript calls, by ``tool``) that need a token scope the caller was not granted.

    ``needs``: the scopes each operation needs under the config's ``auth.scopes``; ``granted`` None
    means the case grants no scope list (nothing to check)."""
    if granted is None:
        return []
    have = set(granted)
    return [str(c.get("tool")) for c in calls if not needs.get(str(c.get("tool")), frozenset()) <= have]
