"""Config files accept the relevance and retrieval keys of a search spec (issue 14)."""

from __future__ import annotations

from pathlib import Path

import pytest

from scopegate.config.loader import load_config
from scopegate.validation import ConfigValidationError

BASE = """
version: 1
backends:
  local: {type: embedded, path: ./data}
search_tools:
  - backend: local
    name: search_tickets
    description: Search tickets.
    text_fields: ["subject^3", "body"]
    result_fields: [subject]
"""


def test_retrieval_keys_reach_the_spec(tmp_path: Path) -> None:
    path = tmp_path / "scopegate.yaml"
    extra = (
        "    field_combination: best_fields\n    tie_breaker: 0.3\n    retrieval: hybrid\n    fusion: rrf\n"
        "    fusion_weight: 0.6\n    rrf_k: 20\n    retrieval_depth: 50\n    embedder: minilm-l6-int8\n"
        "    embed_fields: [body]\n"
    )
    path.write_text(BASE + extra)
    spec = load_config(path).search_tools[0]
    assert (spec.field_combination, spec.tie_breaker, spec.retrieval, spec.fusion) == (
        "best_fields",
        0.3,
        "hybrid",
        "rrf",
    )
    assert (spec.fusion_weight, spec.rrf_k, spec.retrieval_depth, spec.embed_fields) == (0.6, 20, 50, ("body",))


@pytest.mark.parametrize("bad", ["retrieval: semantic", "field_combination: cross_fields", "fusion_weight: 2"])
def test_bad_retrieval_keys_name_the_key(tmp_path: Path, bad: str) -> None:
    path = tmp_path / "scopegate.yaml"
    path.write_text(BASE + f"    {bad}\n")
    with pytest.raises(ConfigValidationError, match=bad.split(":")[0]):
        load_config(path)
