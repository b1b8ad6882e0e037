"""The C scan for snippets' first match (scopegate/search/_wordscan.c) against its definition.

``first_start`` must give exactly what its docstring says for str objects of every storage width
(1, 2 and 4 bytes per character), and a TermFinder must find the same first match with the C scan
as with the pure-Python scan it replaces when no compiler was there at install time.

Without the extension (an install with no C compiler) or with the pure path forced
(SCOPEGATE_NATIVE_SNIPPETS=0), this file skips: the rest of the unit layer then holds the pure path to
the same properties and snapshots. Where the native build is expected (CI=true and
SCOPEGATE_EXPECT_NATIVE=1), its absence fails instead.
"""

from __future__ import annotations

import os
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_shaper_bounded import WORDS, bodies, queries

import scopegate.text
from scopegate.search import snippet as snippet_module
from scopegate.search.analysis import WORD_CHAR, _python_word_runs, analyze, unique_terms
from scopegate.search.native import ENV, NATIVE
from scopegate.search.snippet import TermFinder

EXPECT_NATIVE = os.environ.get("CI") == "true" and os.environ.get("SCOPEGATE_EXPECT_NATIVE") == "1"
if not NATIVE and not EXPECT_NATIVE:
    pytest.skip(
        f"the snippet path is pure-python ({ENV}=0)"
        if os.environ.get(ENV, "").strip() == "0"
        else "the C extension scopegate.search._wordscan is not built (an install without a C compiler)",
        allow_module_level=True,
    )

FAST = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
_ASCII_WORD = re.compile(r"[0-9A-Za-z_]")
LOWERS_TO_ASCII = ("\u0130", "\u212a")
WORD_RUN = re.compile(f"{WORD_CHAR}*")  # the word a candidate opens (snippet._WORD_RUN)


def first_start() -> object:
    from scopegate.search._wordscan import first_start as native

    return native


def ref_first_start(text: str, needles: tuple[bytes, ...], start: int) -> int:
    """The definition, one position at a time."""
    wanted = [n.decode("ascii") for n in needles]
    for i in range(max(0, start), len(text)):
        if text[i] in LOWERS_TO_ASCII:
            return -2
        if i > 0 and _ASCII_WORD.match(text[i - 1]):
            continue
        for n in wanted:
            piece = text[i : i + len(n)]
            if len(piece) == len(n) and piece.isascii() and piece.lower() == n:
                return i
    return -1


def test_the_c_scan_is_built_and_used() -> None:
    # The dev install compiles it; a silent fallback would leave the fast path untested.
    assert NATIVE, (
        "CI expects the native snippet scanner (SCOPEGATE_EXPECT_NATIVE=1), and this process runs the pure path: "
        f"the extension did not build or import, or {ENV}=0 is set"
    )
    from scopegate.search import _wordscan

    assert snippet_module.first_start is _wordscan.first_start
    assert snippet_module.snippets_size is _wordscan.snippets_size
    assert snippet_module.shrink_limit is _wordscan.shrink_limit
    assert snippet_module.cut_snippets is _wordscan.cut_snippets
    assert scopegate.text.clean_head is _wordscan.clean_head and scopegate.text.clean_tail is _wordscan.clean_tail


class _Analyser:
    """An analyser owned by an object, as a backend's bound ``analyze`` is."""

    def analyze(self, text: str) -> list[str]:
        return analyze(text)


def test_the_table_of_analysed_words_is_one_per_analyser_and_goes_with_its_owner() -> None:
    import gc

    first, second = _Analyser(), _Analyser()
    table = TermFinder(["refund"], first.analyze)._known
    assert table is not None
    assert TermFinder(["payment"], first.analyze)._known is table  # a new bound method, the same table
    assert TermFinder(["refund"], second.analyze)._known is not table  # another owner, another table
    assert TermFinder(["refund"], first.analyze)._known is table  # the last-table shortcut switches back
    TermFinder(["refund"], first.analyze).first_match("Refunds were refunded")
    assert table.get("Refunds") == ("refund",)
    del first
    gc.collect()
    assert snippet_module._LAST_TABLE is None or snippet_module._LAST_TABLE[2] is not table
    assert all(table not in tables.values() for tables in snippet_module._WORD_TERMS.values())


TEXT_PARTS = st.sampled_from(
    [*WORDS, " ", "_", "-", "x", "Xo", "oX", "9", "é", "’", "😀", "\u0130", "\u212a", "ß", "\n", "\x00", "ÄB", "AB"]
)
NEEDLES = st.lists(
    st.text(st.sampled_from("abcdefghijklmnopqrstuvwxyz0123456789_"), min_size=1, max_size=6), min_size=1, max_size=8
)


@given(st.lists(TEXT_PARTS, max_size=60), NEEDLES, st.integers(-3, 400))
@FAST
def test_first_start_follows_its_definition(parts: list[str], needles: list[str], start: int) -> None:
    text = "".join(parts)
    encoded = tuple(n.encode("ascii") for n in needles)
    native = first_start()
    assert native(text, encoded, start) == ref_first_start(text, encoded, start)  # type: ignore[operator]
    # The same text stored 2 and 4 bytes wide (a wider character appended, out of every needle's reach).
    for wide in ("\u0101", "\U0001f600"):
        assert native(text + " " + wide, encoded, start) == ref_first_start(text + " " + wide, encoded, start)  # type: ignore[operator]


def ref_first_start_past(
    text: str,
    needles: tuple[bytes, ...],
    start: int,
    misses: set[str],
    word_terms: dict[str, tuple[str, ...]] | None = None,
    wanted: frozenset[str] = frozenset(),
) -> int:
    """first_start with known words: a candidate whose word is a known miss, or is analysed already
    and has no wanted term, is passed over."""
    while True:
        at = ref_first_start(text, needles, start)
        if at < 0 or (at > 0 and not text[at - 1].isascii()):
            return at
        word = WORD_RUN.match(text, at)
        assert word is not None
        terms = (word_terms or {}).get(word.group(0))
        passed = word.group(0) in misses or (terms is not None and not set(terms) & wanted)
        if not passed:
            return at
        start = word.end()


def _scan_case(
    parts: list[str], needles: list[str], data: st.DataObject
) -> tuple[str, tuple[bytes, ...], dict[str, tuple[str, ...]], frozenset[str], set[str]]:
    """The text, the encoded needles, some of the text's words analysed already, wanted terms among
    theirs, and known misses."""
    text = "".join(parts)
    words = sorted({m.group(0) for m in WORD_RUN.finditer(text) if m.group(0)})
    known = data.draw(st.lists(st.sampled_from(words), unique=True)) if words else []
    word_terms = {w: tuple(analyze(w)) for w in known}
    wanted = frozenset(data.draw(st.lists(st.sampled_from([t for w in known for t in word_terms[w]] or ["x"]))))
    misses = set(data.draw(st.lists(st.sampled_from(words), unique=True))) if words else set()
    return text, tuple(n.encode("ascii") for n in needles), word_terms, wanted, misses


@given(st.lists(TEXT_PARTS, max_size=60), NEEDLES, st.integers(-3, 400), st.data())
@FAST
def test_first_start_passes_over_known_misses_and_settles_words_it_knows_the_terms_of(
    parts: list[str], needles: list[str], start: int, data: st.DataObject
) -> None:
    text, encoded, word_terms, wanted, misses = _scan_case(parts, needles, data)
    native = first_start()
    for wide in ("", " \u0101", " \U0001f600"):
        misses_only = ref_first_start_past(text + wide, encoded, start, misses)
        assert native(text + wide, encoded, start, misses) == misses_only  # type: ignore[operator]
        assert native(text + wide, encoded, start, frozenset(misses)) == misses_only  # type: ignore[operator]
        expected = ref_first_start_past(text + wide, encoded, start, misses, word_terms, wanted)
        assert native(text + wide, encoded, start, misses, word_terms, wanted) == expected  # type: ignore[operator]
        assert native(text + wide, encoded, start, None, word_terms, set(wanted)) == ref_first_start_past(  # type: ignore[operator]
            text + wide, encoded, start, set(), word_terms, wanted
        )
    assert native(text, encoded, start, None) == ref_first_start(text, encoded, start)  # type: ignore[operator]


@pytest.mark.parametrize("wide", ["", "\u0101", "\U0001f600"], ids=["1-byte", "2-byte", "4-byte"])
def test_first_start_at_every_place_around_the_16_character_blocks(wide: str) -> None:
    native = first_start()
    for before in ("", " ", "x", "_", "é", "-", "\u0130"):
        for offset in range(0, 40):
            text = wide + "." * offset + before + "Refund ok"
            for start in (0, 1, 15, 16, 17, len(wide) + offset):
                got = native(text, (b"refun", b"ok"), start)  # type: ignore[operator]
                assert got == ref_first_start(text, (b"refun", b"ok"), start), (before, offset, start)


def test_first_start_on_texts_long_enough_to_let_go_of_the_gil() -> None:
    native = first_start()
    text = "lorem ipsum " * 200_000 + "Refund"
    assert native(text, (b"refun",), 0) == len(text) - 6  # type: ignore[operator]
    assert native(text, (b"zzz",), 0) == -1  # type: ignore[operator]


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (("text", [b"ab"], 0), TypeError),
        ((b"text", (b"ab",), 0), TypeError),
        (("text", ("ab",), 0), TypeError),
        (("text", (b"",), 0), TypeError),
        (("text", (), 0), ValueError),
        (("text", tuple(b"a" for _ in range(65)), 0), ValueError),
        (("text", (b"Ab",), 0), ValueError),
        (("text", ("é".encode(),), 0), ValueError),
        (("text", (b"ab",), "0"), TypeError),
        (("text", (b"ab",)), TypeError),
        (("text", (b"ab",), 0, ["ab"]), TypeError),
        (("text", (b"ab",), 0, None, {}, None), TypeError),
        (("text", (b"ab",), 0, None, None, {"ab"}), TypeError),
        (("text", (b"ab",), 0, None, [], {"ab"}), TypeError),
        (("text", (b"ab",), 0, None, {}, {"ab"}, None), TypeError),
    ],
)
def test_first_start_refuses_what_it_was_not_built_for(args: tuple[object, ...], error: type[Exception]) -> None:
    with pytest.raises(error):
        first_start()(*args)  # type: ignore[operator]


@given(
    st.lists(TEXT_PARTS, max_size=60), NEEDLES, st.integers(-3, 400), st.data(), st.integers(0, 90), st.integers(0, 450)
)
@FAST
def test_first_window_is_first_start_plus_the_window_of_a_settled_match(
    parts: list[str], needles: list[str], start: int, data: st.DataObject, before: int, after: int
) -> None:
    from scopegate.search._wordscan import first_window

    text, encoded, word_terms, wanted, misses = _scan_case(parts, needles, data)
    native = first_start()
    for wide in ("", " \u0101", " \U0001f600"):
        body = text + wide
        at = native(body, encoded, start, misses, word_terms, wanted)  # type: ignore[operator]
        got = first_window(body, encoded, start, misses, word_terms, wanted, before, after)
        word = WORD_RUN.match(body, at) if at >= 0 else None
        # Settled: the candidate's word was analysed before and one of its terms is wanted (the caller
        # has nothing left to check); then its window comes along.
        settled = (
            word is not None
            and (at == 0 or body[at - 1].isascii())
            and word.group(0) not in misses
            and bool(set(word_terms.get(word.group(0), ())) & wanted)
        )
        if settled:
            tail, head = scopegate.text.clean_tail(body, at, before), scopegate.text.clean_head(body, at, after)
            assert got == (at, tail, head)
        else:
            assert got == at


def test_first_window_refuses_bad_arguments() -> None:
    from scopegate.search._wordscan import first_window

    good: tuple[object, ...] = ("text", (b"te",), 0, set(), {}, frozenset(), 1, 5)
    assert first_window(*good) == 0  # type: ignore[arg-type]
    for at, bad, error in [(6, -1, ValueError), (7, "5", TypeError), (4, [], TypeError), (0, b"text", TypeError)]:
        args = list(good)
        args[at] = bad
        with pytest.raises(error):
            first_window(*args)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        first_window(*good[:7])  # type: ignore[arg-type]


def _python_only(finder: TermFinder) -> TermFinder:
    finder.native_needles = None  # as without the extension
    return finder


@given(bodies(), queries)
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_term_finder_finds_the_same_first_match_with_either_scan(body: str, query: str) -> None:
    terms = unique_terms(query)
    native = TermFinder(terms, analyze).first_match(body)
    assert native == _python_only(TermFinder(terms, analyze)).first_match(body)


@given(bodies(), queries, st.integers(40, 600))
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_term_finder_gives_the_same_window_with_either_scan_and_a_warm_table(body: str, query: str, limit: int) -> None:
    terms = unique_terms(query)
    at = _python_only(TermFinder(terms, analyze)).first_match(body)
    tail, head = scopegate.text.clean_tail, scopegate.text.clean_head
    expected = None if at is None else (at, tail(body, at, limit // 5 + 1), head(body, at, limit + 1))
    # First with the words unknown (the C scan hands candidates to Python), then settled from the table.
    for _ in range(2):
        assert TermFinder(terms, analyze).first_window(body, limit // 5 + 1, limit + 1) == expected
    assert _python_only(TermFinder(terms, analyze)).first_window(body, limit // 5 + 1, limit + 1) == expected


@pytest.mark.parametrize(
    "body",
    [
        "\u212aelvin then refund",  # a character lowercasing to ASCII before the match: the Python scan decides
        "refund \u212aelvin",
        "a refund " + "\u0130" * 3,
        "x" * 5000 + " \u0130stanbul refund",
        "refunds_pending and then refunds",
    ],
)
def test_characters_lowercasing_to_ascii_hand_over_to_the_python_scan(body: str) -> None:
    for query in ("refund", "kelvin", "istanbul"):
        terms = unique_terms(query)
        assert TermFinder(terms, analyze).first_match(body) == _python_only(TermFinder(terms, analyze)).first_match(
            body
        )


@given(st.lists(TEXT_PARTS | st.text(max_size=5), max_size=40), st.data())
@FAST
def test_word_end_is_the_word_run_regex(parts: list[str], data: st.DataObject) -> None:
    from scopegate.search._wordscan import word_end

    text = "".join(parts)
    for wide in ("", " \u0101", " \U0001f600"):
        at = data.draw(st.integers(0, len(text + wide)))
        assert word_end(text + wide, at) == WORD_RUN.match(text + wide, at).end()  # type: ignore[union-attr]
    with pytest.raises(ValueError):
        word_end(text, len(text) + 1)


# -- clean_head / clean_tail in C: the Python contracts (test_shaper_bounded.py), the same strings --------
def test_native_cleaning_of_every_low_code_point_equals_the_python_rule() -> None:
    from scopegate.search._wordscan import clean_head, clean_tail

    text = "".join(chr(c) + "a" for c in range(0x3100))
    whole = scopegate.text.clean_text(text)
    assert clean_head(text, 0, len(text)) == (whole, True)
    assert clean_tail(text, len(text) - 1, len(text)) == (whole[:-1], True)


@pytest.mark.parametrize(
    ("text", "start", "need", "expected"),
    [
        ("", 0, 5, ("", True)),
        ("   ", 1, 5, ("", True)),
        ("a  b", 0, 0, ("", False)),
        ("a  b", 0, 1, ("a", False)),
        ("a  b", 0, 2, ("a b", True)),  # the space comes with the character after it
        ("a \x00 b\x07c  \n", 0, 10, ("a bc", True)),
        ("x" * 1000 + "   ", 10, 5, ("xxxxx", False)),
        ("abc   \n\t ", 0, 3, ("abc", True)),  # only whitespace after it: that is all
    ],
)
def test_native_clean_head_examples(text: str, start: int, need: int, expected: tuple[str, bool]) -> None:
    from scopegate.search._wordscan import clean_head

    assert clean_head(text, start, need) == expected


@pytest.mark.parametrize(
    ("text", "end", "need", "expected"),
    [
        ("x", 0, 5, ("", True)),
        ("   x", 3, 5, ("", True)),
        ("a \x00 b  x", 7, 10, ("a b ", True)),
        ("word1 word2 x", 12, 3, ("d2 ", False)),
        ("word1 word2 x", 12, 6, ("word2 ", False)),
        ("  ab\x01cd x", 8, 10, ("abcd ", True)),  # only whitespace before it: from the start
    ],
)
def test_native_clean_tail_examples(text: str, end: int, need: int, expected: tuple[str, bool]) -> None:
    from scopegate.search._wordscan import clean_tail

    assert clean_tail(text, end, need) == expected


@pytest.mark.parametrize(
    ("args", "error"),
    [(("t", 0), TypeError), ((b"t", 0, 1), TypeError), (("t", 2, 1), ValueError), (("t", 0, -1), ValueError)],
)
def test_native_cleaners_refuse_bad_arguments(args: tuple[object, ...], error: type[Exception]) -> None:
    from scopegate.search._wordscan import clean_head, clean_tail

    for clean in (clean_head, clean_tail):
        with pytest.raises(error):
            clean(*args)  # type: ignore[arg-type]


# -- word_runs: the words the engine's catch-all field is cut into ---------------------------------------
@given(st.text(max_size=400))
@FAST
def test_word_runs_in_c_equals_the_python_fallback(text: str) -> None:
    from scopegate.search._wordscan import word_runs

    assert word_runs(text) == _python_word_runs(text)
    assert word_runs(text + "\U0001f600") == _python_word_runs(text)  # stored 4 bytes wide
    assert word_runs(text + "\u0101") == _python_word_runs(text + "\u0101")  # 2 bytes wide


def test_word_runs_refuses_what_is_not_text() -> None:
    from scopegate.search._wordscan import word_runs

    with pytest.raises(TypeError):
        word_runs(b"bytes")  # type: ignore[arg-type]


# -- the shrink rounds' arithmetic in C against snippet.py's definitions --------------------------------
# Quotes and backslashes (what JSON escapes), wide characters (every storage width, and slices of a wide
# text that are narrow again), spaces at every distance from a cut.
SPAN_PARTS = st.sampled_from([*WORDS, " ", '"', "\\", "é", "’", "😀", "ab  cd", "\u2026", "x" * 30])


@given(st.lists(SPAN_PARTS, max_size=120).map("".join), queries, st.integers(1, 600), st.data())
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_snippet_spans_in_c_equal_the_python_definitions(
    body: str, query: str, limit: int, data: st.DataObject
) -> None:
    from scopegate.search import _wordscan

    finder = TermFinder(unique_terms(query), analyze)
    sources = [
        snippet_module.prepare(piece, finder, limit, shorter=shorter)
        for piece in (body, body[: len(body) // 2], body[len(body) // 3 :])
        for shorter in (False, True)
    ]
    for smaller in sorted({limit, max(1, limit // 2), max(1, limit - 37), 40, 2, 1, 0}):
        if smaller > limit:
            continue
        assert _wordscan.snippets_size(sources, smaller) == snippet_module.py_snippets_size(sources, smaller)
        cut = _wordscan.cut_snippets(sources, smaller)
        expected = snippet_module.py_cut_snippets(sources, smaller)
        assert cut == expected
        # Equal and of the same storage width: Python compares strings of different widths as unequal.
        assert [len(c.encode("utf-32-le")) for c in cut] == [len(e.encode("utf-32-le")) for e in expected]
        assert [c.isascii() for c in cut] == [e.isascii() for e in expected]
    base = data.draw(st.integers(0, 3000))
    budget = data.draw(st.integers(0, 5000))
    size = base + snippet_module.py_snippets_size(sources, limit)
    floor = data.draw(st.integers(0, limit))
    assert _wordscan.shrink_limit(sources, base, budget, limit, size, floor) == snippet_module.py_shrink_limit(
        sources, base, budget, limit, size, floor
    )


@st.composite
def snippet_sources(draw: st.DrawFn) -> snippet_module.SnippetSource:
    """Any source within the contract prepare keeps (a match opened without the body's start has more
    than a fifth of the limit before it), not only those prepare happens to make."""
    texts = st.lists(SPAN_PARTS | st.sampled_from([" ", "  ", " x", "x "]), max_size=40).map("".join)
    limit = draw(st.integers(0, 80))
    head, local = draw(texts), draw(texts)
    if draw(st.booleans()) or not local:
        return snippet_module.SnippetSource(limit, head, draw(st.booleans()))
    from_start = draw(st.booleans()) or len(local) <= limit // 5
    at = draw(st.integers(0 if from_start else limit // 5 + 1, len(local)))
    return snippet_module.SnippetSource(limit, head, False, local, at, from_start, draw(st.booleans()))


@given(st.lists(snippet_sources(), max_size=6))
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_snippet_spans_in_c_equal_the_python_definitions_on_any_source(
    sources: list[snippet_module.SnippetSource],
) -> None:
    from scopegate.search import _wordscan

    top = min((s.limit for s in sources), default=0)
    for limit in range(top + 1):
        assert _wordscan.snippets_size(sources, limit) == snippet_module.py_snippets_size(sources, limit)
        cut = _wordscan.cut_snippets(sources, limit)
        expected = snippet_module.py_cut_snippets(sources, limit)
        assert cut == expected
        assert [len(c.encode("utf-32-le")) for c in cut] == [len(e.encode("utf-32-le")) for e in expected]
    size = 100 + snippet_module.py_snippets_size(sources, top)
    assert _wordscan.shrink_limit(sources, 100, 150, top, size, 0) == snippet_module.py_shrink_limit(
        sources, 100, 150, top, size, 0
    )


def test_snippet_spans_cut_at_a_space_exactly_half_way() -> None:
    # cap_span keeps a space that is exactly limit // 2 into the window; one before that, it cuts mid-word.
    from scopegate.search import _wordscan

    for text in ("abcd efghijklmnop", "abc defghijklmnop"):
        source = snippet_module.SnippetSource(10, text, False)
        assert _wordscan.cut_snippets([source], 10) == snippet_module.py_cut_snippets([source], 10)
    assert _wordscan.cut_snippets([snippet_module.SnippetSource(10, "abcde fghijklmnop", False)], 10) == ["abcde…"]
    assert _wordscan.cut_snippets([snippet_module.SnippetSource(10, "abcd efghijklmnop", False)], 10) == ["abcd efgh…"]


def test_snippet_spans_refuse_bad_arguments() -> None:
    from scopegate.search import _wordscan

    finder = TermFinder(unique_terms("refund"), analyze)
    source = snippet_module.prepare("the refund failed " * 40, finder, 100)
    with pytest.raises(ValueError, match="up to 100 characters, not 101"):
        _wordscan.snippets_size([source], 101)
    with pytest.raises(ValueError, match="up to 100 characters, not 101"):
        snippet_module.py_snippets_size([source], 101)
    assert _wordscan.cut_snippets((source,), 50) == snippet_module.py_cut_snippets([source], 50)  # any sequence
    with pytest.raises(TypeError, match="must be a sequence"):
        _wordscan.cut_snippets(5, 50)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        _wordscan.snippets_size([("not", "a", "source")], 50)  # type: ignore[list-item]
    with pytest.raises(TypeError):
        _wordscan.shrink_limit([source], 0, 10, 100)  # type: ignore[call-arg]
    assert _wordscan.cut_snippets([], 50) == [] and _wordscan.snippets_size([], 50) == 0
