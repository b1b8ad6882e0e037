"""Which model an eval runs: the local GGUF models, a Gemini model id, or LiteLLM.

``offline:0.5b`` / ``offline:1.5b`` (optionally ``offline:1.5b:needs_tool_first``)
assemble and load the pinned local model; ``gemini-2.5-flash`` (any id without a
prefix) is handed to ADK as is and needs ``GOOGLE_API_KEY``; ``litellm:PROVIDER/MODEL``
uses ADK's ``LiteLlm`` (needs the ``litellm`` package and the provider's key).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from google.adk.models.base_llm import BaseLlm

from scopegate.errors import ConfigError
from scopegate.evals.decoding import DECISIONS, Decision
from scopegate.evals.models.assemble import ensure_model, recipe

DEFAULT_DECISION: dict[str, Decision] = {"qwen2.5-coder-0.5b": "direct", "qwen2.5-coder-1.5b": "needs_tool_first"}


@dataclass(frozen=True)
class ModelChoice:
    spec: str
    kind: str  # offline | gemini | litellm
    name: str
    decision: Decision = "direct"

    @property
    def label(self) -> str:
        return f"{self.name} ({self.decision})" if self.kind == "offline" else self.name


def parse_model(spec: str) -> ModelChoice:
    if spec.startswith("offline:"):
        parts = spec.split(":")
        rec = recipe(parts[1] if len(parts) > 1 else "0.5b")
        decision = parts[2] if len(parts) > 2 else DEFAULT_DECISION[rec.key]
        if decision not in DECISIONS:
            raise ConfigError(f"--model {spec}: decision must be one of {', '.join(DECISIONS)}")
        return ModelChoice(spec, "offline", rec.key, decision)
    if spec.startswith("litellm:"):
        return ModelChoice(spec, "litellm", spec.removeprefix("litellm:"))
    if not spec:
        raise ConfigError("--model is empty")
    return ModelChoice(spec, "gemini", spec)


def build_model(
    choice: ModelChoice, *, say: Any = None, seed: int | None = None, temperature: float | None = None
) -> BaseLlm | str:
    """The ADK model object (or model id string) for this choice; loads the local model once."""
    if choice.kind == "offline":
        from scopegate.evals.llama import EngineSettings, LlamaEngine
        from scopegate.evals.offline_llm import OfflineLlm

        path: Path = ensure_model(choice.name, say=say)
        engine = LlamaEngine(EngineSettings.for_model(path))
        return OfflineLlm(
            engine=engine, model=choice.name, decision=choice.decision, seed=seed, temperature=temperature
        )
    if choice.kind == "litellm":
        try:
            from google.adk.models.lite_llm import LiteLlm
        except ImportError as exc:
            raise ConfigError("litellm models need the litellm package (pip install litellm)") from exc
        return LiteLlm(model=choice.name)
    if not (os.environ.get("GOOGLE_API_KEY") or os.environ.get("GOOGLE_GENAI_USE_VERTEXAI")):
        raise ConfigError(f"model {choice.name!r} is a Gemini id: set GOOGLE_API_KEY (or Vertex AI settings)")
    return choice.name
