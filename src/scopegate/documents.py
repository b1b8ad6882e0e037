"""Read YAML, JSON and TOML documents safely: the one parser path for configs, token tables and API specs.

Every document is bounded and checked before anything else looks at it:

- size: at most ``Limits.max_bytes``, checked before parsing;
- text: strict UTF-8 (a leading BOM is dropped);
- YAML: safe construction only, JSON-compatible values (YAML 1.2 core schema: ``yes``/``no``/``on``
  and dates stay strings, ``012`` is twelve), every explicit tag other than the core ones
  (``!!python/object``, ``!!binary``, ``!!timestamp``, local tags) refused, duplicate keys
  refused (naming both lines), recursive aliases refused, alias expansion ("billion laughs"),
  nesting depth and scalar length bounded; libyaml's C parser when it is built, which has its
  own nesting limit and never recurses without one;
- JSON: duplicate keys refused, nesting bounded by the decoder's recursion guard; a config's
  JSON is also indexed (keys -> lines), which bounds its depth and scalars;
- TOML: the standard library parser; lines of keys and tables are found on a best-effort basis.

Any failure raises :class:`DocumentError` (a :class:`~scopegate.errors.ConfigError`) naming the
file and, whenever the parser knows it, the line and column. Nothing here can end the process:
there is no native extension without its own limits and no code path that aborts.
"""

from __future__ import annotations

import bisect
import contextlib
import gc
import json
import os
import re
import tomllib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from yaml.events import (
    AliasEvent,
    DocumentStartEvent,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
)
from yaml.reader import ReaderError

from scopegate.errors import (
    DocumentError as DocumentError,
)

KeyPath = tuple[str | int, ...]


@dataclass(frozen=True)
class Limits:
    """What a document may cost: bytes on disk, nesting, nodes after alias expansion, one scalar's length."""

    max_bytes: int
    max_depth: int
    max_nodes: int
    max_scalar_chars: int


@dataclass(frozen=True)
class Document:
    """Parsed data, where it came from, and (when asked for) the line of each key path."""

    data: Any
    source: str
    lines: Mapping[KeyPath, int] = field(default_factory=dict)

    def line_of(self, path: Sequence[str | int]) -> int | None:
        """Line of ``path``, or of its nearest ancestor the index knows; None when nothing is known."""
        parts = tuple(path)
        while parts:
            line = self.lines.get(parts)
            if line is not None:
                return line
            parts = parts[:-1]
        return None


# -- files and text -----------------------------------------------------------------------
def read_bytes(path: str | os.PathLike[str], limits: Limits, *, what: str = "file", name: str | None = None) -> bytes:
    """The bytes of ``path``, refusing files over ``limits.max_bytes`` before reading them."""
    p = Path(path)
    source = name or str(p)
    try:
        size = p.stat().st_size
        if size > limits.max_bytes:
            raise DocumentError(source, f"{what} is larger than {limits.max_bytes} bytes")
        with p.open("rb") as handle:
            data = handle.read(limits.max_bytes + 1)
    except OSError as exc:
        raise DocumentError(source, f"cannot read {what}: {exc.strerror or exc}") from None
    if len(data) > limits.max_bytes:  # grew while we read it
        raise DocumentError(source, f"{what} is larger than {limits.max_bytes} bytes")
    return data


def decode(data: str | bytes, source: str, limits: Limits) -> str:
    """Strict UTF-8 text within the size limit (a leading BOM is dropped)."""
    if len(data) > limits.max_bytes:
        raise DocumentError(source, f"document is larger than {limits.max_bytes} bytes")
    if isinstance(data, bytes):
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = data.count(b"\n", 0, exc.start) + 1
            column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
            raise DocumentError(source, f"not UTF-8 text (byte 0x{data[exc.start]:02x})", line, column) from None
    else:
        text = data
        try:
            text.encode("utf-8")  # lone surrogates cannot reach a parser
        except UnicodeEncodeError as exc:
            line = text.count("\n", 0, exc.start) + 1
            raise DocumentError(source, "not UTF-8 text (a lone surrogate)", line) from None
    return text[1:] if text.startswith("\ufeff") else text


@contextlib.contextmanager
def _no_gc() -> Iterator[None]:
    """Pause the cyclic GC while a parser allocates many long-lived objects (halves YAML load time)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


# -- YAML ---------------------------------------------------------------------------------
# Built straight from libyaml's event stream: no node graph, no PyYAML constructor, so every check
# (depth, alias expansion, duplicate keys, tags, scalar length) happens once, in one pass, with the
# line at hand. About twice as fast as CSafeLoader on the OpenAI spec (bench/results/yaml.md).
# Only the parser part of the loader is used (events). libyaml's stops at 1000 nesting levels by
# itself; PyYAML's Python parser is a state machine, so neither recurses on deep input.
_EventSource: type[yaml.SafeLoader] | type[yaml.CSafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
C_PARSER = _EventSource is not yaml.SafeLoader

_CORE = "tag:yaml.org,2002:"
_MERGE = object()
_INT = re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$")
_FLOAT = re.compile(
    r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
)
_BOOLS = {"true": True, "True": True, "TRUE": True, "false": False, "False": False, "FALSE": False}
_NULLS = frozenset({"~", "null", "Null", "NULL", ""})
_NUMBER_START = frozenset("-+.0123456789")


def _int(text: str) -> int:
    if text.startswith("0o"):
        return int(text[2:], 8)
    if text.startswith("0x"):
        return int(text[2:], 16)
    return int(text, 10)


def _float(text: str) -> float:
    lowered = text.lower()
    if lowered.endswith(".inf"):
        return float(lowered.replace(".", ""))
    return float("nan") if lowered == ".nan" else float(text)


def _plain(text: str) -> Any:
    """A plain scalar under the YAML 1.2 core schema (yes/no/on/off and dates stay strings)."""
    if text in _NULLS:
        return None
    flag = _BOOLS.get(text)
    if flag is not None:
        return flag
    if text[0] in _NUMBER_START:
        if _INT.match(text):
            return _int(text)
        if _FLOAT.match(text):
            return _float(text)
    return text


def _tagged(tag: str, text: str) -> Any:
    """A scalar with an explicit core tag (``!!str 012``); ValueError when it does not fit the tag."""
    if tag == _CORE + "str":
        return text
    if tag == _CORE + "int" and _INT.match(text):
        return _int(text)
    if tag == _CORE + "float" and (_FLOAT.match(text) or _INT.match(text)):
        return _float(text)
    if tag == _CORE + "bool" and text in _BOOLS:
        return _BOOLS[text]
    if tag == _CORE + "null" and text in _NULLS:
        return None
    raise ValueError


class _Frame:
    """An open mapping or sequence while its events arrive."""

    __slots__ = ("anchor", "deepest", "has_key", "key", "merges", "path", "start", "value")

    def __init__(self, value: dict[Any, Any] | list[Any], anchor: str | None, start: int, path: KeyPath) -> None:
        self.value = value
        self.anchor = anchor
        self.start = start  # nodes counted before this one
        self.path = path
        self.deepest = 0  # levels of containers below this one
        self.key: Any = None
        self.has_key = False
        self.merges: list[Any] = []


def _merge(frame: _Frame) -> None:
    """``<<: *base`` (or a list of them): keys given explicitly win, then earlier merged maps."""
    assert isinstance(frame.value, dict)
    for merged in frame.merges:
        for part in merged if isinstance(merged, list) else [merged]:
            for key, value in part.items():
                frame.value.setdefault(key, value)


def _build_yaml(text: str, source: str, limits: Limits, positions: bool) -> Document:
    lines: dict[KeyPath, int] = {}
    anchors: dict[str, tuple[Any, int, int] | None] = {}  # name -> (value, nodes, depth); None while open
    stack: list[_Frame] = []
    root: Any = None
    documents = 0
    total = 0  # nodes so far, counting every alias expansion

    def fail(problem: str, mark: Any) -> DocumentError:
        return DocumentError(source, problem, mark.line + 1, mark.column + 1)

    def place(value: Any, size: int, depth: int, event: Any) -> None:
        """Put a finished value (scalar, alias target, closed collection) into the open collection."""
        nonlocal root
        if not stack:
            root = value
            return
        frame = stack[-1]
        if depth > frame.deepest:
            frame.deepest = depth
        if not isinstance(frame.value, dict):
            frame.value.append(value)
        elif not frame.has_key:
            if isinstance(value, dict | list):
                raise fail("a mapping key must be a scalar", event.start_mark)
            merge = value == "<<" and type(event) is ScalarEvent and event.implicit[0]
            if not merge and value in frame.value:
                raise fail(f"duplicate key {value!r}" + _first_at(frame, value), event.start_mark)
            frame.key, frame.has_key = (_MERGE if merge else value), True
            if positions and not merge:
                lines[(*frame.path, value)] = event.start_mark.line + 1
        else:
            if frame.key is _MERGE:
                parts = value if isinstance(value, list) else [value]
                if not all(isinstance(p, dict) for p in parts):
                    raise fail("'<<' merges a mapping or a list of mappings", event.start_mark)
                frame.merges.append(value)
            else:
                frame.value[frame.key] = value
            frame.has_key = False

    def _first_at(frame: _Frame, key: Any) -> str:
        line = lines.get((*frame.path, key))
        return f" (first at line {line})" if line is not None else ""

    def child_path(event: Any) -> KeyPath:
        """The key path of a value that starts now (and note the line of a sequence item)."""
        if not stack:
            return ()
        frame = stack[-1]
        if isinstance(frame.value, list):
            path = (*frame.path, len(frame.value))
            lines[path] = event.start_mark.line + 1
            return path
        return (*frame.path, frame.key) if frame.has_key else frame.path

    events: Iterator[Any] = yaml.parse(text, Loader=_EventSource)
    for event in events:
        kind = type(event)
        if kind is ScalarEvent:
            total += 1
            if len(event.value) > limits.max_scalar_chars:
                raise fail(f"a scalar is longer than {limits.max_scalar_chars} characters", event.start_mark)
            if positions:
                child_path(event)
            if event.implicit[0]:
                try:
                    value = _plain(event.value)
                except ValueError:  # an integer of more than 4300 digits
                    raise fail(f"number {event.value[:40]!r}... is too long", event.start_mark) from None
            elif event.tag in (None, "!") or event.implicit[1]:
                value = event.value
            else:
                try:
                    value = _tagged(event.tag, event.value)
                except ValueError:
                    raise fail(_refused(event.tag, event.value), event.start_mark) from None
            if event.anchor is not None:
                anchors[event.anchor] = (value, 1, 0)
            place(value, 1, 0, event)
        elif kind is MappingStartEvent or kind is SequenceStartEvent:
            if event.tag not in (None, "!", _CORE + ("map" if kind is MappingStartEvent else "seq")):
                raise fail(_refused(event.tag, None), event.start_mark)
            if stack and isinstance(stack[-1].value, dict) and not stack[-1].has_key:
                raise fail("a mapping key must be a scalar", event.start_mark)
            if len(stack) >= limits.max_depth:
                raise fail(f"nested deeper than {limits.max_depth} levels", event.start_mark)
            path = child_path(event) if positions else ()
            stack.append(_Frame({} if kind is MappingStartEvent else [], event.anchor, total, path))
            total += 1
            if event.anchor is not None:
                anchors[event.anchor] = None
        elif kind is MappingEndEvent or kind is SequenceEndEvent:
            frame = stack.pop()
            if frame.merges:
                _merge(frame)
            size, depth = total - frame.start, frame.deepest + 1
            if frame.anchor is not None:
                anchors[frame.anchor] = (frame.value, size, depth)
            place(frame.value, size, depth, event)
        elif kind is AliasEvent:
            if event.anchor not in anchors:
                raise fail(f"unknown alias {event.anchor!r}", event.start_mark)
            target = anchors[event.anchor]
            if target is None:
                raise fail(f"alias {event.anchor!r} refers to a node that contains it", event.start_mark)
            value, size, depth = target
            total += size
            if len(stack) + depth > limits.max_depth:
                raise fail(f"nested deeper than {limits.max_depth} levels", event.start_mark)
            if positions:
                child_path(event)
            place(value, size, depth, event)
        elif kind is DocumentStartEvent:
            documents += 1
            if documents > 1:
                raise fail("expected a single document, found another one", event.start_mark)
        if total > limits.max_nodes:
            raise fail(f"aliases expand the document past {limits.max_nodes} nodes", event.start_mark)
    return Document(root, source, lines)


def _refused(tag: str, value: str | None) -> str:
    if tag.startswith(_CORE) and value is not None and tag[len(_CORE) :] in ("int", "float", "bool", "null"):
        return f"{value[:40]!r} is not a valid !!{tag[len(_CORE) :]}"
    return f"tag {tag!r} is not allowed (only plain YAML data: mappings, sequences, strings, numbers, booleans)"


def _yaml_error(exc: yaml.YAMLError, text: str, source: str, label: str) -> DocumentError:
    if isinstance(exc, yaml.MarkedYAMLError) and exc.problem_mark is not None:
        mark = exc.problem_mark
        problem = exc.problem or type(exc).__name__
        if exc.context:
            problem = f"{problem} ({exc.context})"
        return DocumentError(source, f"not valid {label}: {problem}", mark.line + 1, mark.column + 1)
    if isinstance(exc, ReaderError):
        line = text.encode("utf-8")[: exc.position].count(b"\n") + 1
        return DocumentError(source, f"not valid {label}: {exc.reason}", line)
    return DocumentError(source, f"not valid {label}: {exc}")


def parse_yaml(
    text: str | bytes, source: str, limits: Limits, *, positions: bool = False, label: str = "YAML"
) -> Document:
    """One YAML document, checked and built (see the module docstring); ``positions`` indexes key lines."""
    body = decode(text, source, limits)
    try:
        with _no_gc():
            return _build_yaml(body, source, limits, positions)
    except yaml.YAMLError as exc:
        raise _yaml_error(exc, body, source, label) from None
    except DocumentError as exc:
        if positions or not exc.problem.startswith("duplicate key"):
            raise
        return _build_yaml(body, source, limits, True)  # again with lines, to name the first occurrence


# -- JSON ---------------------------------------------------------------------------------
_DUPLICATE = "duplicate key"


def _unique_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        raise DocumentError("", _DUPLICATE)  # located by _json_lines below
    return out


_JSON_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[{}\[\],:]|[^\s{}\[\],:"]+', re.S)


def _json_lines(text: str, source: str, limits: Limits) -> dict[KeyPath, int]:
    """Key path -> line, for text known to be JSON; refuses duplicate keys, deep nesting, long strings."""
    newlines = [m.start() for m in re.finditer("\n", text)]

    def line_at(offset: int) -> int:
        return bisect.bisect_left(newlines, offset) + 1

    lines: dict[KeyPath, int] = {}
    # One frame per open container: its path, and its keys so far (objects) or its next index (arrays).
    frames: list[tuple[KeyPath, dict[str, int] | None, list[int]]] = []
    pending: KeyPath = ()  # the path of the next value
    expect_key = False
    for match in _JSON_TOKEN.finditer(text):
        token, at = match.group(0), match.start()
        if token == ":":
            continue
        if token == ",":
            path, keys, index = frames[-1]
            if keys is None:
                index[0] += 1
                pending = (*path, index[0])
            else:
                expect_key = True
            continue
        if token in ("}", "]"):
            frames.pop()
            expect_key = False
            continue
        if token.startswith('"') and len(token) - 2 > limits.max_scalar_chars:
            raise DocumentError(source, f"a scalar is longer than {limits.max_scalar_chars} characters", line_at(at))
        if expect_key:
            path, keys, _ = frames[-1]
            name = json.loads(token)
            assert keys is not None
            if name in keys:
                raise DocumentError(source, f"duplicate key {name!r} (first at line {keys[name]})", line_at(at))
            keys[name] = lines[(*path, name)] = line_at(at)
            pending = (*path, name)
            expect_key = False
            continue
        if frames and frames[-1][1] is None:
            lines[pending] = line_at(at)  # an array item starts here
        if token in ("{", "["):
            if len(frames) >= limits.max_depth:
                raise DocumentError(source, f"nested deeper than {limits.max_depth} levels", line_at(at))
            frames.append((pending, {} if token == "{" else None, [0]))
            expect_key = token == "{"
            if token == "[":
                pending = (*pending, 0)
    return lines


def parse_json(
    text: str | bytes, source: str, limits: Limits, *, positions: bool = False, label: str = "JSON"
) -> Document:
    """One JSON document; duplicate keys refused with their line. ``positions`` indexes key lines."""
    body = decode(text, source, limits)
    data = _load_json(body, source, limits, label)
    return Document(data, source, _json_lines(body, source, limits) if positions else {})


def _load_json(body: str, source: str, limits: Limits, label: str) -> Any:
    try:
        with _no_gc():
            return json.loads(body, object_pairs_hook=_unique_object)
    except DocumentError:
        _json_lines(body, source, limits)  # raises, naming the line of the duplicate
        raise DocumentError(source, _DUPLICATE) from None  # pragma: no cover - _json_lines raised
    except json.JSONDecodeError as exc:
        raise DocumentError(source, f"not valid {label}: {exc.msg}", exc.lineno, exc.colno) from None
    except ValueError as exc:  # e.g. an integer of more than 4300 digits
        raise DocumentError(source, f"not valid {label}: {str(exc)[:200]}") from None
    except RecursionError:
        raise DocumentError(source, "nested too deeply") from None


# -- TOML ---------------------------------------------------------------------------------
_TOML_AT = re.compile(r"at line (\d+), column (\d+)")
_TOML_TABLE = re.compile(r"^\s*(\[\[?)\s*([^\]]+?)\s*\]\]?\s*(?:#.*)?$")
_TOML_KEY = re.compile(
    r"""^\s*((?:[A-Za-z0-9_-]+|"[^"]*"|'[^']*')(?:\s*\.\s*(?:[A-Za-z0-9_-]+|"[^"]*"|'[^']*'))*)\s*="""
)
_TOML_PART = re.compile(r"""[A-Za-z0-9_-]+|"[^"]*"|'[^']*'""")


def _toml_parts(text: str) -> list[str]:
    return [p.strip("\"'") for p in _TOML_PART.findall(text)]


def _toml_lines(text: str) -> dict[KeyPath, int]:
    """Best effort: table headers and ``key =`` lines (not keys inside inline tables or arrays)."""
    lines: dict[KeyPath, int] = {}
    table: KeyPath = ()
    counts: dict[KeyPath, int] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        header = _TOML_TABLE.match(raw)
        if header:
            base = tuple(_toml_parts(header.group(2)))
            if header.group(1) == "[[":
                index = counts.get(base, -1) + 1
                counts[base] = index
                table = (*base, index)
            else:
                table = base
            lines.setdefault(table, number)
            continue
        key = _TOML_KEY.match(raw)
        if key:
            lines.setdefault((*table, *_toml_parts(key.group(1))), number)
    return lines


def parse_toml(text: str | bytes, source: str, limits: Limits, *, positions: bool = False) -> Document:
    body = decode(text, source, limits)
    try:
        data = tomllib.loads(body)
    except tomllib.TOMLDecodeError as exc:
        at = _TOML_AT.search(str(exc))
        line, column = (int(at.group(1)), int(at.group(2))) if at else (None, None)
        raise DocumentError(
            source, f"not valid TOML: {_TOML_AT.sub('', str(exc)).strip(' ()')}", line, column
        ) from None
    except RecursionError:
        raise DocumentError(source, "nested too deeply") from None
    return Document(data, source, _toml_lines(body) if positions else {})


FORMATS = {".yaml": "yaml", ".yml": "yaml", ".json": "json", ".toml": "toml"}


def format_of(path: str | os.PathLike[str], *, what: str = "file") -> str:
    """``yaml``, ``json`` or ``toml`` from the file name; DocumentError for anything else."""
    suffix = Path(path).suffix.lower()
    if suffix not in FORMATS:
        raise DocumentError(str(path), f"unknown {what} format {suffix!r} (use .yaml, .yml, .toml or .json)")
    return FORMATS[suffix]


def parse(text: str | bytes, fmt: str, source: str, limits: Limits, *, positions: bool = False) -> Document:
    """Parse ``text`` as ``yaml``, ``json`` or ``toml``."""
    if fmt == "json":
        return parse_json(text, source, limits, positions=positions)
    if fmt == "toml":
        return parse_toml(text, source, limits, positions=positions)
    return parse_yaml(text, source, limits, positions=positions)


def read_document(
    path: str | os.PathLike[str], limits: Limits, *, what: str = "file", positions: bool = False
) -> Document:
    """Read and parse one file, its format chosen by its suffix."""
    fmt = format_of(path, what=what)
    return parse(read_bytes(path, limits, what=what), fmt, str(path), limits, positions=positions)


# Config files and spec files (what `scopegate serve`, `check` and `ingest --spec` read).
CONFIG_LIMITS = Limits(max_bytes=4_000_000, max_depth=64, max_nodes=200_000, max_scalar_chars=100_000)


def read_config_document(path: str | os.PathLike[str]) -> Document:
    """A config or spec file, parsed, with the line of every key."""
    return read_document(path, CONFIG_LIMITS, what="config", positions=True)
