"""Test utilities for applications: an offline scripted model for end-to-end runs of your ADK agents.

The scripted model is imported on first use, so importing this package does not load Google ADK.
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
