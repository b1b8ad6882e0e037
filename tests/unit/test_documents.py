"""The one document loader: hostile YAML/JSON/TOML raise a ScopegateError naming file and line, never crash."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from scopegate.documents import DocumentError, Limits, parse_json, parse_toml, parse_yaml, read_bytes
from scopegate.errors import ConfigError, ScopegateError

LIMITS = Limits(max_bytes=4_000_000, max_depth=64, max_nodes=100_000, max_scalar_chars=100_000)


def _laughs(levels: int = 9) -> str:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


# (name, document, expected line, fragment of the message)
HOSTILE_YAML: list[tuple[str, str | bytes, int, str]] = [
    ("duplicate key", "a: 1\nb: 2\na: 3\n", 3, "duplicate key 'a' (first at line 1)"),
    ("nested duplicate key", "a:\n  x: 1\n  y: 2\n  x: 3\n", 4, "duplicate key 'x' (first at line 2)"),
    ("billion laughs", _laughs(), 5, "aliases expand the document past 100000 nodes"),
    ("recursive alias", "a: &a [1, *a]\n", 1, "refers to a node that contains it"),
    ("unknown alias", "a: 1\nb: *nope\n", 2, "unknown alias 'nope'"),
    ("10k-deep flow nesting", "x: " + "[" * 10_000 + "]" * 10_000 + "\n", 1, "nest"),
    ("10k-deep block nesting", "- " * 10_000 + "x\n", 1, "nest"),
    (
        "deep through an alias",
        "a: &d " + "[" * 40 + "]" * 40 + "\nb: " + "[" * 30 + "*d" + "]" * 30 + "\n",
        2,
        "deeper",
    ),
    ("invalid UTF-8", b"a: 1\nb: caf\xe9\n", 2, "not UTF-8"),
    ("lone surrogate", "a: 1\nb: \udcff\n", 2, "not UTF-8"),
    ("tab indentation", "a:\n\tb: 1\n", 2, "not valid YAML"),
    ("huge scalar", "a: 1\nb: " + "x" * 200_000 + "\n", 2, "longer than 100000 characters"),
    ("huge integer", "a: " + "9" * 5000 + "\n", 1, "too long"),
    ("python object tag", "a: !!python/object/apply:os.system [echo hi]\n", 1, "is not allowed"),
    ("python name tag", "a: !!python/name:os.system\n", 1, "is not allowed"),
    ("binary tag", "a: !!binary aGVsbG8=\n", 1, "is not allowed"),
    ("set tag", "a: !!set {x: null}\n", 1, "is not allowed"),
    ("local tag", "a: !secret value\n", 1, "is not allowed"),
    ("bad explicit int", "a: !!int twelve\n", 1, "is not a valid !!int"),
    ("collection as key", "? [a, b]\n: 1\n", 1, "a mapping key must be a scalar"),
    ("two documents", "a: 1\n---\nb: 2\n", 2, "single document"),
    ("unclosed flow", "a: [1, 2\nb: 3\n", 2, "not valid YAML"),
    ("control character", "a: 1\nb: \x00\n", 2, "not valid YAML"),
    ("merge of a scalar", "a: 1\nb:\n  <<: 3\n", 3, "'<<' merges a mapping"),
]


@pytest.mark.parametrize(("name", "text", "line", "fragment"), HOSTILE_YAML, ids=[c[0] for c in HOSTILE_YAML])
def test_hostile_yaml_raises_a_scopegate_error_with_file_and_line(
    name: str, text: str | bytes, line: int, fragment: str
) -> None:
    with pytest.raises(DocumentError) as info:
        parse_yaml(text, "hostile.yaml", LIMITS)
    error = info.value
    assert isinstance(error, ScopegateError) and isinstance(error, ConfigError)
    assert error.source == "hostile.yaml" and error.line == line, str(error)
    assert fragment in str(error)
    assert str(error).startswith(f"hostile.yaml:{line}")


def test_size_is_checked_before_parsing(tmp_path: Path) -> None:
    path = tmp_path / "big.yaml"
    path.write_text("a: 1\n" + "#" * 5_000_000 + "\n", "utf-8")
    with pytest.raises(DocumentError, match="larger than 4000000 bytes"):
        read_bytes(path, LIMITS, what="config")
    with pytest.raises(DocumentError, match="larger than"):
        parse_yaml("a: " + "x" * 4_000_001, "big.yaml", LIMITS)


def test_yaml_values_follow_the_yaml_1_2_core_schema() -> None:
    text = textwrap.dedent(
        """\
        strings: [yes, no, on, off, Yes, NO, y, 1_000, "12", 12:30:00, 2020-01-01, 2020-01-01T00:00:00Z, 0b11]
        booleans: [true, True, FALSE]
        ints: [12, 012, -3, +4, 0o17, 0x1f]
        floats: [1.5, 1e3, -.5, .inf, -.Inf]
        nulls: [~, null, Null, NULL]
        empty:
        tagged: [!!str 12, !!int "7", !!float "2", !!bool "true", !!null ""]
        quoted: ['true', "null", '5']
        block: |
          kept
        200: status code keys stay numbers
        """
    )
    data = parse_yaml(text, "t.yaml", LIMITS).data
    assert data["strings"] == [
        "yes", "no", "on", "off", "Yes", "NO", "y", "1_000", "12", "12:30:00", "2020-01-01",
        "2020-01-01T00:00:00Z", "0b11",
    ]  # fmt: skip
    assert data["booleans"] == [True, True, False]
    assert data["ints"] == [12, 12, -3, 4, 15, 31]
    assert data["floats"][:3] == [1.5, 1000.0, -0.5] and data["floats"][3:] == [math.inf, -math.inf]
    assert data["nulls"] == [None, None, None, None] and data["empty"] is None
    assert data["tagged"] == ["12", 7, 2.0, True, None]
    assert data["quoted"] == ["true", "null", "5"]
    assert data["block"] == "kept\n"
    assert data[200] == "status code keys stay numbers"
    json.dumps(data)  # everything is JSON-compatible


def test_anchors_aliases_and_merge_keys_work_within_the_limits() -> None:
    text = "base: &b {x: 1, y: 2}\nother: &o {z: 3}\nitem:\n  <<: [*b, *o]\n  y: 5\nlist: [*b, *b]\n"
    data = parse_yaml(text, "m.yaml", LIMITS).data
    assert data["item"] == {"y": 5, "x": 1, "z": 3}  # explicit keys win over merged ones
    assert data["list"] == [{"x": 1, "y": 2}, {"x": 1, "y": 2}]


def test_empty_documents_are_none() -> None:
    assert parse_yaml("", "e.yaml", LIMITS).data is None
    assert parse_yaml("# only a comment\n", "e.yaml", LIMITS).data is None


def test_yaml_positions_name_the_line_of_each_key() -> None:
    text = "a: 1\nb:\n  - x\n  - c: 2\n    d: [1,\n        2]\ne: {f: 1}\n"
    doc = parse_yaml(text, "p.yaml", LIMITS, positions=True)
    assert doc.lines[("a",)] == 1 and doc.lines[("b", 0)] == 3 and doc.lines[("b", 1, "c")] == 4
    assert doc.lines[("b", 1, "d", 1)] == 6 and doc.lines[("e", "f")] == 7
    assert doc.line_of(("b", 1, "c", "missing", 3)) == 4  # the nearest known ancestor
    assert doc.line_of(()) is None


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        ('{"a": 1,\n "b": 2,\n "a": 3}', 3, "duplicate key 'a' (first at line 1)"),
        ('{"a": {"x": 1,\n   "x": 2}}', 2, "duplicate key 'x'"),
        ('{"a": 1,\n "b": }', 2, "not valid JSON"),
        ('{"a": [1, 2}', 1, "not valid JSON"),
    ],
)
def test_bad_json_names_the_line(text: str, line: int, fragment: str) -> None:
    with pytest.raises(DocumentError) as info:
        parse_json(text, "bad.json", LIMITS)
    assert info.value.line == line and fragment in str(info.value)


def test_json_nesting_and_strings_are_bounded() -> None:
    with pytest.raises(DocumentError, match="nested"):
        parse_json("[" * 100_000 + "]" * 100_000, "deep.json", LIMITS)
    with pytest.raises(DocumentError, match="deeper than 64 levels") as info:
        parse_json('{"a":\n' + "[" * 100 + "]" * 100 + "}", "deep.json", LIMITS, positions=True)
    assert info.value.line == 2
    with pytest.raises(DocumentError, match="longer than"):
        parse_json('{"a": "' + "x" * 200_000 + '"}', "long.json", LIMITS, positions=True)
    with pytest.raises(DocumentError, match="not valid JSON"):
        parse_json('{"a": ' + "9" * 5000 + "}", "int.json", LIMITS)


def test_json_positions() -> None:
    doc = parse_json('{"a": 1,\n "b": [\n  {"c": {}},\n  []],\n "d": {"e":\n 2}}', "p.json", LIMITS, positions=True)
    assert doc.data == {"a": 1, "b": [{"c": {}}, []], "d": {"e": 2}}
    assert doc.lines[("a",)] == 1 and doc.lines[("b", 0)] == 3 and doc.lines[("b", 0, "c")] == 3
    assert doc.lines[("b", 1)] == 4 and doc.lines[("d", "e")] == 5


def test_toml_errors_and_positions_best_effort() -> None:
    with pytest.raises(DocumentError) as info:
        parse_toml('a = 1\nb = "x"\nc = \n', "bad.toml", LIMITS)
    assert info.value.line == 3 and "not valid TOML" in str(info.value)
    doc = parse_toml('a = 1\n[b]\nc = "x"\n[[d]]\ne = 1\n[[d]]\ne = 2\n', "p.toml", LIMITS, positions=True)
    assert doc.data == {"a": 1, "b": {"c": "x"}, "d": [{"e": 1}, {"e": 2}]}
    assert doc.lines[("b", "c")] == 3 and doc.lines[("d", 1, "e")] == 7


MALFORMED_SPECS = {
    "dup.yaml": "openapi: 3.0.0\ninfo: {title: t, version: '1'}\npaths: {}\npaths: {}\n",
    "laughs.yaml": _laughs() + "openapi: 3.0.0\n",
    "deep.yaml": "openapi: 3.0.0\nx: " + "[" * 200_000 + "]" * 200_000 + "\n",
    "tag.yaml": "openapi: !!python/object/apply:os.system [echo pwned]\n",
    "utf8.yaml": "openapi: 3.0.0\ninfo: {title: \udcff}\n",
    "tabs.yaml": "openapi: 3.0.0\npaths:\n\t/a: {}\n",
    "cycle.yaml": "openapi: 3.0.0\npaths: &p {x: *p}\n",
    "dup.json": '{"openapi": "3.0.0",\n "openapi": "3.1.0"}',
    "deep.json": '{"openapi": "3.0.0", "x": ' + "[" * 200_000 + "]" * 200_000 + "}",
}
SCRIPT = """
import json, sys
from pathlib import Path
from scopegate.openapi.errors import SpecLoadError
from scopegate.openapi.loader import load_document
out = {}
for path in sorted(Path(sys.argv[1]).iterdir()):
    try:
        load_document(path)
        out[path.name] = "loaded"
    except SpecLoadError as exc:
        out[path.name] = str(exc)
print(json.dumps(out))
"""


def test_malformed_specs_raise_in_a_process_that_keeps_running(tmp_path: Path) -> None:
    """The old YAML path could take a server down (a parser built with panic=abort); this one raises."""
    for name, text in MALFORMED_SPECS.items():
        (tmp_path / name).write_bytes(text.encode("utf-8", "surrogateescape"))
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path)], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    results = json.loads(done.stdout)
    assert set(results) == set(MALFORMED_SPECS)
    for name, message in results.items():
        assert message.startswith(f"{name}:"), (name, message)
        assert message != "loaded"
    assert results["dup.yaml"].startswith("dup.yaml:4:1: duplicate key 'paths' (first at line 3)")
    assert results["dup.json"].startswith("dup.json:2: duplicate key 'openapi'")
    assert "not UTF-8" in results["utf8.yaml"] and results["utf8.yaml"].startswith("utf8.yaml:2:")


@pytest.mark.parametrize(("name", "text", "line", "fragment"), HOSTILE_YAML, ids=[c[0] for c in HOSTILE_YAML])
def test_hostile_yaml_without_libyaml(
    name: str, text: str | bytes, line: int, fragment: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PyYAML's pure-Python parser (no libyaml) gives the same refusals: nothing recurses, nothing crashes."""
    import yaml

    from scopegate import documents

    monkeypatch.setattr(documents, "_EventSource", yaml.SafeLoader)
    with pytest.raises(DocumentError) as info:
        parse_yaml(text, "hostile.yaml", LIMITS)
    assert info.value.line is not None and info.value.source == "hostile.yaml"
