"""The text analyser shared by indexing, querying and snippets.

Words are runs of Unicode letters, digits and underscores, so error codes
such as ``E4012`` or ``card_declined`` stay one token, and query syntax such as
``tenant_id:t2``, ``*`` or ``OR`` is never syntax: it is split into plain words
(or dropped, for punctuation and stopwords).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache

import tantivy

from scopegate.search.native import NATIVE
from scopegate.search.word_marks import WORD_MARKS, WORD_STARTS

# The regex word tokenizer's analyser: text fields with postings of their own, and the catch-all field of
# indexes written before the words analyser.
ANALYZER_NAME = "scopegate_en"
# The same filters after tantivy's whitespace tokenizer, for text cut into words by :func:`word_runs`
# first: the catch-all field of new indexes (the regex tokenizer was 0.2 ms of a ticket's 0.45 ms ingest).
WORDS_ANALYZER_NAME = "scopegate_en_words"
# Text fields stored for results and snippets but searched only through the combined field.
STORED_ONLY_TOKENIZER = "scopegate_stored"
# The regex tokenizer's pattern (Rust's \w): indexes written before the words analyser.
WORD_PATTERN = r"\w+"
MAX_TOKEN_CHARS = 64


# Words as the engines' \w finds them (scripts/gen_word_marks.py has the rule): a letter, digit or
# connector, then more of them, combining marks or ZWNJ/ZWJ (a mark never starts a word). Explicit
# classes from the frozen tables, never Python's own \w, so every Python cuts the same words as the
# index was written with. One definition for the engine's words (word_runs), the snippets' words and
# the C pass (_wordscan.c reads the same tables).
def _class(table: tuple[tuple[int, int], ...], low: int, high: int) -> str:
    """The ranges of ``table`` within ``low..high``, as the inside of a regex character class."""
    clipped = ((max(a, low), min(b, high)) for a, b in table if a <= high and b >= low)
    return "".join(f"{chr(a)}-{chr(b)}" for a, b in clipped)


def _either(*tables: tuple[tuple[int, int], ...]) -> str:
    # sre turns the BMP part of a class into one bitmap lookup but tries each range above it in turn:
    # the astral ranges go behind a one-range lookahead, so a space or a comma costs one bitmap miss
    # and one comparison, not 200 (the pure path's word_runs, 6x faster on a 30 KB body).
    bmp = "".join(_class(t, 0x80, 0xFFFF) for t in tables)
    astral = "".join(_class(t, 0x10000, 0x10FFFF) for t in tables)
    return f"(?:[0-9A-Za-z_{bmp}]|(?=[\U00010000-\U0010ffff])[{astral}])"


WORD_START = _either(WORD_STARTS)
WORD_CHAR = _either(WORD_STARTS, WORD_MARKS)
WORD_RE = re.compile(f"{WORD_START}{WORD_CHAR}*")


def _python_word_runs(text: str) -> str:
    return " ".join(WORD_RE.findall(text))


_native_word_runs: Callable[[str], str]
if NATIVE:  # the C pass (optional extension module; the fallback returns the same string)
    from scopegate.search._wordscan import word_runs as _native_word_runs
else:
    _native_word_runs = _python_word_runs


def word_runs(text: str) -> str:
    """The words of ``text`` (:data:`WORD_RE`), joined by one space."""
    return _native_word_runs(text)


def _english(tokenizer: tantivy.Tokenizer) -> tantivy.TextAnalyzer:
    """``tokenizer``, then long-token removal, lowercase, English stopwords, English stemmer."""
    return (
        tantivy.TextAnalyzerBuilder(tokenizer)
        .filter(tantivy.Filter.remove_long(MAX_TOKEN_CHARS))
        .filter(tantivy.Filter.lowercase())
        .filter(tantivy.Filter.stopword("english"))
        .filter(tantivy.Filter.stemmer("english"))
        .build()
    )


def make_analyzer() -> tantivy.TextAnalyzer:
    """The regex word tokenizer and the English filters (indexes written before the words analyser)."""
    return _english(tantivy.Tokenizer.regex(WORD_PATTERN))


def make_words_analyzer() -> tantivy.TextAnalyzer:
    """The same filters after the whitespace tokenizer: for :func:`word_runs` output."""
    return _english(tantivy.Tokenizer.whitespace())


def stored_only_analyzer() -> tantivy.TextAnalyzer:
    """No terms at all: the whole text as one token, removed (for text that is stored, not searched)."""
    return tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.raw()).filter(tantivy.Filter.remove_long(1)).build()


@lru_cache(maxsize=1)
def _shared() -> tantivy.TextAnalyzer:
    return make_words_analyzer()


# Analysed short texts kept per process (a few hundred bytes each): snippets analyse single words,
# and a workload's words recur across queries (Zipf), so most checks become a dict lookup.
SHORT_TEXT_CHARS = MAX_TOKEN_CHARS
SHORT_TEXT_CACHE = 16384


@lru_cache(maxsize=SHORT_TEXT_CACHE)
def _short_text_terms(text: str) -> tuple[str, ...]:
    return tuple(_shared().analyze(word_runs(text)))


def analyze(text: str) -> list[str]:
    """Terms of ``text``, in order, duplicates kept: its words (:func:`word_runs`) through the filters."""
    if len(text) <= SHORT_TEXT_CHARS:
        return list(_short_text_terms(text))
    return list(_shared().analyze(word_runs(text)))


def unique_terms(text: str, limit: int = 64) -> tuple[str, ...]:
    """Distinct terms in first-seen order, at most ``limit`` (bounds query size)."""
    seen: dict[str, None] = {}
    for term in analyze(text):
        seen.setdefault(term, None)
        if len(seen) >= limit:
            break
    return tuple(seen)
