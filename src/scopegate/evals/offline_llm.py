"""An ADK ``BaseLlm`` backed by a local GGUF model, with constrained decoding from the request's tools.

Each ADK model call becomes one chat completion whose output is forced by the
JSON schema of :mod:`scopegate.evals.decoding`: a call of one of the declared
tools with arguments valid for that tool's schema, or a reply. Earlier turns
are shown back in the same format, tool results as ``tool`` messages, so the
model can read what a search returned and answer, or search again.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator, Mapping
from dataclasses import dataclass, field
from typing import Any

from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.genai import types
from pydantic import PrivateAttr

from scopegate.evals.decoding import (
    Decision,
    ModelTurn,
    ToolSpec,
    encode_call,
    encode_reply,
    lark_grammar,
    parse_turn,
    system_prompt,
    turn_schema,
)
from scopegate.evals.llama import Completion, LlamaEngine

MAX_TOOL_RESULT_CHARS = 2000
MAX_STRING_CHARS = 240
DROPPED_KEYS = frozenset({"total_relation", "truncated"})  # boilerplate the local model does not need
MAX_CALLS_PER_TURN = 4  # after this many calls since the user's message, the model must answer
HIDDEN_CALLS = frozenset({"adk_request_confirmation"})


@dataclass
class LlmStats:
    """What the model did in one run (reset per case by the eval runner)."""

    calls: int = 0
    seconds: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    raw: list[str] = field(default_factory=list)
    last: Completion | None = None

    def add(self, completion: Completion) -> None:
        self.last = completion
        self.calls += 1
        self.seconds += completion.seconds
        self.prompt_tokens += completion.prompt_tokens
        self.completion_tokens += completion.completion_tokens
        self.raw.append(completion.text)


def tool_specs(llm_request: LlmRequest) -> list[ToolSpec]:
    """The function declarations ADK put in the request, as plain specs."""
    specs: list[ToolSpec] = []
    for tool in llm_request.config.tools or [] if llm_request.config else []:
        for fd in getattr(tool, "function_declarations", None) or []:
            params: Any = fd.parameters_json_schema
            if params is None and fd.parameters is not None:
                params = fd.parameters.model_dump(exclude_none=True, mode="json")
            specs.append(ToolSpec(fd.name or "", fd.description or "", params or {"type": "object"}))
    return specs


def _instruction(llm_request: LlmRequest) -> str:
    system = llm_request.config.system_instruction if llm_request.config else None
    if system is None:
        return ""
    if isinstance(system, str):
        return system
    if isinstance(system, types.Content):
        return "\n".join(p.text for p in system.parts or [] if p.text)
    return str(system)


def _shorten(value: Any) -> Any:
    """Long strings (snippets, notes) cut to MAX_STRING_CHARS: a small context window holds more hits."""
    if isinstance(value, str):
        return value if len(value) <= MAX_STRING_CHARS else value[: MAX_STRING_CHARS - 1] + "…"
    if isinstance(value, Mapping):
        return {k: _shorten(v) for k, v in value.items() if k not in DROPPED_KEYS}
    if isinstance(value, list):
        return [_shorten(v) for v in value]
    return value


def _clip(value: Any) -> str:
    text = json.dumps(_shorten(value), ensure_ascii=False, default=str, separators=(",", ":"))
    return text if len(text) <= MAX_TOOL_RESULT_CHARS else text[: MAX_TOOL_RESULT_CHARS - 20] + "…(truncated)"


def chat_messages(llm_request: LlmRequest, decision: Decision) -> list[dict[str, str]]:
    """System prompt + the conversation so far, with the model's own turns in its output format."""
    messages = [
        {"role": "system", "content": system_prompt(_instruction(llm_request), tool_specs(llm_request), decision)}
    ]
    for content in llm_request.contents or []:
        texts: list[str] = []
        for part in content.parts or []:
            if part.function_call is not None and part.function_call.name not in HIDDEN_CALLS:
                messages.append(
                    {
                        "role": "assistant",
                        "content": encode_call(part.function_call.name or "", part.function_call.args or {}, decision),
                    }
                )
            elif part.function_response is not None and part.function_response.name not in HIDDEN_CALLS:
                name = part.function_response.name or "tool"
                messages.append({"role": "tool", "content": f"{name} result: {_clip(part.function_response.response)}"})
            elif part.text and not part.thought:
                texts.append(part.text)
        if texts:
            text = "\n".join(texts)
            if content.role == "model":
                messages.append({"role": "assistant", "content": encode_reply(text, decision)})
            else:
                messages.append({"role": "user", "content": text})
    return messages


def _key(args: Mapping[str, Any]) -> str:
    return json.dumps(args, sort_keys=True, default=str)


def calls_since_user(llm_request: LlmRequest) -> list[tuple[str, str]]:
    """(tool, arguments) of the model's calls after the last user text message.

    A call whose answer was a retryable error is left out: calling it again is a retry, not a loop.
    """
    calls: list[tuple[str, str]] = []
    retryable: set[str] = set()
    for content in llm_request.contents or []:
        for part in content.parts or []:
            if content.role == "user" and part.text:
                calls, retryable = [], set()
            elif part.function_call is not None and part.function_call.name not in HIDDEN_CALLS:
                calls.append((part.function_call.name or "", _key(part.function_call.args or {})))
            elif part.function_response is not None:
                response = part.function_response.response or {}
                name = part.function_response.name or ""
                if response.get("status") == "error" and response.get("retryable"):
                    retryable.add(name)
                else:
                    retryable.discard(name)
    return [c for c in calls if c[0] not in retryable]


class OfflineLlm(BaseLlm):
    """``LlmAgent(model=OfflineLlm(engine=...))``: a local model, deterministic by default."""

    model: str = "offline-gguf"
    decision: Decision = "direct"
    seed: int | None = None
    temperature: float | None = None
    _engine: LlamaEngine = PrivateAttr()
    _stats: LlmStats = PrivateAttr(default_factory=LlmStats)
    _primed: bool = PrivateAttr(default=False)

    def __init__(self, engine: LlamaEngine, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._engine = engine

    @property
    def stats(self) -> LlmStats:
        return self._stats

    def reset_stats(self) -> None:
        """Called by the eval runner before each case: new counters, and a cache reset to the system prompt."""
        self._stats = LlmStats()
        self._primed = False

    async def _decode(self, messages: list[dict[str, str]], specs: list[ToolSpec]) -> ModelTurn:
        schema = turn_schema(specs, self.decision)
        completion = await asyncio.to_thread(
            self._engine.complete, messages, grammar=lark_grammar(schema), seed=self.seed, temperature=self.temperature
        )
        self._stats.add(completion)
        return parse_turn(completion.text, [s.name for s in specs])

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        specs = tool_specs(llm_request)
        messages = chat_messages(llm_request, self.decision)
        earlier = calls_since_user(llm_request)
        if not self._primed:
            await asyncio.to_thread(self._engine.prime, messages[0]["content"])
            self._primed = True
        # Bounded turns: past the per-turn budget, or when the model repeats a call it already made
        # (same tool, same arguments), it is decoded again with only the reply branch allowed.
        turn = await self._decode(messages, specs if len(earlier) < MAX_CALLS_PER_TURN else [])
        if turn.tool is not None and (turn.tool, _key(turn.arguments)) in earlier:
            turn = await self._decode(messages, [])
        if turn.tool is not None:
            part = types.Part(function_call=types.FunctionCall(name=turn.tool, args=dict(turn.arguments)))
        else:
            part = types.Part(text=turn.reply or "")
        last = self._stats.last
        usage = types.GenerateContentResponseUsageMetadata(
            prompt_token_count=last.prompt_tokens if last else 0,
            candidates_token_count=last.completion_tokens if last else 0,
            total_token_count=(last.prompt_tokens + last.completion_tokens) if last else 0,
        )
        yield LlmResponse(content=types.Content(role="model", parts=[part]), usage_metadata=usage)


def describe(engine: LlamaEngine) -> Mapping[str, Any]:
    s = engine.settings
    return {
        "model": s.model_path.name,
        "threads": s.threads,
        "seed": s.seed,
        "temperature": s.temperature,
        "n_ctx": s.n_ctx,
    }
