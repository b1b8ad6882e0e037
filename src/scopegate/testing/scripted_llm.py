"""An offline, scripted ADK model: replays function calls, reads tool results.

No model API is reachable in CI, so end-to-end runs use a ``BaseLlm`` whose
turns are Python callables. Each turn sees the function responses of the
previous turn and returns function calls or the final text, so a script can
act on what the tools really returned (e.g. search again by an error code
found in a snippet) instead of replaying canned answers.
"""

from __future__ import annotations

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


def call(name: str, **args: Any) -> Turn:
    return Turn(calls=((name, args),))


def final_text(text: str) -> Turn:
    return Turn(text=text)


# A step receives the function responses of the last turn (name, response dict) and returns a Turn.
Step = Callable[[list[tuple[str, dict[str, Any]]]], Turn]


def _constant(turn: Turn) -> Step:
    def step(_responses: list[tuple[str, dict[str, Any]]]) -> Turn:
        return turn

    return step


class ScriptedLlm(BaseLlm):
    """Plays ``steps`` in order, one per model turn; records what it was shown."""

    model: str = "scripted-offline"
    _steps: list[Step] = PrivateAttr(default_factory=list)
    _position: int = PrivateAttr(default=0)
    _seen_declarations: list[list[dict[str, Any]]] = PrivateAttr(default_factory=list)
    _seen_responses: list[list[tuple[str, dict[str, Any]]]] = PrivateAttr(default_factory=list)

    def __init__(self, steps: Sequence[Step | Turn], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._steps = [s if callable(s) else _constant(s) for s in steps]

    @property
    def seen_declarations(self) -> list[list[dict[str, Any]]]:
        """Per turn, the function declarations the model was given (as JSON dicts)."""
        return self._seen_declarations

    @property
    def seen_responses(self) -> list[list[tuple[str, dict[str, Any]]]]:
        return self._seen_responses

    def reset(self) -> None:
        self._position = 0

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
        if self._position >= len(self._steps):
            turn = Turn(text="(script finished)")
        else:
            turn = self._steps[self._position](responses)
            self._position += 1
        if turn.calls:
            parts = [types.Part(function_call=types.FunctionCall(name=n, args=a)) for n, a in turn.calls]
        else:
            parts = [types.Part(text=turn.text or "")]
        usage = types.GenerateContentResponseUsageMetadata(
            prompt_token_count=0, candidates_token_count=0, total_token_count=0
        )
        yield LlmResponse(content=types.Content(role="model", parts=parts), usage_metadata=usage)
