"""The catalogue of hostile response bodies: compression bombs, lying framing, endless streams, JSON traps.

Each :class:`Bomb` says how it is framed on the wire and what a client with
a byte limit under 64 MiB must end with (``expect``: an error code, or ``ok``
for the bounded controls). The bodies are built lazily and cached: the
compressed ones by construction (a deflate stream repeats one full-flush
block, zstd frames concatenate), so a 1 GiB bomb costs milliseconds to make.
"""

from __future__ import annotations

import asyncio
import functools
import json
import zlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Literal

from scopegate.openapi.runtime.decoding import BROTLI, ZSTD

MIB = 1 << 20
GIB = 1 << 30
Framing = Literal["length", "chunked", "lie-long", "lie-short"]


@dataclass(frozen=True)
class Bomb:
    name: str
    what: str
    expect: str
    encoding: str | None
    framing: Framing
    body: Callable[[], AsyncIterator[bytes]]
    content_type: str = "application/json"
    declared_length: Callable[[], int] | None = None  # for the lying framings


# -- builders (cached: each is built once per process) -----------------------------------------
def _zero_blocks(total: int, wbits: int) -> tuple[bytes, int]:
    """A deflate body of ``total`` zeros: one full-flush block (the dictionary starts afresh after
    each) repeated, then an empty final block; and the number of zeros it holds."""
    c = zlib.compressobj(9, zlib.DEFLATED, wbits)
    first = c.compress(b"\0" * MIB) + c.flush(zlib.Z_FULL_FLUSH)
    block = c.compress(b"\0" * MIB) + c.flush(zlib.Z_FULL_FLUSH)
    count = max(1, total // MIB)
    return first + block * (count - 1) + b"\x03\x00", count * MIB


@functools.cache
def _crc32_of_zeros(size: int) -> int:
    crc, zeros = 0, b"\0" * MIB
    for _ in range(size // MIB):
        crc = zlib.crc32(zeros, crc)
    return crc


@functools.cache
def gzip_zeros(total: int = GIB) -> bytes:
    """One gzip member of ``total`` zero bytes (1 GiB in about 1 MB), built without compressing a GiB."""
    body, size = _zero_blocks(total, -zlib.MAX_WBITS)
    header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff"
    return header + body + _crc32_of_zeros(size).to_bytes(4, "little") + (size % (1 << 32)).to_bytes(4, "little")


@functools.cache
def deflate_zeros(total: int = GIB) -> bytes:
    """A valid zlib stream of ``total`` zeros (adler32 of n zeros: a = 1, b = n mod 65521)."""
    body, size = _zero_blocks(total, zlib.MAX_WBITS)
    return body + ((size % 65521) << 16 | 1).to_bytes(4, "big")


@functools.cache
def zstd_zeros(total: int = GIB) -> bytes:
    frame = ZSTD.compress(b"\0" * (16 * MIB), 3)
    return bytes(frame) * max(1, total // (16 * MIB))


@functools.cache
def brotli_zeros(total: int = GIB) -> bytes:
    c = BROTLI.Compressor(quality=1)
    zeros = b"\0" * MIB
    return bytes(b"".join(c.process(zeros) for _ in range(max(1, total // MIB))) + c.finish())


@functools.cache
def gzip_of(data: bytes) -> bytes:
    import gzip

    return gzip.compress(data, 9)


@functools.cache
def zstd_big_window() -> bytes:
    """A zstd frame whose header asks for a 128 MiB window (streamed: no content size to shrink it)."""
    c = ZSTD.ZstdCompressor(options={ZSTD.CompressionParameter.window_log: 27})
    return bytes(c.compress(b"\0" * (4 * MIB)) + c.flush())


@functools.cache
def nested_json(depth: int = 50_000) -> bytes:
    return b"[" * depth + b"]" * depth


@functools.cache
def huge_string_gzip(total: int = GIB) -> bytes:
    """``{"text": "aaaa…"}`` with ``total`` characters, as gzip members."""
    import gzip

    head = gzip.compress(b'{"text": "', 9)
    member = gzip.compress(b"a" * MIB, 9)
    return head + member * max(1, total // MIB) + gzip.compress(b'"}', 9)


@functools.cache
def empty_gzip_members(total: int = 4 * MIB) -> bytes:
    import gzip

    member = gzip.compress(b"", 9)
    return member * (total // len(member))


# -- body producers ------------------------------------------------------------------------------
def once(build: Callable[[], bytes]) -> Callable[[], AsyncIterator[bytes]]:
    async def body() -> AsyncIterator[bytes]:
        data = build()
        for i in range(0, len(data), 64 * 1024):
            yield data[i : i + 64 * 1024]

    return body


async def endless_json() -> AsyncIterator[bytes]:
    yield b'{"items": ['
    item = json.dumps({"id": 1, "text": "x" * 200}).encode() + b","
    batch = item * 256
    while True:
        yield batch


async def endless_gzip() -> AsyncIterator[bytes]:
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    zeros = b"\0" * MIB
    while True:
        out = c.compress(zeros) + c.flush(zlib.Z_SYNC_FLUSH)
        yield out
        await asyncio.sleep(0)


async def trickle() -> AsyncIterator[bytes]:
    yield b'{"items": ['
    while True:
        await asyncio.sleep(0.05)
        yield b"1,"


async def amplification() -> AsyncIterator[bytes]:
    yield b"[" + b"{}," * (300_000) + b"{}]"


async def big_string() -> AsyncIterator[bytes]:
    yield b'{"text": "' + b"lorem ipsum " * 75_000 + b'"}'


async def stacked_then_junk() -> AsyncIterator[bytes]:
    yield gzip_of(gzip_zeros())
    while True:  # the rest of the lie: far more than Content-Length said
        yield b"\0" * (64 * 1024)


async def short_body() -> AsyncIterator[bytes]:
    yield b'{"items": [1, 2, 3'


@functools.cache
def ordinary_json() -> bytes:
    return json.dumps({"items": [{"id": i, "text": f"item {i}"} for i in range(2000)], "total": 2000}).encode()


def raw_deflate(data: bytes) -> bytes:
    c = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    return c.compress(data) + c.flush()


def _controls() -> list[Bomb]:
    """Ordinary compressed bodies within the limit: each must decode to the same JSON."""
    return [
        Bomb(
            "ok-gzip", "gzip, 60 KB of JSON (control)", "ok", "gzip", "length", once(lambda: gzip_of(ordinary_json()))
        ),
        Bomb(
            "ok-deflate-raw",
            "raw deflate sent as deflate (control)",
            "ok",
            "deflate",
            "length",
            once(lambda: raw_deflate(ordinary_json())),
        ),
        Bomb(
            "ok-br",
            "brotli JSON (control)",
            "ok",
            "br",
            "length",
            once(lambda: bytes(BROTLI.compress(ordinary_json()))),
        ),
        Bomb(
            "ok-zstd",
            "zstd JSON (control)",
            "ok",
            "zstd",
            "length",
            once(lambda: bytes(ZSTD.compress(ordinary_json()))),
        ),
        Bomb(
            "ok-gzip-br",
            "gzip then br JSON (control)",
            "ok",
            "gzip, br",
            "length",
            once(lambda: bytes(BROTLI.compress(gzip_of(ordinary_json())))),
        ),
    ]


def _catalogue() -> dict[str, Bomb]:
    bombs = [
        *_controls(),
        Bomb("gzip", "gzip, 1 GiB of zeros in 1 MB", "RESPONSE_TOO_LARGE", "gzip", "length", once(gzip_zeros)),
        Bomb(
            "deflate", "deflate (zlib), 1 GiB of zeros", "RESPONSE_TOO_LARGE", "deflate", "length", once(deflate_zeros)
        ),
        Bomb("br", "brotli, 1 GiB of zeros", "RESPONSE_TOO_LARGE", "br", "length", once(brotli_zeros)),
        Bomb("zstd", "zstd, 1 GiB of zeros in 34 KB", "RESPONSE_TOO_LARGE", "zstd", "length", once(zstd_zeros)),
        Bomb(
            "gzip-gzip",
            "stacked: gzip, gzip, 1 GiB in 2.5 KB (the issue's attack)",
            "RESPONSE_TOO_LARGE",
            "gzip, gzip",
            "length",
            once(lambda: gzip_of(gzip_zeros())),
        ),
        Bomb(
            "gzip-br",
            "mixed: gzip then br, 1 GiB",
            "RESPONSE_TOO_LARGE",
            "gzip, br",
            "length",
            once(lambda: bytes(BROTLI.compress(gzip_zeros(), quality=5))),
        ),
        Bomb(
            "zstd-gzip",
            "mixed: zstd then gzip, 1 GiB",
            "RESPONSE_TOO_LARGE",
            "zstd, gzip",
            "length",
            once(lambda: gzip_of(zstd_zeros())),
        ),
        Bomb(
            "gzip-x3",
            "three layers: gzip, gzip, gzip (refused: at most two)",
            "UPSTREAM_ERROR",
            "gzip, gzip, gzip",
            "length",
            once(lambda: gzip_of(gzip_of(gzip_zeros()))),
        ),
        Bomb(
            "br-zstd",
            "mixed: br then zstd (refused: 24 MiB of decoder windows)",
            "UPSTREAM_ERROR",
            "br, zstd",
            "length",
            once(lambda: bytes(ZSTD.compress(brotli_zeros()))),
        ),
        Bomb(
            "unknown-coding",
            "Content-Encoding: compress",
            "UPSTREAM_ERROR",
            "compress",
            "length",
            once(lambda: gzip_of(ordinary_json())),
        ),
        Bomb(
            "zstd-window",
            "zstd frame asking for a 128 MiB window (over RFC 9659's 8 MiB)",
            "UPSTREAM_ERROR",
            "zstd",
            "length",
            once(zstd_big_window),
        ),
        Bomb(
            "gzip-members",
            "4 MiB of empty gzip members: no output, only work",
            "RESPONSE_TOO_LARGE",
            "gzip",
            "length",
            once(empty_gzip_members),
        ),
        Bomb(
            "length-understated",
            "Content-Length: 2.5 KB for a gzip, gzip bomb, then endless junk",
            "RESPONSE_TOO_LARGE",
            "gzip, gzip",
            "lie-short",
            stacked_then_junk,
            declared_length=lambda: len(gzip_of(gzip_zeros())),
        ),
        Bomb(
            "length-overstated",
            "Content-Length: 500000, 18 bytes sent, connection closed",
            "UNAVAILABLE",
            None,
            "lie-long",
            short_body,
            declared_length=lambda: 500_000,
        ),
        Bomb("endless", "chunked JSON that never ends", "RESPONSE_TOO_LARGE", None, "chunked", endless_json),
        Bomb(
            "endless-gzip",
            "chunked gzip of zeros that never ends",
            "RESPONSE_TOO_LARGE",
            "gzip",
            "chunked",
            endless_gzip,
        ),
        Bomb("trickle", "two bytes every 50 ms, forever", "TIMEOUT", None, "chunked", trickle),
        Bomb("nested-json", "50,000 nested arrays (100 KB)", "UPSTREAM_ERROR", None, "length", once(nested_json)),
        Bomb(
            "huge-string",
            'gzip of {"text": "aaaa…"} with 1 GiB of text',
            "RESPONSE_TOO_LARGE",
            "gzip",
            "length",
            once(huge_string_gzip),
        ),
        Bomb("big-string", "a 900 KB JSON string, within the limit (control)", "ok", None, "length", big_string),
        Bomb(
            "amplification",
            "[{},{},…]: 300,000 objects in 900 KB (40 MB once parsed)",
            "RESPONSE_TOO_LARGE",
            None,
            "length",
            amplification,
        ),
    ]
    return {b.name: b for b in bombs}


CATALOGUE: dict[str, Bomb] = _catalogue()
