"""Test utilities for applications: an offline scripted model for ADK runs, multi-process consistency runs.

Imported lazily, so ``python -m scopegate.testing.consistency`` workers do not load Google ADK.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scopegate.testing.scripted_llm import (
        ScriptedLlm,
        Turn,
        call,
        call_with_id,
        final_text,
        function_responses,
    )

__all__ = ["ScriptedLlm", "Turn", "call", "call_with_id", "final_text", "function_responses"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from scopegate.testing import scripted_llm

        return getattr(scripted_llm, name)
    raise AttributeError(f"module 'scopegate.testing' has no attribute {name!r}")
