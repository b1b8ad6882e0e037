"""Declarations larger than the offline model's context window: a named, structured failure, not a crash."""

from __future__ import annotations

import pytest

from scopegate.evals.llama import ContextOverflowError, LlamaError, _completion


def test_a_prompt_over_the_window_is_a_context_overflow_with_both_sizes() -> None:
    # What llama.cpp answered for Chargebee's 26 allowlisted operations declared flat (bench/evalsets/catalog).
    raw = {"error": {"code": 400, "message": "request (8246 tokens) exceeds the available context size (8192 tokens)",
                     "type": "exceed_context_size_error", "n_prompt_tokens": 8246, "n_ctx": 8192}}  # fmt: skip
    with pytest.raises(ContextOverflowError) as caught:
        _completion(raw, 0.1)
    assert (caught.value.prompt_tokens, caught.value.n_ctx) == (8246, 8192)
    assert str(caught.value).startswith("CONTEXT_OVERFLOW: the prompt is 8246 tokens")


def test_other_llama_errors_stay_llama_errors() -> None:
    with pytest.raises(LlamaError) as caught:
        _completion({"error": {"code": 500, "message": "boom"}}, 0.1)
    assert not isinstance(caught.value, ContextOverflowError)
