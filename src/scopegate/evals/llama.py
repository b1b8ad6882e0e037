"""A typed wrapper around xllamacpp (llama.cpp's server API, in process): the only module that imports it.

xllamacpp ships no type information; everything it returns is checked and
converted here, so the rest of scopegate.evals stays ``mypy --strict``.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scopegate.errors import ScopegateError

THREADS_ENV = "SCOPEGATE_LLM_THREADS"
PRIME_TEXT = "\u00a7"  # a first user token no real message starts with


class LlamaError(ScopegateError):
    """The local model could not be loaded or did not answer."""


class ContextOverflowError(LlamaError):
    """The prompt (instruction, tool declarations, conversation) is larger than the model's context window."""

    def __init__(self, prompt_tokens: int, n_ctx: int) -> None:
        self.prompt_tokens = prompt_tokens
        self.n_ctx = n_ctx
        super().__init__(
            f"CONTEXT_OVERFLOW: the prompt is {prompt_tokens} tokens (instruction, tool declarations and "
            f"conversation) and the model's context window {n_ctx}; declare fewer tools (an OpenAPI catalog "
            "declares three) or use a model with a larger window"
        )


@dataclass(frozen=True)
class EngineSettings:
    """Deterministic defaults: greedy decoding, a fixed seed, one slot, two threads."""

    model_path: Path
    n_ctx: int = 8192
    threads: int = 2
    # Reusing the KV cache of a shared prefix saves most of the prompt evaluation, but where the prompt
    # is split (cached part / new part) changes the numerics. ``prime`` makes that split the same for
    # every case (just after the system prompt), so a case decodes the same whatever ran before it.
    cache_prompt: bool = True
    seed: int = 1234
    temperature: float = 0.0
    max_tokens: int = 320

    @classmethod
    def for_model(cls, model_path: Path, **overrides: Any) -> EngineSettings:
        return cls(model_path=model_path, threads=default_threads(), **overrides)


def default_threads() -> int:
    """``SCOPEGATE_LLM_THREADS``, else 2 on an idle machine and 1 on a busy one.

    Measured on 2 shared cores at load 6-9: one thread decoded a 200-token turn in ~7 s, two threads
    in 23-60 s (the threads wait for each other whenever one is preempted). ggml splits work by rows,
    so the thread count does not change the output.
    """
    configured = os.environ.get(THREADS_ENV, "auto")
    if configured != "auto":
        return max(1, int(configured))
    cores = os.cpu_count() or 1
    return 2 if cores >= 2 and os.getloadavg()[0] < 1.0 else 1


@dataclass(frozen=True)
class Completion:
    text: str
    prompt_tokens: int
    completion_tokens: int
    seconds: float
    finish_reason: str


def _module() -> Any:
    try:
        import xllamacpp
    except ImportError as exc:  # pragma: no cover - depends on the extra
        raise LlamaError("the offline model needs the eval extra: pip install 'scopegate[eval]'") from exc
    return xllamacpp


class LlamaEngine:
    """One loaded GGUF model. ``complete`` is blocking and serialised (one slot); call it off the event loop."""

    def __init__(self, settings: EngineSettings) -> None:
        if not settings.model_path.is_file():
            raise LlamaError(f"no model file at {settings.model_path}")
        xl = _module()
        params = xl.CommonParams()
        params.model.path = str(settings.model_path)
        params.n_ctx = settings.n_ctx
        params.n_parallel = 1
        params.cpuparams.n_threads = settings.threads
        params.cpuparams_batch.n_threads = settings.threads
        params.sampling.temp = settings.temperature
        params.sampling.seed = settings.seed
        params.sampling.top_k = 1 if settings.temperature == 0 else params.sampling.top_k
        params.warmup = False
        params.use_jinja = True
        params.verbosity = -1
        self.settings = settings
        self._lock = threading.Lock()
        started = time.perf_counter()
        try:
            self._server = xl.Server(params)
        except Exception as exc:
            raise LlamaError(f"could not load {settings.model_path.name}: {exc}") from exc
        self.load_seconds = time.perf_counter() - started

    def prime(self, system: str) -> None:
        """Leave exactly ``system`` (+ the user header) in the cache: the next case starts from a known split."""
        if self.settings.cache_prompt:
            self.complete(
                [{"role": "system", "content": system}, {"role": "user", "content": PRIME_TEXT}], max_tokens=1
            )

    def complete(
        self,
        messages: Sequence[Mapping[str, str]],
        *,
        grammar: str | None = None,
        seed: int | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> Completion:
        request: dict[str, Any] = {
            "messages": [dict(m) for m in messages],
            "max_tokens": max_tokens or self.settings.max_tokens,
            "temperature": self.settings.temperature if temperature is None else temperature,
            "seed": self.settings.seed if seed is None else seed,
            "cache_prompt": self.settings.cache_prompt,
        }
        if request["temperature"] == 0:
            request["top_k"] = 1
        if grammar is not None:
            request["grammar"] = grammar
        started = time.perf_counter()
        with self._lock:
            try:
                raw = self._server.handle_chat_completions(request)
            except Exception as exc:
                raise LlamaError(f"the model failed: {exc}") from exc
        return _completion(raw, time.perf_counter() - started)


def _completion(raw: Any, seconds: float) -> Completion:
    if not isinstance(raw, dict):
        raise LlamaError(f"unexpected answer from llama.cpp: {type(raw).__name__}")
    if "error" in raw:
        error = raw["error"]
        if isinstance(error, dict) and error.get("type") == "exceed_context_size_error":
            raise ContextOverflowError(int(error.get("n_prompt_tokens") or 0), int(error.get("n_ctx") or 0))
        raise LlamaError(f"llama.cpp: {error}")
    try:
        choice = raw["choices"][0]
        text = choice["message"].get("content") or ""
        usage = raw.get("usage") or {}
        return Completion(
            text=str(text),
            prompt_tokens=int(usage.get("prompt_tokens", 0)),
            completion_tokens=int(usage.get("completion_tokens", 0)),
            seconds=seconds,
            finish_reason=str(choice.get("finish_reason", "")),
        )
    except (KeyError, IndexError, TypeError, ValueError) as exc:
        raise LlamaError(f"unexpected answer from llama.cpp: {exc}") from exc
