"""What a word is, on every Python: the frozen Unicode tables (scripts/gen_word_marks.py says why), the C
pass and the Python fallback held to them, whatever Unicode version the interpreter has."""

from __future__ import annotations

import importlib.util
import re
import unicodedata
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

from scopegate.search import word_marks
from scopegate.search.analysis import _python_word_runs, word_runs

ROOT = Path(__file__).resolve().parents[2]
WordRuns = Callable[[str], str]


def _implementations() -> list[object]:
    found = [pytest.param(_python_word_runs, id="python"), pytest.param(word_runs, id="in-use")]
    try:
        from scopegate.search import _wordscan
    except ImportError:
        return found
    return [*found, pytest.param(_wordscan.word_runs, id="c")]


IMPLEMENTATIONS = pytest.mark.parametrize("runs", _implementations())


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_word_marks", ROOT / "scripts" / "gen_word_marks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _points(table: tuple[tuple[int, int], ...] | list[tuple[int, int]]) -> set[int]:
    return {code for first, last in table for code in range(first, last + 1)}


def test_the_c_header_and_the_python_module_hold_the_same_rows() -> None:
    header = (ROOT / "src" / "scopegate" / "search" / "_word_marks.h").read_text()
    assert f"Unicode {word_marks.UNICODE_VERSION}, frozen" in header
    for name in ("WORD_STARTS", "WORD_MARKS"):
        block = header.split(f"static const CodeRange {name}[")[1].split("};")[0]
        rows = tuple((int(a, 16), int(b, 16)) for a, b in re.findall(r"\{0x([0-9A-F]+), 0x([0-9A-F]+)\}", block))
        assert rows == getattr(word_marks, name), name
        assert f"#define {name}_COUNT {len(rows)}" in header


def test_the_tables_are_the_generators_at_their_version_and_only_grow_after_it() -> None:
    generator = _generator()
    assert generator.UNICODE_VERSION == word_marks.UNICODE_VERSION
    here = generator.tables()  # by this interpreter's Unicode
    if unicodedata.unidata_version == word_marks.UNICODE_VERSION:
        for name, rows in here.items():
            assert tuple(rows) == getattr(word_marks, name), name
        return
    # A newer Unicode (Python 3.12: 15.0, 3.13: 15.1) only assigns new characters: every character the
    # tables class is classed the same by it, so the frozen tables lose nothing an older index held.
    starts, marks = _points(word_marks.WORD_STARTS), _points(word_marks.WORD_MARKS)
    here_starts, here_marks = _points(here["WORD_STARTS"]), _points(here["WORD_MARKS"])
    assert starts <= here_starts and marks <= here_marks
    assert not (here_starts | here_marks) - (starts | marks) & (starts | marks)


@IMPLEMENTATIONS
def test_every_table_edge_is_a_word_character_or_not_as_the_tables_say(runs: WordRuns) -> None:
    inside = _points(word_marks.WORD_STARTS) | _points(word_marks.WORD_MARKS)
    for first, last in word_marks.WORD_STARTS:
        for code in (first, last):
            assert runs(f"-{chr(code)}-") == chr(code), hex(code)  # starts a word alone
        for code in (first - 1, last + 1):
            if code >= 0x80 and code not in inside and not 0xD800 <= code <= 0xDFFF:
                assert runs(f"a{chr(code)}b") == "a b", hex(code)
    for first, last in word_marks.WORD_MARKS:
        for code in (first, last):
            assert runs(f"a{chr(code)}b") == f"a{chr(code)}b", hex(code)  # continues a word
            assert runs(f" {chr(code)}b") == "b", hex(code)  # never starts one
        for code in (first - 1, last + 1):
            if code >= 0x80 and code not in inside and not 0xD800 <= code <= 0xDFFF:
                assert runs(f"a{chr(code)}b") == "a b", hex(code)


@IMPLEMENTATIONS
@pytest.mark.parametrize(
    "new",
    [
        "\U00031350",  # CJK Unified Ideographs Extension H (Unicode 15.0): a letter on Python 3.12
        "\U00011f04",  # a Kawi letter (15.0)
        "\U00011f00",  # a Kawi sign (a mark, 15.0)
        "\U0002ebf0",  # CJK Unified Ideographs Extension I (15.1): a letter on Python 3.13
    ],
)
def test_a_character_newer_than_the_tables_is_no_word_character_on_any_python(runs: WordRuns, new: str) -> None:
    assert runs(f"a{new}b {new}") == "a b"


@IMPLEMENTATIONS
@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("", ""),
        ("  ,;  ", ""),
        ("card_declined E4012: retry!", "card_declined E4012 retry"),
        ("Ünïcødé  straße\tİstanbul\u212a", "Ünïcødé straße İstanbul\u212a"),
        ("3500mm² ½ and ١٢٣ digits", "3500mm and ١٢٣ digits"),  # decimal digits of any script; no "other numbers"
        ("می\u200cخواهم", "می\u200cخواهم"),  # a ZWNJ inside a Persian word
        ("a\u203fb \u2040", "a\u203fb \u2040"),  # connector punctuation, like "_"
        ("emoji🙂between", "emoji between"),
        ("cafe\u0301 au lait", "cafe\u0301 au lait"),  # a combining accent stays in its word
        ("हिन्दी भाषा, ไทย", "हिन्दी भाषा ไทย"),  # vowel signs and viramas too
        ("⚠️ warning", "warning"),  # a variation selector alone is no word (Rust's \w made it one)
        ("Ⅻ 〇 ᛮ", "Ⅻ 〇 ᛮ"),  # letter numbers (Nl) are words, as in the engines' \w
    ],
)
def test_word_runs_examples(runs: WordRuns, text: str, words: str) -> None:
    assert runs(text) == words
