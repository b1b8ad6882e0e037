"""Embedding documents on ingest: batched encoding, progress, the model id kept with the vectors.

A backend adds each document it indexes (and each id it deletes) here, then
calls :meth:`VectorIngest.stage` right before its own commit and
``store.promote`` right after it (see :mod:`scopegate.vector.store`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from scopegate.backends.base import ProgressCallback
from scopegate.scope import document_key
from scopegate.search.fields import embedding_text
from scopegate.search.spec import SearchSpec
from scopegate.vector.encoder import Encoder, Vectors, encoder_from_name
from scopegate.vector.store import VectorRow, VectorStore

ENCODE_BATCH = 256


class VectorIngest:
    def __init__(self, spec: SearchSpec, encoder: Encoder, store: VectorStore) -> None:
        self.spec = spec
        self.encoder = encoder
        self.store = store
        self._rows: list[VectorRow] = []
        self._texts: list[str] = []
        self._deleted: list[str] = []

    @classmethod
    def open(
        cls,
        spec: SearchSpec,
        directory: Path | None,
        encoder: Encoder | None,
        tantivy_opstamp: int,
        store_options: Mapping[str, Any] | None = None,
    ) -> VectorIngest:
        """``store_options``: VectorStore tuning (``exact_limit``, ``hnsw_m``, ``ef_search``)."""
        encoder = encoder or encoder_from_name(spec.embedder)
        store = VectorStore(
            directory,
            dim=encoder.dim,
            model_id=encoder.model_id,
            filter_fields=tuple(f.name for f in spec.filters),
            **dict(store_options or {}),
        )
        store.sync(tantivy_opstamp)
        return cls(spec, encoder, store)

    def stale_reason(self, documents: int) -> str | None:
        """Why the stored vectors cannot serve this encoder, or None."""
        stored = self.store.stored_model_id
        if stored is not None and stored != self.encoder.model_id:
            return f"the vectors were made by model {stored!r}, the encoder is {self.encoder.model_id!r}"
        if documents and self.store.live_count < documents:
            return f"{documents - self.store.live_count} of {documents} documents have no vector"
        return None

    def add(self, record: Mapping[str, Any]) -> None:
        spec = self.spec
        groups: Any = record.get(spec.group_field) if spec.group_field else None
        group_list = (groups,) if isinstance(groups, str) else tuple(str(g) for g in groups or ())
        self._rows.append(
            VectorRow(
                doc_id=str(record[spec.id_field]),
                tenant=str(record[spec.tenant_field]),  # canonical already (scopegate.scope.id_problem)
                groups=group_list,
                filters={f.name: str(record[f.name]) for f in spec.filters if record.get(f.name) not in (None, "")},
            )
        )
        self._texts.append(embedding_text(spec, record))

    def delete(self, doc_id: str, tenant: str) -> None:
        """The document (tenant, id) is deleted; the same id in another tenant is not."""
        self._deleted.append(document_key(tenant, doc_id))

    def encode_documents(self, texts: list[str], progress: ProgressCallback | None = None) -> Vectors:
        import numpy as np

        parts = []
        for start in range(0, len(texts), ENCODE_BATCH):
            chunk = texts[start : start + ENCODE_BATCH]
            parts.append(self.encoder.encode(chunk, kind="document"))
            if progress:
                progress(len(chunk))
        if not parts:
            return np.zeros((0, self.encoder.dim), dtype=np.float32)
        out: Vectors = np.concatenate(parts).astype(np.float32)
        return out

    def encode_query(self, text: str) -> Vectors:
        vectors: Vectors = self.encoder.encode([text], kind="query")[0]
        return vectors

    def stage(self, base_opstamp: int, *, progress: ProgressCallback | None = None, replace_all: bool = False) -> None:
        """Encode what was added since the last stage and write it as the store's pending batch."""
        vectors = self.encode_documents(self._texts, progress)
        try:
            self.store.stage(self._rows, vectors, self._deleted, base_opstamp, replace_all=replace_all)
        finally:
            self._rows, self._texts, self._deleted = [], [], []

    def discard(self) -> None:
        self._rows, self._texts, self._deleted = [], [], []
        self.store.discard()
