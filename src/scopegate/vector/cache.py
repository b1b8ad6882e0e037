"""A disk cache of embeddings keyed by model id and text, so a collection is encoded once.

Used by the relevance harness and the benchmarks (``.cache/embeddings/<model id>/``);
applications can wrap any encoder with it. Writes replace the file atomically.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from scopegate.vector.encoder import Encoder, Vectors


def _key(kind: str, text: str) -> str:
    return hashlib.sha256(f"{kind}\0{text}".encode()).hexdigest()[:24]


class CachedEncoder:
    """Wraps an encoder; vectors already seen (same model id, kind and text) come from disk."""

    def __init__(self, inner: Encoder, directory: str | Path) -> None:
        import numpy as np

        self.inner = inner
        self.model_id = inner.model_id
        self.dim = inner.dim
        safe = re.sub(r"[^A-Za-z0-9._-]+", "_", inner.model_id)[:120]
        self.directory = Path(directory) / safe
        self.directory.mkdir(parents=True, exist_ok=True)
        self._vectors_path = self.directory / "vectors.npy"
        self._keys_path = self.directory / "keys.json"
        self._rows: dict[str, int] = {}
        self._matrix: Any = np.zeros((0, self.dim), dtype=np.float32)
        if self._vectors_path.exists() and self._keys_path.exists():
            keys = json.loads(self._keys_path.read_text("utf-8"))
            matrix = np.load(self._vectors_path)
            if len(keys) == len(matrix) and matrix.shape[1:] == (self.dim,):
                self._rows = {k: i for i, k in enumerate(keys)}
                self._matrix = matrix
        self.hits = 0
        self.misses = 0

    def encode(self, texts: Sequence[str], *, kind: Literal["query", "document"] = "document") -> Vectors:
        import numpy as np

        keys = [_key(kind, t) for t in texts]
        missing = list(dict.fromkeys(k for k in keys if k not in self._rows))
        if missing:
            by_key = {k: t for k, t in zip(keys, texts, strict=True)}
            fresh = self.inner.encode([by_key[k] for k in missing], kind=kind)
            base = len(self._matrix)
            self._matrix = np.concatenate([self._matrix, fresh.astype(np.float32)])
            for offset, k in enumerate(missing):
                self._rows[k] = base + offset
            self._save()
        self.misses += len(missing)
        self.hits += len(keys) - len(missing)
        return np.asarray(self._matrix[[self._rows[k] for k in keys]], dtype=np.float32).reshape(len(keys), self.dim)

    def _save(self) -> None:
        import numpy as np

        ordered = sorted(self._rows, key=self._rows.__getitem__)
        tmp = self._vectors_path.with_suffix(".tmp.npy")
        np.save(tmp, self._matrix)
        os.replace(tmp, self._vectors_path)
        tmp_keys = self._keys_path.with_suffix(".tmp")
        tmp_keys.write_text(json.dumps(ordered), "utf-8")
        os.replace(tmp_keys, self._keys_path)
