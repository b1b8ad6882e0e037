"""Small text helpers shared by result shapers and error envelopes.

Cleaning collapses whitespace and drops control characters, so text stays one
compact line. Besides cleaning a whole string, :func:`clean_head` and
:func:`clean_tail` clean only as much of a long string as a caller needs:
the cleaned form of any slice is a substring of the cleaned whole, so a window
can be cut from a 100 KB body by cleaning a few hundred characters of it.
The two are C functions when the extension is built (scopegate.search._wordscan);
``python_clean_head``/``python_clean_tail`` are the reference and the fallback.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from scopegate.search.native import NATIVE

# Control characters that are not whitespace: C0 except \t \n \v \f \r and
# \x1c-\x1f, DEL, and C1 except NEL (\x85). Whitespace becomes a space instead.
CONTROL_CLASS = "\x00-\x08\x0e-\x1b\x7f-\x84\x86-\x9f"
CONTROL_RE = re.compile(f"[{CONTROL_CLASS}]")  # one character: faster to search than a run
_ASCII_CONTROLS = bytes([*range(0x00, 0x09), *range(0x0E, 0x1C), 0x7F])


def has_controls(text: str) -> bool:
    """Whether ``text`` holds a character :func:`clean_text` drops."""
    if text.isascii():  # a flag of the string object; the byte table is 4x faster than the regex
        return len(text.encode("ascii").translate(None, _ASCII_CONTROLS)) != len(text)
    return CONTROL_RE.search(text) is not None


def clean_text(text: str) -> str:
    """Collapse whitespace and drop control characters, so text stays one compact line."""
    # str.split() splits on exactly the characters str.isspace() accepts, and
    # no control character dropped here is one of them.
    return " ".join((CONTROL_RE.sub("", text) if has_controls(text) else text).split())


def python_clean_head(text: str, start: int, need: int) -> tuple[str, bool]:
    """The cleaned text from ``text[start]`` on: at least ``need`` characters, or all of it.

    Returns ``(cleaned, whole)``; ``cleaned`` is a prefix of
    ``clean_text(text[start:])``; ``whole`` says it is all of it, otherwise it
    holds at least ``need`` characters (and may happen to be all). Only a
    slice a little longer than ``need`` is cleaned, unless whitespace or
    control characters make it shrink (then the slice grows fourfold).
    """
    size = need + 16
    while True:
        end = start + size
        if end >= len(text):
            return clean_text(text[start:]), True
        out = clean_text(text[start:end])
        if len(out) >= need:
            return out, False
        size *= 4


def python_clean_tail(text: str, end: int, need: int) -> tuple[str, bool]:
    """The cleaned text just before ``text[end]``, which must be a kept, non-space character.

    Returns ``(cleaned, from_start)``: ``cleaned`` ends where ``text[end]``
    lands in ``clean_text(text)`` and includes the space before it, if any; it
    holds at least ``need`` characters unless ``from_start`` says it reaches
    the start of the text.
    """
    size = need + 16
    while True:
        begin = max(0, end - size)
        # Cleaning through text[end] keeps the separating space; drop that character again.
        out = clean_text(text[begin : end + 1])[:-1]
        if begin == 0:
            return out, True
        if len(out) >= need:
            return out, False
        size *= 4


Cleaner = Callable[[str, int, int], tuple[str, bool]]
clean_head: Cleaner
clean_tail: Cleaner
if NATIVE:  # the same contracts in one C pass each (no slice, split or join): a snippet window costs ~1 us, not ~6
    from scopegate.search._wordscan import clean_head, clean_tail
else:  # no C compiler at install time, or SCOPEGATE_NATIVE_SNIPPETS=0 (scopegate.search.native)
    clean_head, clean_tail = python_clean_head, python_clean_tail


def preview(value: Any, limit: int = 40) -> str:
    """A short ``repr`` of a value for an error message (never the whole of a long input)."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
