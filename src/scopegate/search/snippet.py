"""Snippets with bounded work: the window around the first matching word, whatever the body's size.

The rule (unchanged since the first shaper): clean the body (whitespace
collapsed, control characters dropped); a body within the limit is returned
whole; otherwise the window starts a fifth of the limit before the first word
whose analysed form is a query term (moved forward to a word start, with a
leading ellipsis), or at the start of the body when no word matches, and is
cut on a word boundary with a trailing ellipsis.

The work does not grow with the body beyond that window:

- :class:`TermFinder` finds the first matching word in the *raw* body. Every
  word that analyses to a term ``t`` contains ``needle(t)`` (``t`` itself, or
  ``t`` minus its last character when that is ``e``, ``i`` or ``l``, two for
  ``-ie``) case-insensitively, because the English stemmer keeps the lowercased
  word but for a stem's last ``e``, ``i`` or ``l`` (checked over a million real
  and derived words: tests/unit/test_shaper_bounded.py).
  So only word starts where a needle begins are candidates, and only those
  words are analysed, once each (memo). The candidates come from a small C
  scan over the string's own storage (``_wordscan.c``: one pass, 16 characters
  at a time, no copy, no compile), which also settles every candidate whose
  word it already knows: one this finder rejected, or one the process analysed
  before (a bounded table per analyser), so Python sees about one candidate per
  body, and none when the match's word was analysed before. Without it (an
  install with no C compiler), from the same search in Python: the body
  lowercased chunk by chunk, ``find`` for needles of three or more characters
  and a cached regex for shorter ones. Characters whose
  lowercase is ASCII though they are not (U+0130, U+212A), or whose lowercase
  changes length, send the scan to the Unicode-aware Python path, word by
  word where needed, with the same result.
- Words are what ``analysis.WORD_RE`` finds in the raw body (the engines' ``\\w``: letters,
  digits, connectors, then marks too), as the engine cuts them (``word_runs``): a control
  character inside a word splits it. (The first shaper looked
  for words after cleaning, where a dropped control character joined the two
  halves into a word the engine never indexed; that is the one case where
  snippets differ from it.)
- :func:`prepare` cleans only the characters around the match
  (:func:`scopegate.text.clean_head`/``clean_tail``, one C pass each when built) once per hit,
  in the same C call as the scan when the scan settled the match (``first_window``);
  :func:`snippet` then cuts the window for any smaller limit from those few
  hundred characters, so the shaper's shrink rounds never touch the body again. The rounds
  only measure (:func:`snippet_size`, from the same :func:`snippet_span`): each snippet is
  cut once, at the limit that fits.
"""

from __future__ import annotations

import heapq
import re
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from functools import cached_property, lru_cache
from typing import AnyStr, NamedTuple

from scopegate.search.analysis import WORD_CHAR, WORD_RE, WORD_START
from scopegate.search.native import NATIVE
from scopegate.text import clean_head, clean_tail

WordTerms = Mapping[str, tuple[str, ...]]
NativeScan = Callable[
    [str, tuple[bytes, ...], int, AbstractSet[str] | None, WordTerms | None, AbstractSet[str] | None], int
]
# The first matching word's offset, and the cleaned text before it and from it (a snippet's window).
Window = tuple[int, tuple[str, bool], tuple[str, bool]]
NativeWindow = Callable[
    [str, tuple[bytes, ...], int, AbstractSet[str], WordTerms, AbstractSet[str], int, int], "int | Window"
]
SourcesSize = Callable[[Sequence["SnippetSource"], int], int]
ShrinkLimit = Callable[[Sequence["SnippetSource"], int, int, int, int, int], tuple[int, int]]
CutSnippets = Callable[[Sequence["SnippetSource"], int], list[str]]
first_start: NativeScan | None
native_window: NativeWindow | None
_native_snippets_size: SourcesSize | None
_native_shrink_limit: ShrinkLimit | None
_native_cut_snippets: CutSnippets | None
if NATIVE:  # the C scan (an optional extension module: without it the Python scan gives the same answers)
    from scopegate.search._wordscan import cut_snippets as _native_cut_snippets
    from scopegate.search._wordscan import first_start
    from scopegate.search._wordscan import first_window as native_window
    from scopegate.search._wordscan import shrink_limit as _native_shrink_limit
    from scopegate.search._wordscan import snippets_size as _native_snippets_size
    from scopegate.search._wordscan import word_end as _word_end
else:  # no C compiler at install time, or SCOPEGATE_NATIVE_SNIPPETS=0 (scopegate.search.native)
    first_start = native_window = None
    _native_cut_snippets = _native_shrink_limit = _native_snippets_size = None

    def _word_end(text: str, at: int, /) -> int:
        return _WORD_RUN.match(text, at).end()  # type: ignore[union-attr]  # \w* always matches


Analyzer = Callable[[str], list[str]]
ELLIPSIS = "…"
# Chunks grow from 1 KB to 32 KB: an early match costs little, a long scan few chunk round trips.
FIRST_CHUNK_CHARS = 1024
MAX_CHUNK_CHARS = 32768
_WORD_CHAR = re.compile(WORD_CHAR)
_WORD_RUN = re.compile(f"{WORD_CHAR}*")
_WORD_START_CHAR = re.compile(WORD_START)
_BACK_STEP = 64
# The only characters outside ASCII whose lowercase is (or holds) an ASCII letter.
_LOWERS_TO_ASCII = ("\u0130", "\u212a")
# The last characters of a stem that the stemmer may have put there (see needle).
_CHANGED_LAST = frozenset("eil")
# The one stem whose last character (a y) the stemmer wrote: Porter2 lists skies -> sky as an exception.
_WRITTEN_Y_STEM = "sky"


def needle(term: str) -> str:
    """What every word that analyses to ``term`` contains, lowercased (see module docstring).

    The English stemmer (Porter2) keeps every character of the lowercased word
    but the stem's last one, and only an ``e`` (``hoping`` -> ``hope``), an ``i``
    (``happy`` -> ``happi``) or an ``l`` (``-bility`` -> ``-bl``) is ever not the
    word's own; ``-ying`` -> ``-ie`` (``dying`` -> ``die``) differs in two, and its
    one exceptional form ``skies`` -> ``sky`` in the ``y``. It never changes terms
    of one or two characters. A last character outside ASCII is always left out:
    the analyser lowercases character by character, a body is lowercased in context
    (``ΣΟΦΟΣ``: ``σοφοσ`` against ``σοφος``). A longer needle means fewer candidate
    words: with the whole term for most terms, a third fewer words are analysed.
    """
    if len(term) <= 2:
        return term
    if term[-1] not in _CHANGED_LAST and term[-1].isascii() and term != _WRITTEN_Y_STEM:
        return term
    return term[: max(1, len(term) - (2 if term.endswith("ie") else 1))]


def cap_text(text: str, limit: int) -> tuple[str, bool]:
    """Cut ``text`` to at most ``limit`` characters on a word boundary, ending with an ellipsis.

    Looks at ``text[:limit]`` only (and at the length).
    """
    if len(text) <= limit:
        return text, False
    end, tail = cap_span(text, 0, limit)
    return text[:end] + tail, True


def cap_span(text: str, start: int, limit: int) -> tuple[int, str]:
    """:func:`cap_text` of ``text[start:]`` as ``text[start:end] + tail``, without slicing: ``(end, tail)``.

    The snippet rule in one place: :func:`snippet` builds from it, :func:`snippet_size` only measures.
    """
    if len(text) - start <= limit:
        return len(text), ""
    if limit <= 1:
        return start, ELLIPSIS[:limit]
    end = start + limit - 1
    space = text.rfind(" ", start, end)
    if space - start >= limit // 2:
        end = space
    while end > start and text[end - 1].isspace():  # rstrip
        end -= 1
    return end, ELLIPSIS


# Single words analysed once per process and analyser, so the C scan settles a candidate whose word it
# has seen before (in any body, any query) without a round trip to Python. Words are short and recur
# (Zipf), so a bounded table covers most of a workload; it is emptied when full.
WORD_TERMS_MAX = 65_536
CACHED_WORD_CHARS = 64
_WORD_TERMS: weakref.WeakKeyDictionary[object, dict[object, dict[str, tuple[str, ...]]]] = weakref.WeakKeyDictionary()


# The table found last, with a weak reference to its owner: a server shapes with one analyser, so the
# lookup is two identity checks instead of a WeakKeyDictionary's Python frames.
_LAST_TABLE: tuple[weakref.ref[object], object, dict[str, tuple[str, ...]]] | None = None


def _forget_last_table(gone: weakref.ref[object]) -> None:
    global _LAST_TABLE
    last = _LAST_TABLE
    if last is not None and last[0] is gone:  # the owner went: its table goes with it
        _LAST_TABLE = None


def _word_terms(analyze: Analyzer) -> dict[str, tuple[str, ...]] | None:
    """The table of words ``analyze`` has analysed (keyed by its owner, weakly: a backend's table goes with
    it); None for an analyser that cannot be referenced weakly."""
    global _LAST_TABLE
    owner = getattr(analyze, "__self__", analyze)
    func = getattr(analyze, "__func__", analyze)
    last = _LAST_TABLE
    if last is not None and last[0]() is owner and last[1] is func:
        return last[2]
    try:
        tables = _WORD_TERMS.get(owner)
        if tables is None:
            tables = _WORD_TERMS.setdefault(owner, {})
        table = tables.setdefault(func, {})
        _LAST_TABLE = (weakref.ref(owner, _forget_last_table), func, table)
    except TypeError:
        return None
    return table


class TermFinder:
    """Finds the first word of a raw text whose analysed form is one of ``terms``.

    One finder serves every hit of a result: the memo of analysed words is shared.
    """

    def __init__(self, terms: Iterable[str], analyze: Analyzer) -> None:
        self.wanted = frozenset(t for t in terms if t)
        self.analyze = analyze
        self._memo: dict[str, bool] = {}
        # The words checked and rejected so far: the C scan passes over them without asking again.
        self._misses: set[str] = set()
        needles = {needle(t) for t in self.wanted}
        # A needle that starts with another needle finds no token start the shorter one misses.
        self.needles = tuple(sorted(n for n in needles if not any(o != n and n.startswith(o) for o in needles)))
        self._overlap = max((len(n) for n in self.needles), default=1) - 1
        # The needles for the C scan, when it is built and they are all ASCII (else None: Python). Set
        # here with C-level calls: a page of long bodies runs this right after the engine's wait, on cold
        # caches, where every extra Python frame (a cached property's, a generator's) costs microseconds.
        native = first_start is not None and bool(self.needles) and "".join(self.needles).isascii()
        self.native_needles: tuple[bytes, ...] | None = tuple(map(str.encode, self.needles)) if native else None
        self._table: dict[str, tuple[str, ...]] | None = None
        self._table_looked_up = False

    # Each needle's places that no ASCII word character precedes are found in C. A needle of three
    # or more characters is a literal for ``find`` (CPython's fast search: no compile, and such
    # needles rarely sit inside words); a shorter one occurs thousands of times in 30 KB, mostly
    # inside words, so a regex with a lookbehind skips those in C. The short needles are few (at
    # most 37 + 37**2 ASCII ones), so their compiled regexes stay cached for the process.
    @cached_property
    def _searches(self) -> tuple[_Place[str], ...]:
        return tuple(_place_finder(n) for n in self.needles)

    @cached_property
    def _byte_searches(self) -> tuple[_Place[bytes], ...] | None:
        if not all(n.isascii() for n in self.needles):
            return None
        return tuple(_place_finder(n.encode("ascii")) for n in self.needles)

    @property
    def _known(self) -> dict[str, tuple[str, ...]] | None:
        """The process's table of words this analyser has analysed (looked up on first use)."""
        if not self._table_looked_up:
            self._table = _word_terms(self.analyze)
            self._table_looked_up = True
        return self._table

    def _hit(self, word: str) -> bool:
        hit = self._memo.get(word)
        if hit is None:
            known = self._known
            terms = known.get(word) if known is not None else None
            if terms is None:
                terms = tuple(self.analyze(word))
                if known is not None and len(word) <= CACHED_WORD_CHARS:
                    if len(known) >= WORD_TERMS_MAX:
                        known.clear()
                    known[word] = terms
            hit = not self.wanted.isdisjoint(terms)
            self._memo[word] = hit
            if not hit:
                self._misses.add(word)
        return hit

    def first_match(self, text: str) -> int | None:
        """Offset in ``text`` of the first character of the first matching word, or None."""
        if not self.needles:
            return None
        pos = 0
        native = self.native_needles
        if native is not None and first_start is not None:
            while True:
                known = self._known
                at = first_start(text, native, pos, self._misses, known, self.wanted if known is not None else None)
                if at == -1:
                    return None
                if at == -2:  # a character that lowercases to ASCII: the Unicode-aware scan goes on
                    break
                found, pos = self._check_start(text, at)
                if found is not None:
                    return found
        return self._python_scan(text, pos)

    def first_window(self, text: str, before_need: int, after_need: int) -> Window | None:
        """The first matching word's offset, ``clean_tail(text, at, before_need)`` and
        ``clean_head(text, at, after_need)``; None when no word matches.

        With the C scan, a word it settles from the table of analysed words comes back with its
        window in the same call (most hits): no round trip to Python for the check or the cleaning.
        """
        native = self.native_needles
        known = self._table if self._table_looked_up else self._known  # one frame fewer per hit
        if native is None or known is None or native_window is None:
            at = self.first_match(text)
        else:
            pos = 0
            while True:
                got = native_window(text, native, pos, self._misses, known, self.wanted, before_need, after_need)
                if not isinstance(got, int):
                    return got
                if got == -1:
                    return None
                if got == -2:  # a character that lowercases to ASCII: the Unicode-aware scan goes on
                    at = self._python_scan(text, pos)
                    break
                at, pos = self._check_start(text, got)
                if at is not None:
                    break
        if at is None:
            return None
        return at, clean_tail(text, at, before_need), clean_head(text, at, after_need)

    def _python_scan(self, text: str, pos: int) -> int | None:
        size = FIRST_CHUNK_CHARS
        while pos < len(text):
            end = min(len(text), pos + size)
            found, resume = self._scan_chunk(text, pos, end)
            if found is not None:
                return found
            pos = max(end, resume)
            size = min(MAX_CHUNK_CHARS, size * 2)
        return None

    # -- one chunk: the words that start in text[pos:end] -------------------------------
    def _scan_chunk(self, text: str, pos: int, end: int) -> tuple[int | None, int]:
        segment = text[pos : end + self._overlap]
        if segment.isascii():  # a flag of the string: lowercasing is a byte loop
            return self._scan_lowered(text, pos, end, segment.lower(), self._searches)
        if self._byte_searches is not None and not any(c in segment for c in _LOWERS_TO_ASCII):
            # ASCII needles only meet ASCII letters: Latin-1 bytes (anything else becomes "?") keep
            # one byte per character, and lowercasing bytes is 3x faster than str.lower on such text.
            lowered_bytes = segment.encode("latin-1", "replace").lower()
            return self._scan_lowered(text, pos, end, lowered_bytes, self._byte_searches)
        lowered = segment.lower()
        if len(lowered) != len(segment):  # offsets in the lowered text would not be offsets in the text
            return self._scan_words(text, pos, end)
        return self._scan_lowered(text, pos, end, lowered, self._searches)

    def _check(self, text: str, at: int) -> tuple[int | None, int]:
        """(start of the word at ``at`` if it matches, where to look next)."""
        span = _word_at(text, at)
        if span is None:
            return None, at + 1
        start, stop = span
        return (start if self._hit(text[start:stop]) else None), stop

    def _check_start(self, text: str, at: int) -> tuple[int | None, int]:
        """:meth:`_check` where no ASCII word character precedes ``at`` (the common case, made cheap)."""
        if at and not text[at - 1].isascii():  # a non-ASCII letter may open the word earlier
            return self._check(text, at)
        stop = _word_end(text, at)
        if stop == at:
            return None, at + 1
        return (at if self._hit(text[at:stop]) else None), stop

    def _scan_lowered(
        self, text: str, pos: int, end: int, lowered: AnyStr, searches: Sequence[_Place[AnyStr]]
    ) -> tuple[int | None, int]:
        """Needle places in order, words checked at token starts (``lowered`` is ``text[pos:]`` lowered).

        Each needle's next place waits in a heap: the places come out in text order, as one
        alternation would give them, and a needle absent from the chunk costs one search in C.
        """
        bound = end - pos  # a needle must start before the chunk's end
        waiting: list[tuple[int, int]] = []
        for k, search in enumerate(searches):
            i = search(lowered, 0, bound)
            if i >= 0:
                waiting.append((i, k))
        heapq.heapify(waiting)
        resume = pos
        while waiting:
            i, k = heapq.heappop(waiting)
            if pos + i >= resume:  # not inside the word just checked
                before = text[pos - 1 : pos] if not i else ""
                # The search cannot see the character before the segment.
                if not (before.isascii() and (before.isalnum() or before == "_")):
                    found, resume = self._check_start(text, pos + i)
                    if found is not None:
                        return found, resume
            i = searches[k](lowered, max(i + 1, resume - pos), bound)
            if i >= 0:
                heapq.heappush(waiting, (i, k))
        return None, resume

    def _scan_words(self, text: str, pos: int, end: int) -> tuple[int | None, int]:
        """Every word starting in ``text[pos:end]``, in order (the plain algorithm, for odd chunks)."""
        resume = pos
        for match in WORD_RE.finditer(text, _word_start(text, pos) if _WORD_CHAR.match(text, pos) else pos):
            if match.start() >= end:
                break
            resume = match.end()
            if self._hit(match.group(0)):
                return match.start(), resume
        return None, resume


# Where a needle next starts in a lowered text, at or after ``start`` and before ``bound``, with no
# ASCII word character just before it (inside the text); -1 when nowhere.
_Place = Callable[[AnyStr, int, int], int]


# ASCII word characters as a lowered text has them, as one-character str and bytes.
_ASCII_WORD = frozenset("0123456789abcdefghijklmnopqrstuvwxyz_")
_ASCII_WORD_BYTES = frozenset("0123456789abcdefghijklmnopqrstuvwxyz_".encode("ascii"))
SHORT_NEEDLE = 2  # needles of up to this many characters are searched with a regex


def _place_finder(needle: AnyStr) -> _Place[AnyStr]:
    if len(needle) <= SHORT_NEEDLE:
        return _short_needle_search(needle)
    return _literal_search(needle)


def _literal_search(needle: AnyStr) -> _Place[AnyStr]:
    word: frozenset[object] = _ASCII_WORD_BYTES if isinstance(needle, bytes) else _ASCII_WORD
    tail = len(needle) - 1

    def place(lowered: AnyStr, start: int, bound: int) -> int:
        stop = min(len(lowered), bound + tail)
        i = lowered.find(needle, start, stop)
        while i > 0 and lowered[i - 1] in word:
            i = lowered.find(needle, i + 1, stop)
        return i

    return place


@lru_cache(maxsize=4 * 37 * 37)
def _short_needle_search(needle: AnyStr) -> _Place[AnyStr]:
    # The lookbehind comes after the needle so the pattern starts with a literal: the regex engine
    # then skips to the needle's first character in C.
    text = needle if isinstance(needle, str) else needle.decode("ascii")
    source = f"{re.escape(text)}(?<![0-9a-z_]{'.' * len(needle)})"
    pattern = re.compile(source if isinstance(needle, str) else source.encode("ascii"), re.DOTALL)

    def place(lowered: AnyStr, start: int, bound: int) -> int:
        match = pattern.search(lowered, start)
        return match.start() if match is not None and match.start() < bound else -1

    return place


def _word_start(text: str, at: int) -> int:
    """Start of the word that ends at (or holds) ``text[at]``."""
    low = at
    step = _BACK_STEP
    while low > 0:
        begin = max(0, low - step)
        run = _WORD_RUN.match(text[begin:low][::-1])
        length = run.end() if run else 0
        if length < low - begin:
            return _past_marks(text, low - length, at)
        low = begin
        step *= 4
    return _past_marks(text, 0, at)


def _past_marks(text: str, start: int, at: int) -> int:
    """``start`` moved past combining marks that open the run: a mark continues a word, never starts one."""
    while start < at and not _WORD_START_CHAR.match(text, start):
        start += 1
    return start


def _word_at(text: str, at: int) -> tuple[int, int] | None:
    """The word (run of word characters) around ``text[at]``, if that is a word character."""
    run = _WORD_RUN.match(text, at)
    if run is None or run.end() == at:
        return None
    return _word_start(text, at), run.end()


class SnippetSource(NamedTuple):
    """The cleaned characters a snippet of at most ``limit`` characters can need, cut once per body.

    A tuple: one is made per hit of every search, and a frozen dataclass costs twice as much to build.
    """

    limit: int
    head: str  # cleaned body from its start: limit + 1 characters, or all of it
    head_whole: bool
    # The cleaned text just before the first match (more than a fifth of ``limit``, or all of it) and
    # from the match on (limit + 1 characters, or all of it), joined: every window is cut from it.
    local: str = ""
    at: int | None = None  # where the match starts in ``local``; None: no word matches
    before_from_start: bool = False  # ``local`` starts at the start of the body
    after_whole: bool = False  # ``local`` runs to the end of the body


# Beyond this many raw characters the head is cleaned only when a snippet needs it.
LONG_TEXT_CHARS = 4096


def prepare(text: str, finder: TermFinder, limit: int, *, shorter: bool = False) -> SnippetSource:
    """Clean what snippets of up to ``limit`` characters of ``text`` need, and nothing more.

    A body that fits ``limit`` whole is its own snippet and is not searched, unless ``shorter``
    snippets will be cut from it too (the shrink rounds): they open at its first match."""
    if len(text) <= LONG_TEXT_CHARS or shorter:
        head, head_whole = clean_head(text, 0, limit + 1)
        if head_whole and len(head) <= limit and not shorter:
            return SnippetSource(limit, head, True)
    else:
        head, head_whole = "", False  # cleaned only if no word matches (below)
    window = finder.first_window(text, limit // 5 + 1, limit + 1)
    if window is None:
        if len(text) > LONG_TEXT_CHARS and not shorter:
            head, head_whole = clean_head(text, 0, limit + 1)
        return SnippetSource(limit, head, head_whole)
    _, (before, from_start), (after, after_whole) = window
    if after_whole and not head:  # the cleaned body may be short after all: the head decides
        head, head_whole = clean_head(text, 0, limit + 1)
    return SnippetSource(limit, head, head_whole, before + after, len(before), from_start, after_whole)


def snippet_span(source: SnippetSource, limit: int) -> tuple[str, str, int, int, str]:
    """The snippet of at most ``limit`` (<= ``source.limit``) characters around the first match, as
    ``lead + text[start:end] + tail`` (the rule in the module docstring): ``(lead, text, start, end, tail)``."""
    if limit > source.limit:
        raise ValueError(f"prepared for snippets of up to {source.limit} characters, not {limit}")
    head = source.head
    if source.head_whole and len(head) <= limit:
        return "", head, 0, len(head), ""
    at = source.at
    if at is None:
        return ("", head, 0, *cap_span(head, 0, limit))
    local = source.local
    context = limit // 5
    if source.before_from_start:
        start = max(0, at - context)
        opened = start > 0
    else:
        start = at - context  # >= 1: the text before the match has more than a fifth of any limit
        opened = True
    if not opened:
        return ("", local, start, *cap_span(local, start, limit))
    # Move forward to a word start so the snippet does not open mid-word.
    space = local.find(" ", start, at)
    if space >= 0:
        start = space + 1
    return (ELLIPSIS, local, start, *cap_span(local, start, limit - len(ELLIPSIS)))


def snippet(source: SnippetSource, limit: int) -> str:
    """At most ``limit`` (<= ``source.limit``) characters around the first match, as the rule says."""
    lead, text, start, end, tail = snippet_span(source, limit)
    if not lead and not tail and start == 0 and end == len(text):
        return text
    return lead + text[start:end] + tail


def snippet_size(source: SnippetSource, limit: int) -> int:
    """Characters :func:`snippet` gives as a JSON string's content (quotes and backslashes escaped),
    measured without building it: the shrink rounds size every snippet at every limit they try.

    Cleaned text holds no control character, so those two are all a JSON encoder escapes in it."""
    lead, text, start, end, tail = snippet_span(source, limit)
    return len(lead) + (end - start) + text.count('"', start, end) + text.count("\\", start, end) + len(tail)


def make_snippet(text: str, terms: Iterable[str], analyze: Analyzer, limit: int) -> str:
    """At most ``limit`` characters around the first matching term, cut on word boundaries.

    Falls back to the start of the text when no term occurs in it.
    """
    return snippet(prepare(text, TermFinder(terms, analyze), limit), limit)


# -- a page's snippets: measured, shrunk and cut together ---------------------------------------------
# The shaper measures every snippet of a page at each limit its shrink rounds try (snippet_size), then
# cuts each once. In Python that is 15 to 20 calls of snippet_span per page of long bodies; the C module
# does the same arithmetic on the same SnippetSource tuples (``_wordscan.c``, "snippet spans"), with
# these functions as its definition and fallback (tests/unit/test_wordscan.py holds both to them).


def py_snippets_size(sources: Sequence[SnippetSource], limit: int) -> int:
    """Sum of :func:`snippet_size` over ``sources`` at ``limit``."""
    return sum(snippet_size(source, limit) for source in sources)


def py_shrink_limit(
    sources: Sequence[SnippetSource], base: int, budget: int, limit: int, size: int, floor: int
) -> tuple[int, int]:
    """The shrink rounds: ``(limit, size)`` once ``base`` plus the snippets fit ``budget`` or ``limit``
    is ``floor``. Each round takes the excess out of every snippet evenly, at least 20 characters."""
    while size > budget and limit > floor:
        over = size - budget
        limit = max(floor, limit - max(20, over // max(1, len(sources)) + 1))
        size = base + py_snippets_size(sources, limit)
    return limit, size


def py_cut_snippets(sources: Sequence[SnippetSource], limit: int) -> list[str]:
    """:func:`snippet` of each source at ``limit``."""
    return [snippet(source, limit) for source in sources]


snippets_size: SourcesSize = py_snippets_size if _native_snippets_size is None else _native_snippets_size
shrink_limit: ShrinkLimit = py_shrink_limit if _native_shrink_limit is None else _native_shrink_limit
cut_snippets: CutSnippets = py_cut_snippets if _native_cut_snippets is None else _native_cut_snippets
