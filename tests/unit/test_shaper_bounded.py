"""The bounded shaper: same output as the whole-body algorithm, work bounded by the window.

``shaper_reference`` is the shaper as it was before issue 13. The bounded one
must give the same snippets and hit lists; and on 1 MB bodies the characters it
cleans and analyses must stay proportional to the snippet window (counted
through an instrumented cleaner and analyser: no timings).
"""

from __future__ import annotations

import csv
import json
import random
import re
import tracemalloc
from collections.abc import Callable, Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shaper_reference import ref_clean_text, ref_first_match_offset, ref_make_snippet, ref_shape_hits

import scopegate.search.shaper
import scopegate.search.snippet
import scopegate.text
from scopegate.errors import ConfigError
from scopegate.search.analysis import WORD_RE, analyze, unique_terms
from scopegate.search.model import RawHit, RawResult, SearchRequest
from scopegate.search.shaper import make_snippet, shape_document, shape_hits, shape_search
from scopegate.search.snippet import SnippetSource, TermFinder, needle
from scopegate.search.spec import SearchSpec
from scopegate.text import CONTROL_CLASS, Cleaner, clean_text
from scopegate_lab.workload import find_ticket_data

WORDS = [
    "refund", "refunds", "Refunded", "REFUNDING", "E4012", "e4012x", "card_declined", "NullPointerException",
    "nullpointer", "dying", "lying", "tie", "happy", "happiness", "organization", "organizational", "abilities",
    "ability", "possibly", "the", "and", "a", "of", "datanode", "DataNode", "blocks", "İstanbul", "Straße",
    "ΣΟΦΟΣ", "σοφός", "café", "cafe\u0301", "日本語", "🙂", "x½y", "\u212aelvin", "ǅemal", "ﬁle", "ＡＢＣ",
    "foo_bar", "a1b2", "404", "v2", "ok", "io", "ui", "\u26a0\ufe0f", "हिन्दी", "\u0301refund", "refund\u0301s",
]  # fmt: skip
# Control characters only next to spaces here: between two word characters the engine sees two words
# and the old shaper one (it looked for words after cleaning), the one case where they are meant to differ.
SEPARATORS = [
    " ", " ", " ", "\n", "\t", "\r\n", "\u00a0", "\u2028", "\u3000", ", ", ". ", "(", ")", " \x00 ", "\x07 ",
    "\x85", "\x1c", "--", "'", "'s", ": ", "/", "  \n\n  ", " \x9f",
]  # fmt: skip
JOINING = ["\x00", "\x07", "\x9f", "\x01\x02"]
FILLER = "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor incididunt "


NO_CONTROLS = st.characters(blacklist_categories=("Cc",))


@st.composite
def bodies(draw: st.DrawFn, joining_controls: bool = False) -> str:
    """Words, separators, filler and random text; control characters inside words only if asked."""
    parts: list[str] = []
    separators = SEPARATORS + JOINING if joining_controls else SEPARATORS
    for _ in range(draw(st.integers(0, 80))):
        kind = draw(st.integers(0, 9))
        if kind == 0:
            parts.append(FILLER * draw(st.integers(1, 12)))
        elif kind == 1:
            parts.append(" " + draw(st.text(max_size=20) if joining_controls else st.text(NO_CONTROLS, max_size=20)))
        else:
            parts.append(draw(st.sampled_from(WORDS)))
            parts.append(draw(st.sampled_from(separators)))
    return "".join(parts)


JOINED_BY_CONTROL = re.compile(rf"\w[{CONTROL_CLASS}]+\w")


queries = st.lists(st.sampled_from(WORDS), min_size=1, max_size=4).map(" ".join)
FAST = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FEWER = settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# -- cleaning --------------------------------------------------------------------------------------------
@given(st.text())
@FAST
def test_clean_text_is_the_old_rule(text: str) -> None:
    assert clean_text(text) == ref_clean_text(text)


def test_clean_text_agrees_on_every_low_code_point() -> None:
    text = "".join(chr(c) + "a" for c in range(0x3100))
    assert clean_text(text) == ref_clean_text(text)


CLEANERS = [(scopegate.text.python_clean_head, scopegate.text.python_clean_tail)]
if scopegate.text.clean_head is not scopegate.text.python_clean_head:
    CLEANERS.append((scopegate.text.clean_head, scopegate.text.clean_tail))  # the C pass, when built


@pytest.mark.parametrize(("clean_head", "clean_tail"), CLEANERS, ids=["python", "native"][: len(CLEANERS)])
@given(text=bodies() | st.text(), data=st.data())
@FAST
def test_clean_head_and_tail_are_exact_pieces_of_the_cleaned_whole(
    clean_head: Cleaner, clean_tail: Cleaner, text: str, data: st.DataObject
) -> None:
    whole = clean_text(text)
    start = data.draw(st.integers(0, len(text)))
    need = data.draw(st.integers(0, 500))
    head, complete = clean_head(text, start, need)
    rest = clean_text(text[start:])
    # Not "complete" only promises `need` characters: the rest may happen to be blank.
    assert rest.startswith(head) and (head == rest if complete else len(head) >= need)
    kept = [i for i, ch in enumerate(text) if not ch.isspace() and clean_text(ch)]
    if kept:
        end = data.draw(st.sampled_from(kept))
        tail, from_start = clean_tail(text, end, need)
        before = clean_text(text[: end + 1])[:-1]
        # text[end] lands right after the cleaned text before it, space included.
        assert whole.startswith(before + clean_text(text[end]))
        assert before.endswith(tail) and (from_start or len(tail) >= need)
        if from_start:
            assert tail == before


# -- snippets and hit lists equal the old algorithm ---------------------------------------------------------
@given(bodies(), queries, st.integers(40, 600))
@FAST
def test_snippet_equals_the_whole_body_algorithm(body: str, query: str, limit: int) -> None:
    assert not JOINED_BY_CONTROL.search(body)
    terms = unique_terms(query)
    assert make_snippet(body, terms, analyze, limit) == ref_make_snippet(body, terms, analyze, limit)


@given(st.text(NO_CONTROLS, max_size=2000), st.text(max_size=30), st.integers(40, 200))
@FAST
def test_snippet_equals_the_old_algorithm_on_arbitrary_text(body: str, query: str, limit: int) -> None:
    terms = unique_terms(query) or ("x",)
    assert make_snippet(body, terms, analyze, limit) == ref_make_snippet(body, terms, analyze, limit)


@given(bodies(), queries)
@FAST
def test_first_match_equals_the_old_scan_on_clean_text(body: str, query: str) -> None:
    cleaned = clean_text(body)
    finder = TermFinder(unique_terms(query), analyze)
    at = finder.first_match(cleaned)
    assert at == ref_first_match_offset(cleaned, unique_terms(query), analyze)


def test_a_control_character_splits_a_word_as_in_the_engine() -> None:
    body = "lorem ipsum " * 50 + "ref\x00und here, then a real refund later " + "dolor " * 80
    assert analyze("ref\x00und") == ["ref", "und"]  # the engine indexed two words
    snippet = make_snippet(body, unique_terms("refund"), analyze, 100)
    assert snippet.startswith("…") and "refund later" in snippet and "refund here" not in snippet
    assert "refund here" in make_snippet(body, unique_terms("und"), analyze, 100)


def test_a_short_needle_inside_a_longer_word_does_not_hide_it() -> None:
    # "lying" -> "lie" -> needle "l", which occurs inside NullPointerException: the long word's own
    # needle must still be searched for at token starts.
    body = "lorem ipsum dolor " * 40 + "a/v2'NullPointerException, then more " + "sit amet " * 60
    terms = unique_terms("NullPointerException lying")
    assert "NullPointerException" in make_snippet(body, terms, analyze, 200)
    assert make_snippet(body, terms, analyze, 200) == ref_make_snippet(body, terms, analyze, 200)


@given(bodies(joining_controls=True), queries, st.integers(40, 600))
@FAST
def test_any_body_gives_a_bounded_snippet(body: str, query: str, limit: int) -> None:
    snippet = make_snippet(body, unique_terms(query), analyze, limit)
    assert len(snippet) <= limit
    assert snippet.strip("…") in clean_text(body) or snippet.strip("…").rstrip() in clean_text(body)


# Quotes and backslashes are what a JSON encoder escapes in cleaned text; control characters must be cleaned out.
ESCAPED = ['"', "\\", '\\"', '""', "\x00", "\x1f", "\n\t"]


@given(bodies(joining_controls=True), st.lists(st.sampled_from(ESCAPED), max_size=30), queries, st.integers(40, 600))
@FAST
def test_snippet_size_is_the_json_size_of_the_snippet(body: str, escaped: list[str], query: str, limit: int) -> None:
    rng = random.Random(len(body))
    for piece in escaped:  # scatter them: inside words, in the window, before it
        at = rng.randint(0, len(body))
        body = body[:at] + piece + body[at:]
    finder = TermFinder(unique_terms(query), analyze)
    for shorter in (False, True):
        source = scopegate.search.snippet.prepare(body, finder, limit, shorter=shorter)
        for smaller in sorted({limit, max(1, limit // 2), max(1, limit - 37), 40, 2, 1}):
            if smaller > limit:
                continue
            text = scopegate.search.snippet.snippet(source, smaller)
            encoded = json.dumps(text, ensure_ascii=False)
            assert scopegate.search.snippet.snippet_size(source, smaller) == len(encoded) - 2, (text, smaller)


def test_the_shrink_rounds_cut_each_snippet_once(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = _spec()
    bodies_ = [_megabyte_body(10_000 * (i + 1))[:50_000] for i in range(5)]
    hits = _hits(bodies_, ["Refund failed " * 10] * 5)  # long subjects: the snippets must shrink
    cuts: list[tuple[int, int]] = []
    real = scopegate.search.shaper.cut_snippets

    def cut(sources: list[SnippetSource], limit: int) -> list[str]:
        cuts.append((len(sources), limit))
        return real(sources, limit)

    monkeypatch.setattr(scopegate.search.shaper, "cut_snippets", cut)
    items, truncated = shape_hits(spec, hits, unique_terms("refund"), analyze)
    assert truncated and len(json.dumps(items, ensure_ascii=False)) <= spec.hits_char_budget
    assert len(cuts) == 1 and cuts[0][0] == 5 and cuts[0][1] < spec.snippet_chars  # one cut each, shrunk
    assert items == ref_shape_hits(spec, hits, unique_terms("refund"), analyze)[0]


def _hits(bodies_: list[str], subjects: list[str]) -> tuple[RawHit, ...]:
    return tuple(
        RawHit(f"T-{i}", 1.0, {"ticket_id": f"T-{i}", "subject": s, "status": "open", "body": b})
        for i, (b, s) in enumerate(zip(bodies_, subjects, strict=True))
    )


@given(st.lists(st.tuples(bodies(), st.text(max_size=300) | bodies()), min_size=0, max_size=5), queries)
@FEWER
def test_hit_lists_equal_the_old_shaper(pairs: list[tuple[str, str]], query: str) -> None:
    spec = _spec()
    hits = _hits([b for b, _ in pairs], [s for _, s in pairs])
    terms = unique_terms(query)
    assert shape_hits(spec, hits, terms, analyze) == ref_shape_hits(spec, hits, terms, analyze)


def _spec() -> SearchSpec:
    from scopegate.demo.corpus import ticket_spec

    return ticket_spec()


@given(
    st.lists(st.text(max_size=1000) | bodies(joining_controls=True), min_size=5, max_size=5),
    st.lists(st.text(max_size=1000), min_size=5, max_size=5),
    queries,
)
@FEWER
def test_five_hits_always_fit_2500_characters(bodies_: list[str], subjects: list[str], query: str) -> None:
    spec = _spec()
    out = shape_search(spec, SearchRequest(query), RawResult(_hits(bodies_, subjects), 5), unique_terms(query), analyze)
    assert len(json.dumps(out["results"], ensure_ascii=False)) <= spec.hits_char_budget
    for item in out["results"]:
        assert len(item["snippet"]) <= spec.snippet_chars


@pytest.mark.parametrize(
    "body",
    ["", " \n\t " * 50_000, "\x00\x01\x02" * 50_000, "🙂" * 100_000, "x" * 200_000, "word " * 40_000],
    ids=["empty", "whitespace", "controls", "emoji", "one-huge-word", "many-words"],
)
def test_odd_huge_bodies_equal_the_old_shaper(body: str) -> None:
    spec = _spec()
    hits = _hits([body] * 5, ["s"] * 5)
    for query in ("word", "zebra", "x"):
        terms = unique_terms(query)
        assert shape_hits(spec, hits, terms, analyze) == ref_shape_hits(spec, hits, terms, analyze)


# -- the work is bounded by the window ----------------------------------------------------------------------
class Counting:
    """An analyser and a cleaner that count the characters they are given."""

    def __init__(self) -> None:
        self.analysed = 0
        self.cleaned = 0

    def analyze(self, text: str) -> list[str]:
        self.analysed += len(text)
        return analyze(text)

    def wrap_clean(self, clean: Callable[[str], str]) -> Callable[[str], str]:
        def counted(text: str) -> str:
            self.cleaned += len(text)
            return clean(text)

        return counted


@pytest.fixture
def counting(monkeypatch: pytest.MonkeyPatch) -> Counting:
    counter = Counting()
    monkeypatch.setattr(scopegate.text, "clean_text", counter.wrap_clean(scopegate.text.clean_text))
    # The Python cleaners, whose every character goes through clean_text and is counted: the C ones
    # read the same window (their contract is tested above) but cannot be counted from here.
    for module in (scopegate.search.snippet, scopegate.search.shaper):
        monkeypatch.setattr(module, "clean_head", scopegate.text.python_clean_head)
    monkeypatch.setattr(scopegate.search.snippet, "clean_tail", scopegate.text.python_clean_tail)
    return counter


def _megabyte_body(match_at: int) -> str:
    filler = "lorem ipsum dolor sit amet, consectetur adipiscing elit.\n\n" * (1_000_000 // 59)
    return filler[:match_at] + " The refund failed with E4012. " + filler[match_at:]


def test_snippet_work_is_bounded_by_the_window_on_a_megabyte_body(counting: Counting) -> None:
    body = _megabyte_body(500_000)
    snippet = make_snippet(body, unique_terms("refund E4012"), counting.analyze, 400)
    assert "refund" in snippet and len(snippet) <= 400
    assert counting.cleaned <= 4 * 400, counting.cleaned  # the head, the context before, the window after
    assert counting.analysed <= 64, counting.analysed  # the matching word, not the 80,000 before it


def test_no_match_in_a_megabyte_body_cleans_only_the_head(counting: Counting) -> None:
    body = _megabyte_body(500_000)
    snippet = make_snippet(body, unique_terms("zebra giraffe"), counting.analyze, 400)
    assert snippet.startswith("lorem ipsum") and len(snippet) <= 400
    assert counting.cleaned <= 2 * 400 and counting.analysed == 0


def test_shrink_rounds_do_not_rescan_bodies(counting: Counting) -> None:
    spec = _spec()
    bodies_ = [_megabyte_body(100_000 * (i + 1)) for i in range(5)]
    hits = _hits(bodies_, ["Refund failed " * 10] * 5)
    items, truncated = shape_hits(spec, hits, unique_terms("refund"), counting.analyze)
    assert truncated and len(json.dumps(items, ensure_ascii=False)) <= spec.hits_char_budget
    assert all("refund" in item["snippet"] for item in items)
    assert counting.cleaned <= 5 * 4 * spec.snippet_chars + 5 * 2 * spec.result_field_chars, counting.cleaned
    assert counting.analysed <= 64, counting.analysed  # one distinct matching word, memoised across hits


def test_fetch_bound_copies_only_the_bound() -> None:
    spec = _spec()
    doc = {"ticket_id": "T-1", "tenant_id": "acme", "subject": "s", "status": "open", "body": "word " * 2_000_000}
    tracemalloc.start()
    try:
        out = shape_document(spec, doc)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(out["document"]["body"]) <= spec.fetch_body_chars and out["truncated"] is True
    assert peak < 200_000, peak  # a 10 MB body: the 8,000-character cut, not a copy of the body


# -- the stemmer property the needle search rests on --------------------------------------------------------
def _real_words() -> Iterator[str]:
    try:
        root = find_ticket_data()
    except ConfigError as exc:
        pytest.skip(f"shared data not available: {exc}")
    csv.field_size_limit(1 << 30)
    for path in sorted(root.glob("*/*.csv")):
        with path.open(newline="", encoding="utf-8") as handle:
            for row in csv.reader(handle):
                for cell in row:
                    yield from WORD_RE.findall(cell)


def test_every_word_contains_the_needle_of_its_terms() -> None:
    """The stemmer property the needle search rests on, over real words and derived forms of them."""
    suffixes = ["", "s", "es", "ies", "ied", "ed", "ing", "ingly", "edly", "ly", "y", "ying", "ational", "ization"]
    suffixes += ["fulness", "iveness", "biliti", "bility", "bilities", "bly", "ically", "izational", "ationally"]
    suffixes += ["iness", "ement", "ness", "ful", "ous", "ive", "ize", "ised", "izing", "ance", "ence", "able", "ible"]
    # Every rule that replaces rather than strips (the needle keeps the whole term unless its last
    # character is an e, i or l the stemmer may have written): Porter2's steps 1-5, doubled consonants.
    suffixes += ["ably", "ibly", "ability", "ibility", "ency", "ancy", "enci", "anci", "abli", "entli", "izer"]
    suffixes += ["ator", "ation", "alism", "aliti", "alli", "ousli", "iviti", "bli", "ogi", "logy", "fulli"]
    suffixes += ["lessli", "li", "tional", "alize", "icate", "iciti", "ical", "ative", "ism", "iti", "ement"]
    suffixes += ["eed", "eedly", "ied", "ie", "ying", "pping", "tting", "bbed", "lled", "ll", "sses", "us", "ss"]
    rng = random.Random(3)
    words = set(_real_words())
    stems = rng.sample(sorted(w for w in words if w.isalpha()), 1000)
    stems += ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(1, 4))) for _ in range(600)]
    words.update(s + x for s in stems for x in suffixes)
    words.update(("dying", "lying", "tying", "skies", "news", "bying", "ugly", "early", "only", "gently", "MYing"))
    words.update(("skis", "idly", "singly", "howe", "atlas", "cosmos", "bias", "andes", "sky", "Skies"))
    words.update(("inning", "outing", "canning", "herring", "earring", "proceed", "exceed", "succeed"))
    assert not [(w, t) for w in words for t in analyze(w) if needle(t) not in w.lower()][:20]
    # And it starts the token: a place right after an ASCII word character can be skipped. (Words with
    # characters such as "½", a word character for Python but not for the engine, hold several tokens.)
    plain = [w for w in words if all(c.isalpha() or c.isdecimal() or c == "_" for c in w)]
    assert not [(w, t) for w in plain for t in analyze(w) if not w.lower().startswith(needle(t))][:20]


def test_a_term_ending_in_a_character_lowercased_in_context_is_still_found() -> None:
    # Found by hypothesis: the analyser lowercases "ΣΟΦΟΣ" to "σοφοσ", Python (the body's scan) to
    # "σοφος": a needle never ends in a character outside ASCII.
    body = "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor incididunt ΣΟΦΟΣ "
    assert needle(unique_terms("ΣΟΦΟΣ")[0]) == "σοφο"
    assert make_snippet(body, unique_terms("ΣΟΦΟΣ"), analyze, 40) == "…ΣΟΦΟΣ"
    assert [needle(t) for t in ("error", "e4012", "fail", "line", "happi", "sky", "die", "id")] == [
        "error",
        "e4012",
        "fai",
        "lin",
        "happ",
        "sk",
        "d",
        "id",
    ]


def test_a_body_that_fitted_whole_opens_at_its_match_once_snippets_shrink() -> None:
    # Found by hypothesis: a short body was prepared without its first match (it fitted the first
    # limit whole), so when the budget shrank the snippets it was cut from its start, dropping the match.
    filler = "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor incididunt "
    pairs = [(filler * 5, filler) for _ in range(4)] + [("E4012 E4012 " + filler * 3 + "refund " * 15, "")]
    spec = _spec()
    hits = _hits([b for b, _ in pairs], [s for _, s in pairs])
    terms = unique_terms("refund")
    items, truncated = shape_hits(spec, hits, terms, analyze)
    assert truncated
    assert "refund" in items[-1]["snippet"] and items[-1]["snippet"].startswith("…")
    assert (items, truncated) == ref_shape_hits(spec, hits, terms, analyze)
