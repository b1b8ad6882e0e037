"""Test utilities for applications: an offline scripted model for ADK runs."""

from scopegate.testing.scripted_llm import ScriptedLlm, Turn, call, final_text

__all__ = ["ScriptedLlm", "Turn", "call", "final_text"]
