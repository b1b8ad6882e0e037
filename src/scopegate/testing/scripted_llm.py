"""An offline, scripted ADK model: replays function calls, reads tool results.

No model API is reachable in CI, so end-to-end runs use a ``BaseLlm`` whose
turns are Python callables. Each turn sees the function responses of the
previous turn and returns function calls or the final text, so a script can
act on what the tools really returned (e.g. search again by an error code
found in a snippet) instead of replaying canned answers.

Like a real model, it keeps no conversation state of its own: which step plays
is read from the request, as the number of model turns already in the
conversation ADK sends. One instance therefore serves any number of sessions,
one after the other or concurrently (``adk api_server``, ``adk eval`` with
several cases), and each session plays the script from its first step.
Step functions that keep state between steps (closures) should not be shared
by concurrent sessions: give each session its own script, or read what you
need from the responses.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import AsyncGenerator, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.genai import types
from pydantic import PrivateAttr


@dataclass(frozen=True)
class Turn:
    """What the model says in one turn: function calls, or a final text."""

    calls: tuple[tuple[str, dict[str, Any]], ...] = ()
    text: str | None = None
    # Function-call ids the model sets itself (None: ADK assigns one). Models choose these ids,
    # so tests use them to check that nothing in scopegate trusts them.
    call_ids: tuple[str | None, ...] = ()


def call(name: str, **args: Any) -> Turn:
    return Turn(calls=((name, args),))


def call_with_id(call_id: str, name: str, **args: Any) -> Turn:
    """A function call whose id the model chose (e.g. the same id on every turn)."""
    return Turn(calls=((name, args),), call_ids=(call_id,))


def final_text(text: str) -> Turn:
    return Turn(text=text)


# A step receives the function responses of the last turn (name, response dict) and returns a Turn.
Step = Callable[[list[tuple[str, dict[str, Any]]]], Turn]


def _constant(turn: Turn) -> Step:
    def step(_responses: list[tuple[str, dict[str, Any]]]) -> Turn:
        return turn

    return step


MAX_RESET_ORIGINS = 1024


def model_turns(contents: Sequence[types.Content]) -> int:
    """How many model turns a conversation already holds (the script position of the next turn)."""
    return sum(1 for content in contents if content.role == "model")


def _current_turn(contents: Sequence[types.Content]) -> Sequence[types.Content]:
    """The contents since the last user message with text (what this invocation added)."""
    for index in range(len(contents) - 1, -1, -1):
        content = contents[index]
        if content.role == "user" and any(part.text for part in content.parts or []):
            return contents[index:]
    return contents


def _fingerprint(contents: Sequence[types.Content]) -> str:
    digest = hashlib.sha256()
    for content in contents:
        digest.update(content.model_dump_json(exclude_none=True).encode("utf-8"))
        digest.update(b"\x00")
    return digest.hexdigest()


class ScriptedLlm(BaseLlm):
    """Plays ``steps`` in order, one per model turn of a conversation; records what it was shown.

    The step of a request is the number of model turns in its contents, so
    sessions never share a position. With ``per_invocation`` every user
    message starts the script again (the script is one invocation long).
    :meth:`reset` makes the conversations that send their next request after
    it start the script again (the old "reuse the model for the next
    invocation" idiom).
    """

    model: str = "scripted-offline"
    _steps: list[Step] = PrivateAttr(default_factory=list)
    _per_invocation: bool = PrivateAttr(default=False)
    _pending_reset: bool = PrivateAttr(default=False)
    # Conversation prefix fingerprint -> model turns it held when the script restarted (reset()).
    _origins: OrderedDict[tuple[int, str], int] = PrivateAttr(default_factory=OrderedDict)
    _seen_declarations: list[list[dict[str, Any]]] = PrivateAttr(default_factory=list)
    _seen_responses: list[list[tuple[str, dict[str, Any]]]] = PrivateAttr(default_factory=list)

    def __init__(self, steps: Sequence[Step | Turn], *, per_invocation: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._steps = [s if callable(s) else _constant(s) for s in steps]
        self._per_invocation = per_invocation

    @property
    def seen_declarations(self) -> list[list[dict[str, Any]]]:
        """Per turn, the function declarations the model was given (as JSON dicts)."""
        return self._seen_declarations

    @property
    def seen_responses(self) -> list[list[tuple[str, dict[str, Any]]]]:
        return self._seen_responses

    def reset(self) -> None:
        """Restart the script for the next request of each conversation (and the ones after it)."""
        self._pending_reset = True

    def position(self, contents: Sequence[types.Content]) -> int:
        """The step the next turn of this conversation plays."""
        if self._per_invocation:
            return model_turns(_current_turn(contents))
        turns = model_turns(contents)
        if self._pending_reset:
            self._pending_reset = False
            self._origins[(len(contents), _fingerprint(contents))] = turns
            while len(self._origins) > MAX_RESET_ORIGINS:
                self._origins.popitem(last=False)
        origin = 0
        for (length, fingerprint), at in reversed(self._origins.items()):
            if length <= len(contents) and _fingerprint(contents[:length]) == fingerprint:
                origin = at
                break
        return turns - origin

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        declarations = []
        for tool in llm_request.config.tools or []:
            for fd in getattr(tool, "function_declarations", None) or []:
                declarations.append(fd.model_dump(exclude_none=True, mode="json"))
        self._seen_declarations.append(declarations)
        responses: list[tuple[str, dict[str, Any]]] = []
        if llm_request.contents:
            for part in llm_request.contents[-1].parts or []:
                if part.function_response is not None:
                    responses.append((part.function_response.name or "", dict(part.function_response.response or {})))
        self._seen_responses.append(responses)
        position = self.position(llm_request.contents)
        finished = position >= len(self._steps)
        turn = Turn(text="(script finished)") if finished else self._steps[position](responses)
        if turn.calls:
            ids = list(turn.call_ids) + [None] * (len(turn.calls) - len(turn.call_ids))
            parts = [
                types.Part(function_call=types.FunctionCall(name=n, args=a, id=i))
                for (n, a), i in zip(turn.calls, ids, strict=False)
            ]
        else:
            parts = [types.Part(text=turn.text or "")]
        usage = types.GenerateContentResponseUsageMetadata(
            prompt_token_count=0, candidates_token_count=0, total_token_count=0
        )
        yield LlmResponse(content=types.Content(role="model", parts=parts), usage_metadata=usage)


def function_responses(events: Sequence[Any]) -> list[tuple[str, dict[str, Any]]]:
    """(tool name, response) of every function response in a run's ADK events, in order."""
    return [
        (part.function_response.name or "", dict(part.function_response.response or {}))
        for event in events
        for part in (event.content.parts if event.content and event.content.parts else [])
        if part.function_response is not None
    ]
