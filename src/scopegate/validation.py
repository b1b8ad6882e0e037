"""Typed models and their problems: one way to declare, validate and report, for specs and configs.

:func:`model` makes a frozen pydantic dataclass: the class is the single definition of its keys,
their types, bounds and descriptions; pydantic derives validation and the JSON Schema from it.
Building one from Python raises :class:`ConfigValidationError` (a :class:`ScopegateError`), never
pydantic's own exception. :func:`problems_of` turns pydantic's errors into :class:`Problem` s that
name the key path the way a config author reads it (``search_tools[0].filters[1].allowed``), say
what is allowed (with "did you mean" for unknown keys) and carry the line when the document knows it.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import types
import typing
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, TypeVar, Union, dataclass_transform, get_args, get_origin, overload

import pydantic
from pydantic import ConfigDict, Field, ValidationError
from pydantic.json_schema import GenerateJsonSchema, SkipJsonSchema

from scopegate.errors import (  # noqa: F401 - the two problem exceptions live in scopegate.errors, re-exported here
    MAX_PROBLEMS,
    ConfigError,
    ScopegateError,
)
from scopegate.errors import (
    ConfigValidationError as ConfigValidationError,
)
from scopegate.errors import (
    ProblemsFound as ProblemsFound,
)

KeyPath = tuple[str | int, ...]
MODEL_CONFIG = ConfigDict(extra="forbid", revalidate_instances="always")
_SKIP = typing.cast("type[Any]", SkipJsonSchema)  # the marker class of fields hidden from the schema
T = TypeVar("T")


def format_path(parts: Iterable[str | int]) -> str:
    """``["search_tools", 0, "filters"]`` -> ``search_tools[0].filters``; empty -> ``(top level)``."""
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out or "(top level)"


@dataclass(frozen=True)
class Problem:
    """One thing wrong: where (``a.b[0].c``, and the line when known) and what."""

    path: str
    message: str
    line: int | None = None
    key: KeyPath = field(default=(), compare=False, repr=False)

    @classmethod
    def at(cls, key: Sequence[str | int], message: str) -> Problem:
        return cls(format_path(key), message, key=tuple(key))

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


# -- the model decorator ---------------------------------------------------------------------
def _raise_problems(cls: type[T]) -> type[T]:
    init = cls.__init__

    @functools.wraps(init)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        try:
            init(self, *args, **kwargs)
        except ValidationError as exc:
            raise ConfigValidationError(cls.__name__, problems_of(exc, cls)) from None
        except ProblemsFound as exc:
            raise ConfigValidationError(cls.__name__, exc.problems) from None

    setattr(cls, "__init__", __init__)  # noqa: B010 - replacing the generated constructor
    return cls


@overload
def model(cls: type[T], /) -> type[T]: ...
@overload
def model(*, kw_only: bool = False) -> Callable[[type[T]], type[T]]: ...
@dataclass_transform(frozen_default=True, field_specifiers=(dataclasses.field, Field))
def model(cls: type[T] | None = None, /, *, kw_only: bool = False) -> type[T] | Callable[[type[T]], type[T]]:
    """A frozen pydantic dataclass that refuses unknown keys and raises :class:`ConfigValidationError`."""

    def make(target: type[T]) -> type[T]:
        built = pydantic.dataclasses.dataclass(frozen=True, kw_only=kw_only, config=MODEL_CONFIG)(target)
        return _raise_problems(typing.cast(type[T], built))

    return make if cls is None else make(cls)


class _NoFieldTitles(GenerateJsonSchema):
    """JSON Schema without the "Page Size" titles pydantic derives from field names."""

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False


def json_schema(tp: Any) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a model type, as an editor or a validator reads it."""
    return pydantic.TypeAdapter(tp).json_schema(schema_generator=_NoFieldTitles)


# -- where an error is, in the author's terms ----------------------------------------------------
def _strip(tp: Any) -> tuple[Any, tuple[Any, ...]]:
    """``Annotated[X, m...]`` -> (X, (m...)); ``X | None`` -> X."""
    meta: tuple[Any, ...] = ()
    while True:
        if get_origin(tp) is Annotated:
            tp, *extra = get_args(tp)
            meta += tuple(extra)
        elif get_origin(tp) in (Union, types.UnionType) and type(None) in get_args(tp):
            rest = [a for a in get_args(tp) if a is not type(None)]
            if len(rest) != 1:
                return tp, meta
            tp = rest[0]
        else:
            return tp, meta


def _fields(tp: Any) -> dict[str, tuple[Any, bool]] | None:
    """Field name -> (annotation with its constraints, shown in the schema), or None for non-dataclasses."""
    if not (isinstance(tp, type) and dataclasses.is_dataclass(tp)):
        return None
    pydantic_fields = getattr(tp, "__pydantic_fields__", None)
    if pydantic_fields is not None:
        return {
            name: (
                Annotated[info.annotation, *info.metadata] if info.metadata else info.annotation,
                not any(isinstance(m, _SKIP) for m in info.metadata),
            )
            for name, info in pydantic_fields.items()
        }
    hints = typing.get_type_hints(tp, include_extras=True)
    return {f.name: (hints[f.name], True) for f in dataclasses.fields(tp)}


def _literals(tp: Any) -> tuple[Any, ...]:
    base, _ = _strip(tp)
    return get_args(base) if get_origin(base) is Literal else ()


def _locate(root: Any, loc: Sequence[str | int]) -> tuple[list[str | int], Any]:
    """Pydantic's ``loc`` -> (the key path in the document, the type found there or None).

    Drops what pydantic adds that is not in the document: the tag of a discriminated union
    (``backends.local.embedded.path`` is ``backends.local.path``) and ``[key]`` markers.
    """
    path: list[str | int] = []
    tp: Any = root
    for part in loc:
        if part == "[key]":
            continue
        base, _ = _strip(tp) if tp is not None else (None, ())
        if get_origin(base) in (Union, types.UnionType):
            member = next((m for m in get_args(base) if part in _tag_values(m)), None)
            if member is not None:
                tp = member
                continue
            base = None
        fields = _fields(base)
        origin = get_origin(base)
        path.append(part)
        if fields is not None:
            tp = fields[part][0] if isinstance(part, str) and part in fields else None
        elif origin in (tuple, list, Sequence) and get_args(base):
            tp = get_args(base)[0]
        elif origin in (dict, Mapping) and len(get_args(base)) == 2:
            tp = get_args(base)[1]
        else:
            tp = None
    return path, tp


def _tag_values(member: Any) -> tuple[Any, ...]:
    fields = _fields(_strip(member)[0]) or {}
    return tuple(v for annotation, _ in fields.values() for v in _literals(annotation))


def _visible_keys(tp: Any) -> list[str]:
    fields = _fields(_strip(tp)[0]) if tp is not None else None
    return [name for name, (_, shown) in (fields or {}).items() if shown]


_TYPE_NAMES = {
    "int": "integer",
    "float": "number",
    "string": "string",
    "bool": "boolean",
    "list": "array",
    "tuple": "array",
    "dict": "object",
    "dataclass": "object",
    "model": "object",
    "path": "string",
}


def _range(tp: Any) -> str:
    """`` (allowed: 1..50)`` from the bounds declared on ``tp``, or ``""``."""
    _, meta = _strip(tp) if tp is not None else (None, ())
    low = high = None
    for m in meta:
        for item in getattr(m, "metadata", [m]):
            low = getattr(item, "ge", getattr(item, "gt", low))
            high = getattr(item, "le", getattr(item, "lt", high))
    if low is None and high is None:
        return ""
    return f" (allowed: {'' if low is None else low}..{'' if high is None else high})"


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _message(error: Mapping[str, Any], tp: Any) -> str:
    kind = str(error["type"])
    ctx: Mapping[str, Any] = error.get("ctx") or {}
    value = _short(error.get("input"))
    bounds = {
        "greater_than_equal": ("less than the minimum of", "ge"),
        "greater_than": ("less than or equal to the minimum of", "gt"),
        "less_than_equal": ("greater than the maximum of", "le"),
        "less_than": ("greater than or equal to the maximum of", "lt"),
    }
    if kind in bounds:
        words, key = bounds[kind]
        return f"{value} is {words} {ctx[key]}{_range(tp)}"
    family = kind.removesuffix("_type").removesuffix("_parsing").removesuffix("_from_float")
    if kind.endswith(("_type", "_parsing", "_from_float")) and family in _TYPE_NAMES:
        return f"{value} is not of type '{_TYPE_NAMES[family]}'"
    if kind == "string_pattern_mismatch":
        return f"{value} does not match {ctx['pattern']!r}"
    if kind in ("string_too_short", "too_short"):
        least = ctx.get("min_length", 1)
        return f"{value} should be non-empty" if least == 1 else f"{value} is too short (at least {least})"
    if kind in ("string_too_long", "too_long"):
        return f"{value} is too long (at most {ctx.get('max_length')})"
    if kind == "literal_error":
        allowed = _literals(tp)
        if len(allowed) == 1:
            return f"{allowed[0]!r} was expected"
        if allowed:
            return f"{value} is not one of {', '.join(repr(a) for a in allowed)}"
        return f"{value} is not one of {ctx.get('expected')}"
    if kind in ("value_error", "assertion_error") and "error" in ctx:
        return str(ctx["error"])
    return str(error["msg"])


def problems_of(exc: ValidationError, root: Any) -> list[Problem]:
    """Every problem in ``exc`` (raised validating ``root``), in the document's terms."""
    errors = [e for e in exc.errors() if e["type"] != "default_factory_not_called"]
    located = [(e, *_locate(root, e["loc"])) for e in errors]
    out: list[Problem] = []
    extras: dict[KeyPath, tuple[list[str], Any]] = {}
    for error, path, tp in located:
        kind = error["type"]
        if kind in ("extra_forbidden", "unexpected_keyword_argument"):
            container = _locate(root, error["loc"][:-1])[1]
            extras.setdefault(tuple(path[:-1]), ([], container))[0].append(str(path[-1]))
            continue
        if kind == "too_short" and any(
            len(other) > len(path) and other[: len(path)] == path for _, other, _ in located
        ):
            continue  # a list whose items failed is not also "too short"
        if kind == "missing":
            out.append(Problem.at(path[:-1], f"'{path[-1]}' is required"))
        elif kind in ("union_tag_invalid", "union_tag_not_found"):
            key = str(error.get("ctx", {}).get("discriminator", "type")).strip("'")
            if kind == "union_tag_not_found":
                out.append(Problem.at(path, f"'{key}' is required"))
            else:
                ctx = error["ctx"]
                expected = ", ".join(t.strip() for t in str(ctx["expected_tags"]).split(","))
                out.append(Problem.at([*path, key], f"{_short(ctx['tag'])} is not one of {expected}"))
        else:
            out.append(Problem.at(path, _message(error, tp)))
    for parent, (keys, container) in extras.items():
        allowed = _visible_keys(container)
        hints = []
        for key in sorted(keys):
            close = difflib.get_close_matches(key, allowed, n=1)
            hints.append(f"{key!r} (did you mean {close[0]!r}?)" if close else repr(key))
        problem = Problem.at(parent, f"unexpected key {', '.join(hints)}; allowed: {', '.join(sorted(allowed))}")
        out.append(dataclasses.replace(problem, key=(*parent, sorted(keys)[0])))
    return out


def with_lines(problems: Iterable[Problem], line_of: Callable[[KeyPath], int | None]) -> list[Problem]:
    """The same problems, each with the line of its key (or of the nearest enclosing key)."""
    return [dataclasses.replace(p, line=line_of(p.key)) if p.key and p.line is None else p for p in problems]
