"""Small text helpers shared by result shapers and error envelopes."""

from __future__ import annotations


def clean_text(text: str) -> str:
    """Collapse whitespace and drop control characters, so text stays one compact line."""
    out = []
    for ch in text:
        if ch.isspace():
            out.append(" ")
        elif ord(ch) < 32 or 0x7F <= ord(ch) < 0xA0:
            continue
        else:
            out.append(ch)
    return " ".join("".join(out).split())
