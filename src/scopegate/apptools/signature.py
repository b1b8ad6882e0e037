"""A typed Python function -> the arguments model, and the declaration the model sees. Pure.

The parameters of the function (type hints, ``Annotated[..., Field(...)]`` bounds, defaults,
or one pydantic model) become a pydantic model that validates the model's arguments; its JSON
Schema, with ``$ref`` s inlined and reduced to the subset function-calling models accept (the
OpenAPI translator's :class:`~scopegate.openapi.simplify.Simplifier`), is the declaration.
The parameter annotated :class:`~scopegate.apptools.context.AppContext` is scopegate's, never
the model's: it carries the caller's scope, credential and sibling tools.

A parameter (or any property of a nested model, aliases included) named like a scope key is
refused when the tool is defined: tenant, user and group ids come from session state only.
"""

from __future__ import annotations

import inspect
import json
import re
import typing
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from scopegate.errors import ConfigError
from scopegate.openapi.simplify import Simplifier, SimplifyOptions, bound_text
from scopegate.scope import Scope, ScopeKeys
from scopegate.search.spec import NAME_PATTERN

MAX_DESCRIPTION_CHARS = 1000
MAX_DECLARATION_CHARS = 16_000
# Names a model could mistake for (or use to try) setting the caller's scope.
SCOPE_LIKE = frozenset({"tenant", "tenantid", "userid", "groupid", "groupids", "groups", "scope", "orgid"})
_SECTION = re.compile(r"^([A-Z][A-Za-z ]*):\s*$")
_ARG_LINE = re.compile(r"^\s+([A-Za-z_][A-Za-z0-9_]*)\s*(\([^)]*\))?\s*:\s*(.*)$")


def squash(name: str) -> str:
    """``Tenant-ID`` -> ``tenantid``: how names are compared with scope keys."""
    return re.sub(r"[^a-z0-9]", "", name.lower())


def scope_names(keys: ScopeKeys) -> frozenset[str]:
    """Every squashed name a tool argument may not have under ``keys``."""
    configured = {squash(k) for k in (keys.tenant, keys.user, keys.groups) if k}
    return SCOPE_LIKE | configured


@dataclass(frozen=True)
class Docs:
    summary: str
    arguments: Mapping[str, str]


def parse_docstring(doc: str | None) -> Docs:
    """The summary (text before the first section) and per-argument descriptions (Google style ``Args:``)."""
    summary: list[str] = []
    args: dict[str, str] = {}
    section = "summary"
    current: str | None = None
    indent: int | None = None
    for line in inspect.cleandoc(doc or "").splitlines():
        header = _SECTION.match(line)
        if header:
            section = "args" if header.group(1) in ("Args", "Arguments", "Parameters") else "other"
            current, indent = None, None
            continue
        if section == "summary":
            summary.append(line)
        elif section == "args" and line.strip():
            depth = len(line) - len(line.lstrip())
            match = _ARG_LINE.match(line)
            if match and (indent is None or depth == indent):
                indent, current = depth, match.group(1)
                args[current] = match.group(3).strip()
            elif current is not None:
                args[current] = f"{args[current]} {line.strip()}".strip()
    return Docs(" ".join(" ".join(summary).split()), args)


def _inline(schema: Any, defs: Mapping[str, Any], stack: tuple[str, ...] = ()) -> Any:
    """``$ref`` s replaced by their definitions; a recursive reference becomes a plain object."""
    if isinstance(schema, list):
        return [_inline(item, defs, stack) for item in schema]
    if not isinstance(schema, dict):
        return schema
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        name = ref.removeprefix("#/$defs/")
        if name in stack or name not in defs:
            return {"type": "object"}
        merged = {**defs[name], **{k: v for k, v in schema.items() if k != "$ref"}}
        return _inline(merged, defs, (*stack, name))
    return {k: _inline(v, defs, stack) for k, v in schema.items() if k not in ("$defs", "title")}


def property_names(schema: Any) -> Iterator[str]:
    """Every property name anywhere in a JSON schema (nested objects, arrays, unions)."""
    if isinstance(schema, list):
        for item in schema:
            yield from property_names(item)
    elif isinstance(schema, dict):
        props = schema.get("properties")
        if isinstance(props, dict):
            yield from (str(k) for k in props)
        for key, value in schema.items():
            if key != "enum":
                yield from property_names(value)


def _is_context(annotation: Any) -> bool:
    from scopegate.apptools.context import AppContext

    return isinstance(annotation, type) and issubclass(annotation, AppContext)


@dataclass(frozen=True)
class Signature:
    """What scopegate learned from a function: how to call it and what the model may send."""

    context_param: str | None
    arguments: type[BaseModel]
    single_model: str | None  # the parameter holding the whole arguments model, if the function takes one
    argument_names: frozenset[str]  # what the model may send (aliases included)
    schema: dict[str, Any]
    summary: str
    is_async: bool

    def validate(self, args: Mapping[str, Any]) -> BaseModel:
        """Raises :class:`pydantic.ValidationError` (the tool turns it into ``BAD_ARGUMENTS``)."""
        return self.arguments.model_validate(dict(args))

    def call_kwargs(self, validated: BaseModel) -> dict[str, Any]:
        if self.single_model is not None:
            return {self.single_model: validated}
        return {name: getattr(validated, name) for name in type(validated).model_fields}


def read_signature(fn: Callable[..., Any], *, tool: str) -> Signature:
    """The arguments model and declaration of ``fn``; raises :class:`ConfigError` for what cannot be served."""
    where = f"app tool {tool!r}"
    try:
        hints = typing.get_type_hints(fn, include_extras=True)
    except Exception as exc:
        raise ConfigError(f"{where}: cannot resolve the type hints of {fn.__qualname__}: {exc}") from exc
    docs = parse_docstring(fn.__doc__)
    context_param: str | None = None
    fields: dict[str, Any] = {}
    for param in inspect.signature(fn).parameters.values():
        if param.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            raise ConfigError(f"{where}: *args/**kwargs cannot be declared to a model; name every argument")
        if param.kind is inspect.Parameter.POSITIONAL_ONLY:
            raise ConfigError(f"{where}: positional-only parameter {param.name!r} cannot be passed by name")
        annotation = hints.get(param.name, inspect.Parameter.empty)
        if annotation is inspect.Parameter.empty:
            raise ConfigError(f"{where}: parameter {param.name!r} needs a type hint (the declaration comes from it)")
        if _is_context(annotation):
            if context_param is not None:
                raise ConfigError(f"{where}: only one parameter may take the AppContext")
            context_param = param.name
            continue
        if annotation is Scope or (isinstance(annotation, type) and issubclass(annotation, Scope)):
            raise ConfigError(f"{where}: {param.name!r} is a Scope: scope comes from ctx.scope, never from arguments")
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[param.name] = (annotation, default)
    single: str | None = None
    if len(fields) == 1:
        name, (annotation, _default) = next(iter(fields.items()))
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            single = name
    if single is not None:
        model: type[BaseModel] = fields[single][0]
    else:
        try:
            model = create_model(f"{tool}_arguments", __config__=ConfigDict(extra="forbid"), **fields)
        except Exception as exc:
            raise ConfigError(f"{where}: its parameters do not make an arguments model: {exc}") from exc
    try:
        raw = model.model_json_schema()
    except Exception as exc:
        raise ConfigError(f"{where}: no JSON Schema for its arguments: {exc}") from exc
    inlined = _inline(raw, raw.get("$defs") or {})
    props = inlined.get("properties") or {}
    for name, text in docs.arguments.items():
        if name in props and isinstance(props[name], dict) and not props[name].get("description"):
            props[name]["description"] = text
    schema = Simplifier(SimplifyOptions(max_description=300, request=True)).run(inlined)
    schema = {
        "type": "object",
        "properties": schema.get("properties", {}),
        **({"required": schema["required"]} if schema.get("required") else {}),
        "additionalProperties": False,
    }
    if len(json.dumps(schema)) > MAX_DECLARATION_CHARS:
        raise ConfigError(
            f"{where}: its declaration is over {MAX_DECLARATION_CHARS} characters; simplify the arguments"
        )
    names = frozenset(str(k) for k in (raw.get("properties") or {}))
    return Signature(
        context_param=context_param,
        arguments=model,
        single_model=single,
        argument_names=names,
        schema=schema,
        summary=bound_text(docs.summary, MAX_DESCRIPTION_CHARS),
        is_async=inspect.iscoroutinefunction(fn),
    )


def check_scope_names(signature: Signature, keys: ScopeKeys, *, tool: str) -> None:
    """Refuse any argument (or nested property) named like a scope key under ``keys``."""
    forbidden = scope_names(keys)
    raw = signature.arguments.model_json_schema()
    names = {*signature.argument_names, *property_names(raw)}
    clashing = sorted(n for n in names if squash(n) in forbidden)
    if clashing:
        raise ConfigError(
            f"app tool {tool!r}: argument(s) {', '.join(map(repr, clashing))} look like scope keys; the caller's "
            "tenant, user and groups come from session state (ctx.scope), never from the model. Rename them."
        )


def check_name(name: str) -> str:
    if not re.match(NAME_PATTERN, name):
        raise ConfigError(f"app tool name {name!r} must be letters, digits and underscores, at most 64")
    return name


def validation_problems(exc: ValidationError) -> list[dict[str, str]]:
    """pydantic's errors as ``[{"field", "problem"}]`` (no input values echoed)."""
    problems = []
    for error in exc.errors(include_input=False, include_url=False)[:20]:
        field = ".".join(str(p) for p in error.get("loc", ())) or "(arguments)"
        problems.append({"field": field[:128], "problem": str(error.get("msg", "invalid"))[:200]})
    return problems
