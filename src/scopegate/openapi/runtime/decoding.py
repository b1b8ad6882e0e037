"""Decode a response body incrementally, with the byte limit on *decoded* bytes.

httpx decodes ``Content-Encoding`` by itself and hands out each chunk only
once it is fully decoded, so a 1.8 KB ``gzip, gzip`` body can grow to a GiB
before any limit sees it. Here the raw bytes (``Response.aiter_raw``) go
through a pipeline of decompressors, one per layer, each asked for at most
:data:`STEP` bytes at a time (``max_length`` for zlib and zstd,
``output_buffer_limit`` for brotli). Every layer's output is counted: a layer
that produces more than the limit ends the read, as does raw input over the
limit. So memory is the kept output (at most the limit) plus one step per
layer plus the decompressors' windows (zstd's is capped at 8 MiB, RFC 9659).
The caller runs :meth:`BodyDecoder.feed` in a worker thread: zlib, brotli and
zstd release the GIL while they work, so the event loop is not held up.

Supported: ``gzip`` (and ``x-gzip``, multi-member), ``deflate`` (zlib or raw),
``br`` (brotli >= 1.2), ``zstd`` (multi-frame; ``compression.zstd`` or its
backport). At most :data:`MAX_LAYERS` layers, whose decoders' windows together stay
within 17 MiB (so ``br, br`` or ``br, zstd`` is refused, ``gzip, gzip`` or
``gzip, br`` is decoded and bounded); anything else is refused.
"""

from __future__ import annotations

import importlib
import sys
import zlib
from collections.abc import Callable
from typing import Any, Protocol

from scopegate.errors import ResponseUnreadable

STEP = 64 * 1024
MAX_LAYERS = 2
ZSTD_WINDOW_LOG_MAX = 23  # 8 MiB: the most RFC 9659 lets a zstd content-coding use


def _optional(module: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError:  # pragma: no cover - both are dependencies; without one, that coding is refused
        return None


BROTLI = _optional("brotli")
ZSTD = _optional("compression.zstd" if sys.version_info >= (3, 14) else "backports.zstd")


def _unsupported(what: str) -> ResponseUnreadable:
    return ResponseUnreadable("encoding", what)


def _broken(what: str) -> ResponseUnreadable:
    return ResponseUnreadable("decode", what)


class _Layer(Protocol):
    def push(self, data: bytes) -> None: ...

    def pull(self, max_length: int) -> bytes:
        """Up to ``max_length`` decoded bytes; ``b""`` when it needs more input."""
        ...


class _Zlib:
    """gzip (``wbits=31``; a new member restarts on ``unused_data``) or deflate (zlib, raw as a fallback)."""

    def __init__(self, wbits: int) -> None:
        self._wbits = wbits
        self._d = zlib.decompressobj(wbits)
        self._pending = b""
        self._started = False
        self._more = False  # the last call filled max_length: zlib may hold more output

    def push(self, data: bytes) -> None:
        self._pending += data

    def pull(self, max_length: int) -> bytes:
        while True:
            if self._d.eof:
                if self._wbits != 31 or not self._pending:
                    if self._wbits != 31:
                        self._pending = b""  # bytes after a deflate stream are ignored, as httpx does
                    return b""
                self._d = zlib.decompressobj(31)
            if not self._pending and not self._more:
                return b""
            data, self._pending = self._pending, b""
            try:
                out = self._d.decompress(data, max_length)
            except zlib.error:
                if self._wbits == zlib.MAX_WBITS and not self._started:
                    # Some servers send raw deflate as "deflate": read the same bytes that way.
                    self._wbits, self._d, self._pending = -zlib.MAX_WBITS, zlib.decompressobj(-zlib.MAX_WBITS), data
                    continue
                raise _broken("invalid compressed data") from None
            self._started = True
            self._pending = self._d.unused_data if self._d.eof else self._d.unconsumed_tail
            self._more = len(out) >= max_length
            if out:
                return out


class _Brotli:
    def __init__(self) -> None:
        if BROTLI is None:
            raise _unsupported("br")
        self._d: Any = BROTLI.Decompressor()
        self._pending = b""
        self._more = False

    def push(self, data: bytes) -> None:
        self._pending += data

    def pull(self, max_length: int) -> bytes:
        try:
            if self._more or not self._d.can_accept_more_data():
                data = b""  # output still inside the decoder, or input it kept: empty calls until done
            elif self._pending:
                data, self._pending = self._pending, b""
            else:
                return b""
            out = bytes(self._d.process(data, output_buffer_limit=max_length))
        except BROTLI.error:
            raise _broken("invalid brotli data") from None
        # The output buffer stops growing at the limit: a full one may leave more output inside.
        self._more = len(out) >= max_length
        return out


class _Zstd:
    def __init__(self) -> None:
        if ZSTD is None:
            raise _unsupported("zstd")
        self._d = self._new()
        self._pending = b""

    @staticmethod
    def _new() -> Any:
        return ZSTD.ZstdDecompressor(options={ZSTD.DecompressionParameter.window_log_max: ZSTD_WINDOW_LOG_MAX})

    def push(self, data: bytes) -> None:
        self._pending += data

    def pull(self, max_length: int) -> bytes:
        try:
            while True:
                if self._d.eof:
                    rest = self._d.unused_data + self._pending
                    if not rest:
                        return b""
                    self._d, self._pending = self._new(), rest
                if self._d.needs_input:
                    if not self._pending:
                        return b""
                    data, self._pending = self._pending, b""
                else:
                    data = b""
                out = bytes(self._d.decompress(data, max_length))
                if out:
                    return out
                if self._d.needs_input and not self._pending and not self._d.eof:
                    return b""
        except ZSTD.ZstdError:
            raise _broken("invalid zstd data") from None


_FACTORIES: dict[str, Callable[[], _Layer]] = {
    "gzip": lambda: _Zlib(31),
    "x-gzip": lambda: _Zlib(31),
    "deflate": lambda: _Zlib(zlib.MAX_WBITS),
    "br": _Brotli,
    "zstd": _Zstd,
}
# The most memory a decoder of each coding can hold besides its output (window and state). A brotli
# decoder keeps a ring buffer of up to 16 MiB (lgwin 24) and fills it before it returns any output.
WINDOW_BYTES = {"gzip": 1 << 18, "x-gzip": 1 << 18, "deflate": 1 << 18, "br": 1 << 24, "zstd": 1 << ZSTD_WINDOW_LOG_MAX}
MAX_WINDOW_BYTES = (1 << 24) + (1 << 20)  # one big window (brotli) and a small one (gzip)


def encodings(header: str | None) -> list[str]:
    """The codings of a ``Content-Encoding`` value, in the order they were applied (``identity`` dropped)."""
    if not header:
        return []
    return [c for c in (part.strip().lower() for part in header.split(",")) if c and c != "identity"]


class BodyDecoder:
    """Raw body bytes in, decoded bytes out, never more than ``limit`` per layer or of raw input.

    ``feed`` returns decoded pieces of at most :data:`STEP` bytes each, with a
    bounded amount of work per piece. Once the raw input, a layer's output or
    the decoded total passes the limit, ``over_limit`` is set and nothing more
    is decoded. Raises :class:`~scopegate.errors.ResponseUnreadable` for an
    unsupported stack of codings (at construction) or broken data.
    """

    def __init__(self, content_encoding: str | None, limit: int) -> None:
        codings = encodings(content_encoding)
        if len(codings) > MAX_LAYERS:
            raise _unsupported(f"{len(codings)} content-coding layers")
        unknown = [c for c in codings if c not in _FACTORIES]
        if unknown:
            raise _unsupported(unknown[0][:40])
        if sum(WINDOW_BYTES[c] for c in codings) > MAX_WINDOW_BYTES:
            raise _unsupported("stacked codings whose decoder windows exceed 17 MiB")
        # Decoding undoes the codings in reverse order of application.
        self._layers: list[_Layer] = [_FACTORIES[c]() for c in reversed(codings)]
        self._counts = [0] * len(self._layers)
        self.limit = limit
        self.raw_bytes = 0
        self.decoded_bytes = 0
        self.over_limit = False

    @property
    def layers(self) -> int:
        return len(self._layers)

    def feed(self, raw: bytes) -> list[bytes]:
        """Decode one raw chunk; the decoded pieces it completes (possibly none)."""
        self.raw_bytes += len(raw)
        if self.raw_bytes > self.limit:
            self.over_limit = True
        if self.over_limit:
            return []
        if not self._layers:
            return self._count([raw] if raw else [])
        self._layers[0].push(raw)
        out: list[bytes] = []
        while not self.over_limit:
            piece = self._pull(len(self._layers) - 1)
            if not piece:
                break
            out.extend(self._count([piece]))
        return out

    def _count(self, pieces: list[bytes]) -> list[bytes]:
        self.decoded_bytes += sum(len(p) for p in pieces)
        if self.decoded_bytes > self.limit:
            self.over_limit = True
        return pieces

    def _pull(self, index: int) -> bytes:
        layer = self._layers[index]
        while True:
            piece = layer.pull(STEP)
            if piece:
                self._counts[index] += len(piece)
                if index < len(self._layers) - 1 and self._counts[index] > self.limit:
                    self.over_limit = True  # an inner layer alone is past the limit
                    return b""
                return piece
            if index == 0:
                return b""
            upstream = self._pull(index - 1)
            if not upstream:
                return b""
            layer.push(upstream)
