"""The text analyser shared by indexing, querying and snippets.

Words are runs of Unicode letters, digits and underscores, so error codes
such as ``E4012`` or ``card_declined`` stay one token, and query syntax such as
``tenant_id:t2``, ``*`` or ``OR`` is never syntax: it is split into plain words
(or dropped, for punctuation and stopwords).
"""

from __future__ import annotations

import re
from functools import lru_cache

import tantivy

ANALYZER_NAME = "scopegate_en"
# Text fields stored for results and snippets but searched only through the combined field.
STORED_ONLY_TOKENIZER = "scopegate_stored"
WORD_PATTERN = r"\w+"
MAX_TOKEN_CHARS = 64
WORD_RE = re.compile(WORD_PATTERN)


def make_analyzer() -> tantivy.TextAnalyzer:
    """Regex word tokenizer, long-token removal, lowercase, English stopwords, English stemmer."""
    return (
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.regex(WORD_PATTERN))
        .filter(tantivy.Filter.remove_long(MAX_TOKEN_CHARS))
        .filter(tantivy.Filter.lowercase())
        .filter(tantivy.Filter.stopword("english"))
        .filter(tantivy.Filter.stemmer("english"))
        .build()
    )


def stored_only_analyzer() -> tantivy.TextAnalyzer:
    """No terms at all: the whole text as one token, removed (for text that is stored, not searched)."""
    return tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.raw()).filter(tantivy.Filter.remove_long(1)).build()


@lru_cache(maxsize=1)
def _shared() -> tantivy.TextAnalyzer:
    return make_analyzer()


def analyze(text: str) -> list[str]:
    """Terms of ``text``, in order, duplicates kept."""
    return list(_shared().analyze(text))


def unique_terms(text: str, limit: int = 64) -> tuple[str, ...]:
    """Distinct terms in first-seen order, at most ``limit`` (bounds query size)."""
    seen: dict[str, None] = {}
    for term in analyze(text):
        seen.setdefault(term, None)
        if len(seen) >= limit:
            break
    return tuple(seen)
