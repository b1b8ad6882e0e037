"""The offline eval model's own tokenizer (Qwen2.5), read out of its GGUF file, for token counts.

The GGUF file carries the BPE vocabulary and merges (``tokenizer.ggml.tokens``/``merges``);
they are loaded into the ``tokenizers`` library with Qwen2's pre-tokenizer (its split regex,
then byte-level), so counts are what the model itself would see, with no hub download.
``bench_catalog.py --check-tokenizer`` compares the count with llama.cpp's on sample texts.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any, BinaryIO

from tokenizers import Regex, Tokenizer, models, pre_tokenizers

# Qwen2's pre-tokenizer split (its tokenizer.json), the same as llama.cpp's "qwen2" pre-tokenizer.
QWEN2_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
WANTED = ("tokenizer.ggml.tokens", "tokenizer.ggml.merges", "tokenizer.ggml.pre", "tokenizer.ggml.model")


def _read(f: BinaryIO, fmt: str) -> Any:
    return struct.unpack(fmt, f.read(struct.calcsize(fmt)))[0]


def _string(f: BinaryIO) -> str:
    return f.read(_read(f, "<Q")).decode("utf-8", "replace")


def _value(f: BinaryIO, kind: int) -> Any:
    if kind == 8:
        return _string(f)
    if kind == 9:
        item, count = _read(f, "<I"), _read(f, "<Q")
        return [_value(f, item) for _ in range(count)]
    return _read(f, _SCALARS[kind])


def gguf_metadata(path: Path, wanted: tuple[str, ...] = WANTED) -> dict[str, Any]:
    """The wanted key/values of a GGUF (v2/v3) file's header."""
    out: dict[str, Any] = {}
    with path.open("rb") as f:
        if f.read(4) != b"GGUF":
            raise ValueError(f"{path} is not a GGUF file")
        version = _read(f, "<I")
        if version < 2:
            raise ValueError(f"GGUF version {version} is not read here")
        _read(f, "<Q")  # tensors
        for _ in range(_read(f, "<Q")):
            key = _string(f)
            value = _value(f, _read(f, "<I"))
            if key in wanted:
                out[key] = value
                if len(out) == len(wanted):
                    break
    return out


def qwen_tokenizer(path: Path) -> Tokenizer:
    meta = gguf_metadata(path)
    if meta.get("tokenizer.ggml.model") != "gpt2" or meta.get("tokenizer.ggml.pre") != "qwen2":
        raise ValueError(
            f"not a Qwen2 BPE tokenizer: {meta.get('tokenizer.ggml.model')}/{meta.get('tokenizer.ggml.pre')}"
        )
    vocab = {token: i for i, token in enumerate(meta["tokenizer.ggml.tokens"])}
    merges = [tuple(m.split(" ", 1)) for m in meta["tokenizer.ggml.merges"]]
    tokenizer = Tokenizer(models.BPE(vocab=vocab, merges=merges))
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(QWEN2_SPLIT), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    return tokenizer
