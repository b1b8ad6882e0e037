"""The search tool surface, declared once.

A :class:`SearchSpec` is the single source for what the model sees (the JSON
schema), for argument validation, for the engine mapping and for the shaper.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from scopegate.errors import ConfigError
from scopegate.scope import ScopeKeys

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
_FIELD = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]{0,127}$")
RESERVED_ARGUMENTS = frozenset({"query", "page"})


@dataclass(frozen=True)
class TextField:
    """A full-text field and its boost, e.g. ``TextField("subject", 3.0)``."""

    name: str
    boost: float = 1.0

    @classmethod
    def parse(cls, text: str) -> TextField:
        """Parse ``"subject^3"`` or ``"body"``."""
        name, _, boost = text.partition("^")
        try:
            value = float(boost) if boost else 1.0
        except ValueError as exc:
            raise ConfigError(f"bad boost in text field {text!r}") from exc
        return cls(name.strip(), value)


@dataclass(frozen=True)
class KeywordFilter:
    """An enumerated filter the model may set, evaluated inside the engine."""

    name: str
    allowed: tuple[str, ...]
    description: str = ""


@dataclass(frozen=True)
class SearchSpec:
    """Everything that defines one search tool and its fetch-by-id companion."""

    name: str
    description: str
    text_fields: tuple[TextField, ...]
    filters: tuple[KeywordFilter, ...] = ()
    index: str = "tickets"
    id_field: str = "ticket_id"
    tenant_field: str = "tenant_id"
    group_field: str | None = None
    # Stored keyword fields returned per hit (e.g. status) besides the filters.
    keyword_fields: tuple[str, ...] = ()
    # Fields shown per hit, in order, besides the id and the snippet.
    result_fields: tuple[str, ...] = ("subject", "status")
    snippet_field: str = "body"
    page_size: int = 5
    max_page: int = 4
    snippet_chars: int = 400
    min_query_chars: int = 1
    max_query_chars: int = 200
    hits_char_budget: int = 2500
    result_field_chars: int = 200
    next_page_horizon: int = 20
    many_hits_threshold: int = 50
    track_total_up_to: int = 10_000
    engine_timeout_s: float = 1.0
    client_timeout_s: float = 2.5
    query_description: str = "Keywords to search for: words, error messages or error codes. Plain words only."
    page_description: str = "Result page, starting at 1."
    fetch_name: str = "get_ticket"
    fetch_description: str = "Fetch one ticket by its id, as returned by the search tool."
    fetch_body_chars: int = 8000
    scope_keys: ScopeKeys = field(default_factory=ScopeKeys)

    def __post_init__(self) -> None:
        for tool_name in (self.name, self.fetch_name):
            if not _NAME.match(tool_name):
                raise ConfigError(f"tool name {tool_name!r} must be letters, digits, underscores, at most 64")
        if self.name == self.fetch_name:
            raise ConfigError("search and fetch tools need different names")
        if not self.text_fields:
            raise ConfigError("a search spec needs at least one text field")
        names = [self.id_field, self.tenant_field, *self.all_keyword_fields(), *(t.name for t in self.text_fields)]
        if self.group_field:
            names.append(self.group_field)
        for name in names:
            if not _FIELD.match(name):
                raise ConfigError(f"field name {name!r} is not allowed")
        if len(set(names)) != len(names):
            raise ConfigError(f"field names must be distinct: {names}")
        for f in self.filters:
            if f.name in RESERVED_ARGUMENTS:
                raise ConfigError(f"filter name {f.name!r} clashes with a tool argument")
            if not f.allowed or any(not isinstance(v, str) or not v for v in f.allowed):
                raise ConfigError(f"filter {f.name!r} needs a non-empty list of non-empty values")
        if self.snippet_field not in {t.name for t in self.text_fields}:
            raise ConfigError(f"snippet field {self.snippet_field!r} must be a text field")
        for name in self.result_fields:
            if name not in self.stored_fields():
                raise ConfigError(f"result field {name!r} is not a field of the spec")
        for label, value, low in (
            ("page_size", self.page_size, 1),
            ("max_page", self.max_page, 1),
            ("snippet_chars", self.snippet_chars, 40),
            ("min_query_chars", self.min_query_chars, 1),
            ("hits_char_budget", self.hits_char_budget, 200),
        ):
            if value < low:
                raise ConfigError(f"{label} must be at least {low}")
        if self.max_query_chars < self.min_query_chars:
            raise ConfigError("max_query_chars must be >= min_query_chars")
        if not 0 < self.engine_timeout_s <= self.client_timeout_s:
            raise ConfigError("need 0 < engine_timeout_s <= client_timeout_s")

    # -- fields ---------------------------------------------------------
    def all_keyword_fields(self) -> tuple[str, ...]:
        seen: dict[str, None] = {}
        for name in (*(f.name for f in self.filters), *self.keyword_fields):
            seen.setdefault(name, None)
        return tuple(seen)

    def text_field_names(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.text_fields)

    def stored_fields(self) -> tuple[str, ...]:
        """Every field a backend stores and may return."""
        out = [self.id_field, self.tenant_field]
        if self.group_field:
            out.append(self.group_field)
        out += [*self.all_keyword_fields(), *self.text_field_names()]
        return tuple(out)

    def hit_source_fields(self) -> tuple[str, ...]:
        """The fields the shaper needs for a hit (``_source`` filtering)."""
        seen: dict[str, None] = {self.id_field: None}
        for name in (*self.result_fields, self.snippet_field):
            seen.setdefault(name, None)
        return tuple(seen)

    def filter_named(self, name: str) -> KeywordFilter | None:
        for f in self.filters:
            if f.name == name:
                return f
        return None

    # -- what the model sees --------------------------------------------
    def argument_names(self) -> tuple[str, ...]:
        return ("query", *(f.name for f in self.filters), "page")

    def json_schema(self) -> dict[str, Any]:
        """The parameters schema of the search tool: query, filters, page. Nothing else."""
        props: dict[str, Any] = {
            "query": {
                "type": "string",
                "description": self.query_description,
                "minLength": self.min_query_chars,
                "maxLength": self.max_query_chars,
            }
        }
        for f in self.filters:
            props[f.name] = {
                "type": "string",
                "enum": list(f.allowed),
                "description": f.description or f"Only return results whose {f.name} is this value.",
            }
        props["page"] = {
            "type": "integer",
            "description": self.page_description,
            "minimum": 1,
            "maximum": self.max_page,
            "default": 1,
        }
        return {"type": "object", "properties": props, "required": ["query"], "additionalProperties": False}

    def fetch_json_schema(self) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {
                "id": {
                    "type": "string",
                    "description": f"The {self.id_field} of the document, exactly as a search result showed it.",
                    "minLength": 1,
                    "maxLength": 256,
                }
            },
            "required": ["id"],
            "additionalProperties": False,
        }


# -- (de)serialisation: config files and the spec.json stored beside an embedded index ---------
def spec_to_dict(spec: SearchSpec) -> dict[str, Any]:
    """A JSON-able dict that :func:`spec_from_dict` turns back into an equal spec."""
    out: dict[str, Any] = {}
    for name in SearchSpec.__dataclass_fields__:
        value = getattr(spec, name)
        if name == "text_fields":
            value = [f"{t.name}^{t.boost:g}" if t.boost != 1.0 else t.name for t in value]
        elif name == "filters":
            value = [{"name": f.name, "allowed": list(f.allowed), "description": f.description} for f in value]
        elif name == "scope_keys":
            value = {"tenant": value.tenant, "groups": value.groups, "user": value.user}
        elif isinstance(value, tuple):
            value = list(value)
        out[name] = value
    return out


def spec_from_dict(data: dict[str, Any]) -> SearchSpec:
    known = set(SearchSpec.__dataclass_fields__)
    unknown = sorted(set(data) - known)
    if unknown:
        raise ConfigError(f"unknown search spec keys: {', '.join(unknown)}")
    kwargs: dict[str, Any] = {}
    for key, value in data.items():
        if key == "text_fields":
            value = tuple(TextField.parse(v) if isinstance(v, str) else TextField(**v) for v in value)
        elif key == "filters":
            value = tuple(KeywordFilter(f["name"], tuple(f["allowed"]), f.get("description", "")) for f in value)
        elif key == "scope_keys":
            value = ScopeKeys(**value)
        elif isinstance(value, list):
            value = tuple(value)
        kwargs[key] = value
    try:
        return SearchSpec(**kwargs)
    except TypeError as exc:
        raise ConfigError(f"bad search spec: {exc}") from exc
