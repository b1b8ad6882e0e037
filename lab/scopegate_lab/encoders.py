"""A deterministic stand-in encoder for tests of vector and hybrid retrieval (no model, exact, fast)."""

from __future__ import annotations

import hashlib
from typing import Any

from scopegate.vector.encoder import FunctionEncoder


def bag_of_words(texts: list[str], dim: int = 32) -> Any:
    """Each lower-cased word adds 1 to a hashed dimension (plus a small constant so no vector is zero)."""
    import numpy as np

    out = np.zeros((len(texts), dim), dtype=np.float32)
    for row, text in enumerate(texts):
        for word in text.lower().split():
            out[row, int(hashlib.sha1(word.encode()).hexdigest(), 16) % dim] += 1.0
        out[row, 0] += 0.01
    return out


def bag_of_words_encoder(model_id: str = "bow-32", dim: int = 32) -> FunctionEncoder:
    return FunctionEncoder(lambda texts: bag_of_words(texts, dim), model_id=model_id, dim=dim)


def ticket(i: int, tenant: str, text: str, product: str = "payments") -> dict[str, Any]:
    """A demo-spec ticket whose subject and body are ``text`` (id ``<tenant>-<i>``)."""
    return {
        "ticket_id": f"{tenant}-{i}",
        "tenant_id": tenant,
        "product": product,
        "status": "open",
        "subject": text,
        "body": text,
    }
