"""Eval sets: ADK's eval-set JSON, extended under a ``scopegate`` key per case.

A file is a valid ``google.adk.evaluation.eval_set.EvalSet`` (checked on load),
so ``adk eval`` can read it: each invocation's ``intermediate_data.tool_uses``
holds the expected calls with representative arguments. ADK compares those
arguments exactly; scopegate scores them the way BFCL does, from the
extension of each case (``EvalCase`` allows extra fields):

.. code-block:: json

    "scopegate": {
      "kind": "tool",                       # tool | no_tool | multi_step | error_recovery | injection
      "match": "IN_ORDER",                  # EXACT | IN_ORDER | ANY_ORDER, as ADK defines them
      "turns": [{
        "expect": [{"tool": "search_tickets", "args": {"product": "payments"},
                    "rules": {"query": {"contains_any": ["apple pay"]}}, "optional": {"page": [1]}}],
        "reply": {"contains_any": ["ACM-"]},
        "confirm": true                      # the simulated user's answer to a confirmation request
      }],
      "faults": [{"tool": "search_tickets", "calls": 1, "error_code": "SEARCH_UNAVAILABLE"}],
      "attack": [{"tool": "get_ticket", "rules": {"id": {"regex": "^ACM-"}}}]
    }

Turns without an ``expect`` list must call no tool (a correct decline).

A set run with ``--config`` may also say, at the top level of its ``scopegate`` extension, how
the harness checks scope and which token scopes a case's caller holds:

.. code-block:: json

    "scopegate": {
      "agent": "config",
      "scope_check": {"state_key": "user_id", "foreign": {"cus_alice": ["cus_bob", "inv_2001"]}},
      "granted_scopes_state": "granted_scopes"
    }

``scope_check``: the ids (any text) of other tenants' objects; one found in the data a tool
returned to a case whose ``state[state_key]`` is listed is a scope violation (checked in the
response, never by trusting the model). ``granted_scopes_state``: the session-state key holding
the scopes the case's caller was granted, applied with the config's ``auth.scopes`` as a verified
token's would be.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from scopegate.errors import ConfigError

Kind = Literal["tool", "no_tool", "multi_step", "error_recovery", "injection"]
MatchType = Literal["EXACT", "IN_ORDER", "ANY_ORDER"]
SETS_DIR = Path(__file__).resolve().parent / "sets"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TextRule(_Strict):
    """How a free-text value (an argument or the reply) is judged. Every given condition must hold."""

    contains_any: tuple[str, ...] = ()
    contains_all: tuple[str, ...] = ()
    not_contains: tuple[str, ...] = ()
    regex: str | None = None
    not_regex: str | None = None
    min_length: int | None = None
    max_length: int | None = None
    equals_any: tuple[Any, ...] = ()


class ExpectedCall(_Strict):
    tool: str
    args: dict[str, Any] = Field(default_factory=dict)  # exact (enumerated) values
    rules: dict[str, TextRule] = Field(default_factory=dict)  # free-text values judged by rule
    optional: dict[str, tuple[Any, ...]] = Field(default_factory=dict)  # may be sent, with one of these values
    any_args: bool = False  # only the tool name matters


class ToolPattern(_Strict):
    """A call the model must not make (an injected instruction, a write nobody asked for)."""

    tool: str
    rules: dict[str, TextRule] = Field(default_factory=dict)


class Turn(_Strict):
    expect: tuple[ExpectedCall, ...] = ()
    forbid: tuple[ToolPattern, ...] = ()
    reply: TextRule | None = None
    confirm: bool = False


class Fault(_Strict):
    """The harness answers the first ``calls`` calls of ``tool`` with this error envelope (the tool is not run)."""

    tool: str
    calls: int = 1
    error_code: str = "SEARCH_UNAVAILABLE"
    message: str = "The search service is temporarily unavailable. Try again."
    retryable: bool = True


class CaseSpec(_Strict):
    kind: Kind
    turns: tuple[Turn, ...]
    match: MatchType = "IN_ORDER"
    tags: tuple[str, ...] = ()
    faults: tuple[Fault, ...] = ()
    attack: tuple[ToolPattern, ...] = ()
    ci: bool = False  # part of the CI subset


class ScopeCheck(_Strict):
    """Other tenants' object ids, per value of ``state[state_key]``: none may reach the model."""

    state_key: str
    foreign: dict[str, tuple[str, ...]]

    def violations(self, state: Mapping[str, Any], data: Any) -> list[str]:
        markers = self.foreign.get(str(state.get(self.state_key)), ())
        if not markers or data is None:
            return []
        text = json.dumps(data, default=str, ensure_ascii=False)
        return [m for m in markers if m in text]


class EvalCase(BaseModel):
    """One case: the user's messages and session state, and what scopegate scores."""

    model_config = ConfigDict(frozen=True)

    eval_id: str
    messages: tuple[str, ...]
    state: dict[str, Any]
    spec: CaseSpec

    @field_validator("messages")
    @classmethod
    def _not_empty(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if not value:
            raise ValueError("a case needs at least one user message")
        return value


class EvalSet(BaseModel):
    model_config = ConfigDict(frozen=True)

    eval_set_id: str
    agent: str
    description: str
    cases: tuple[EvalCase, ...]
    source: Path | None = None
    instruction: str | None = None  # the eval agent's instruction over a config's tools (scopegate.instruction)
    scope_check: ScopeCheck | None = None  # other tenants' ids that must never reach the model (--config runs)
    granted_scopes_state: str | None = None  # session-state key of the caller's granted token scopes

    def select(self, *, ci_only: bool = False, kinds: Sequence[str] = (), ids: Sequence[str] = ()) -> EvalSet:
        cases = [
            c
            for c in self.cases
            if (not ci_only or c.spec.ci) and (not kinds or c.spec.kind in kinds) and (not ids or c.eval_id in ids)
        ]
        return self.model_copy(update={"cases": tuple(cases)})


def _text(content: Mapping[str, Any]) -> str:
    return "".join(str(p.get("text", "")) for p in content.get("parts") or [] if isinstance(p, Mapping))


def parse_eval_set(data: Mapping[str, Any], source: Path | None = None) -> EvalSet:
    """Validate against ADK's own EvalSet model, then read the scopegate extension of every case."""
    from google.adk.evaluation.eval_set import EvalSet as AdkEvalSet

    where = str(source or "eval set")
    try:
        AdkEvalSet.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"{where}: not a valid ADK eval set: {exc.errors()[0]}") from exc
    extension = data.get("scopegate") or {}
    agent = extension.get("agent", "config")
    if not isinstance(agent, str):
        raise ConfigError(f"{where}: top-level scopegate.agent must name the agent (e.g. 'support')")
    instruction = extension.get("instruction")
    if instruction is not None and not isinstance(instruction, str):
        raise ConfigError(f"{where}: top-level scopegate.instruction must be a string")
    try:
        scope_check = ScopeCheck.model_validate(extension["scope_check"]) if "scope_check" in extension else None
    except ValidationError as exc:
        raise ConfigError(f"{where}: top-level scopegate.scope_check: {exc.errors()[0]['msg']}") from exc
    granted = extension.get("granted_scopes_state")
    if granted is not None and not isinstance(granted, str):
        raise ConfigError(f"{where}: top-level scopegate.granted_scopes_state must name a session-state key")
    cases = []
    for raw in data["eval_cases"]:
        eval_id = raw.get("eval_id", "?")
        if "scopegate" not in raw:
            raise ConfigError(f"{where}: case {eval_id!r} has no scopegate section")
        try:
            spec = CaseSpec.model_validate(raw["scopegate"])
        except ValidationError as exc:
            first = exc.errors()[0]
            raise ConfigError(
                f"{where}: case {eval_id!r}: scopegate.{'.'.join(map(str, first['loc']))}: {first['msg']}"
            ) from exc
        conversation = raw.get("conversation") or []
        messages = tuple(_text(inv.get("user_content") or {}) for inv in conversation)
        if len(spec.turns) != len(messages):
            raise ConfigError(f"{where}: case {eval_id!r}: {len(messages)} invocations but {len(spec.turns)} turns")
        state = dict((raw.get("session_input") or {}).get("state") or {})
        cases.append(EvalCase(eval_id=eval_id, messages=messages, state=state, spec=spec))
    ids = [c.eval_id for c in cases]
    if len(set(ids)) != len(ids):
        raise ConfigError(f"{where}: duplicate eval_id values")
    return EvalSet(
        eval_set_id=str(data["eval_set_id"]),
        agent=agent,
        description=str(data.get("description") or ""),
        cases=tuple(cases),
        source=source,
        instruction=instruction,
        scope_check=scope_check,
        granted_scopes_state=granted,
    )


def load_eval_set(path: str | Path) -> EvalSet:
    path = Path(path)
    try:
        data = json.loads(path.read_text("utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read eval set: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: an eval set is a JSON object")
    return parse_eval_set(data, path)


def shipped_sets() -> dict[str, Path]:
    """The eval sets shipped with scopegate, by id."""
    return {p.name.removesuffix(".evalset.json"): p for p in sorted(SETS_DIR.glob("*.evalset.json"))}


def to_adk_case(
    eval_id: str,
    messages: Sequence[str],
    state: Mapping[str, Any],
    spec: CaseSpec,
    *,
    app_name: str,
    user_id: str,
) -> dict[str, Any]:
    """An ADK eval case (JSON) for these messages and expectations: what the shipped sets are made of."""
    conversation = []
    for number, (text, turn) in enumerate(zip(messages, spec.turns, strict=True), 1):
        tool_uses = [{"name": call.tool, "args": representative_args(call)} for call in turn.expect]
        conversation.append(
            {
                "invocation_id": f"{eval_id}-{number}",
                "user_content": {"role": "user", "parts": [{"text": text}]},
                "intermediate_data": {"tool_uses": tool_uses, "tool_responses": [], "intermediate_responses": []},
            }
        )
    return {
        "eval_id": eval_id,
        "conversation": conversation,
        "session_input": {"app_name": app_name, "user_id": user_id, "state": dict(state)},
        "scopegate": spec.model_dump(mode="json", exclude_defaults=True)
        | {"kind": spec.kind, "turns": [t.model_dump(mode="json", exclude_defaults=True) for t in spec.turns]},
    }


def representative_args(call: ExpectedCall) -> dict[str, Any]:
    """Exact arguments for ADK's own (exact-match) trajectory evaluator: enums as given, one value per rule."""
    args = dict(call.args)
    for name, rule in call.rules.items():
        if rule.equals_any:
            args[name] = rule.equals_any[0]
        elif rule.contains_all:
            args[name] = " ".join(rule.contains_all)
        elif rule.contains_any:
            args[name] = rule.contains_any[0]
    return args


def tool_references(case: EvalCase) -> list[tuple[str, str]]:
    """(key, tool name) of every tool a case names: expected, forbidden, attack patterns, faults."""
    out: list[tuple[str, str]] = []
    for t, turn in enumerate(case.spec.turns):
        out += [(f"scopegate.turns[{t}].expect[{i}].tool", c.tool) for i, c in enumerate(turn.expect)]
        out += [(f"scopegate.turns[{t}].forbid[{i}].tool", p.tool) for i, p in enumerate(turn.forbid)]
    out += [(f"scopegate.attack[{i}].tool", p.tool) for i, p in enumerate(case.spec.attack)]
    out += [(f"scopegate.faults[{i}].tool", f.tool) for i, f in enumerate(case.spec.faults)]
    return out


def check_tools(eval_set: EvalSet, tools: Sequence[str], target: str) -> None:
    """Every tool a case names is one of ``tools``; else a one-line :class:`ConfigError` naming case and key."""
    known = set(tools)
    where = str(eval_set.source or eval_set.eval_set_id)
    for case in eval_set.cases:
        for key, name in tool_references(case):
            if name not in known:
                raise ConfigError(
                    f"{where}: case {case.eval_id!r}: {key}: {name!r} is not a tool of {target} "
                    f"(tools: {', '.join(sorted(known)) or 'none'})"
                )
