"""Re-embed an embedded index after a model change (``scopegate reembed INDEX``)."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

from tqdm import tqdm

from scopegate.errors import ConfigError


def reembed_index(path: str | Path, *, progress: bool = True) -> dict[str, Any]:
    """Open the index with its stored spec, re-embed every document, and report what was done."""
    from scopegate.backends.embedded import EmbeddedBackend

    opened = EmbeddedBackend.open(path, reembed=False, check_vectors=False)
    if opened.vectors is None:
        raise ConfigError(f"the index at {path} uses keyword retrieval: there are no vectors to rebuild")
    started = time.perf_counter()
    bar = tqdm(total=opened.count_sync(), unit="doc", desc="embedding", disable=not progress, file=sys.stderr)
    try:
        count = opened.reembed_sync(progress=bar.update)
    finally:
        bar.close()
    return {
        "reembedded": count,
        "model": opened.vectors.encoder.model_id,
        "seconds": round(time.perf_counter() - started, 3),
    }
