"""The search tool surface, declared once.

A :class:`SearchSpec` is the single source for what the model sees (the JSON schema), for argument
validation, for the engine mapping and for the shaper. It is one typed model: its fields declare
the keys, types, bounds and descriptions; pydantic derives validation, (de)serialisation and the
JSON Schema from them. A config file's ``search_tools`` entry is the same fields plus ``backend``
and ``fetch`` (:class:`scopegate.config.model.SearchToolConfig` extends :class:`SpecFields`), and
the ``scopegate-spec.json`` stored beside an embedded index is :func:`to_stored` of it.

Library defaults are neutral (``id_field="id"``, the index named after the tool, the fetch tool
``get_<name without search_>``); the demo's :func:`scopegate.demo.corpus.ticket_spec` names its
ticket fields itself.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import (
    BeforeValidator,
    Field,
    PlainSerializer,
    Strict,
    TypeAdapter,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from scopegate.documents import Limits
from scopegate.errors import ConfigError
from scopegate.scope import ScopeKeys
from scopegate.validation import ConfigValidationError, model, problems_of

NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]{0,63}$"
FIELD_PATTERN = r"^[A-Za-z_][A-Za-z0-9_.]{0,127}$"
# Fields scopegate adds to an index (e.g. the embedded engine's tenant-qualified document key).
RESERVED_FIELD_PREFIX = "_scopegate"
INDEX_PATTERN = r"^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,254}$"
# An engine field path of an existing index: dotted object paths and multi-field sub-fields (meta.component.keyword).
ENGINE_PATH_PATTERN = r"^[A-Za-z_@][A-Za-z0-9_@.-]{0,254}$"
RESERVED_ARGUMENTS = frozenset({"query", "page"})
# The shaper's floors (see scopegate.search.shaper.shape_hits): a snippet is never cut below
# MIN_SNIPPET_CHARS; result fields may be cut to MIN_FIELD_CHARS; ids are never cut. A page must
# fit the hits budget at those floors with ids of up to ID_RESERVE_CHARS characters.
MIN_SNIPPET_CHARS = 40
MIN_FIELD_CHARS = 8
ID_RESERVE_CHARS = 24
MAX_PAGE_SIZE = 50
# field -> the field it may not be smaller than
_AT_LEAST = {"max_query_chars": "min_query_chars", "client_timeout_s": "engine_timeout_s"}

# -- relevance and retrieval (issue 14) ------------------------------------------------------------
FieldCombination = Literal["best_fields", "most_fields", "combined_fields"]
Retrieval = Literal["keyword", "vector", "hybrid"]
# managed: scopegate creates and fills <index>-v<N> behind the alias <index>-read; existing: a team's own index
# or alias, searched exactly as named and never written (see docs/use-your-existing-index.md).
IndexMode = Literal["managed", "existing"]
Fusion = Literal["rrf", "convex"]
# The indexed catch-all field behind ``combined_fields`` (BM25F with integer field weights) and
# the dense vector field of OpenSearch/Elasticsearch indices with vector or hybrid retrieval.
COMBINED_FIELD = "scopegate_all"
VECTOR_FIELD = "scopegate_vector"

ToolName = Annotated[str, Strict(), Field(pattern=NAME_PATTERN)]
EnginePath = Annotated[str, Strict(), Field(pattern=ENGINE_PATH_PATTERN)]
FieldName = Annotated[str, Strict(), Field(pattern=FIELD_PATTERN)]
Text = Annotated[str, Strict(), Field(max_length=4000)]


def _int(low: int, high: int, description: str) -> Any:
    return Field(ge=low, le=high, strict=True, description=f"{description}.")


def _seconds(high: float, description: str) -> Any:
    return Field(gt=0, le=high, description=f"{description}.")


@dataclass(frozen=True)
class TextField:
    """A full-text field and its boost, e.g. ``TextField("subject", 3.0)``; ``"subject^3"`` in files."""

    name: FieldName
    boost: Annotated[float, Field(gt=0, le=1000)] = 1.0

    @classmethod
    def parse(cls, text: str) -> TextField:
        """Parse ``"subject^3"`` or ``"body"``."""
        try:
            return _split_boost(text)
        except ValueError as exc:
            raise ConfigError(str(exc)) from None

    def __str__(self) -> str:
        return f"{self.name}^{self.boost:g}" if self.boost != 1.0 else self.name


def _split_boost(text: str) -> TextField:
    name, _, boost = text.partition("^")
    try:
        value = float(boost) if boost else 1.0
    except ValueError:
        raise ValueError(f"bad boost in text field {text!r} (write name or name^boost, e.g. subject^3)") from None
    return TextField(name.strip(), value)


def _text_field_input(value: Any) -> Any:
    return _split_boost(value) if isinstance(value, str) else value


TextFieldItem = Annotated[
    TextField,
    BeforeValidator(
        _text_field_input,
        json_schema_input_type=Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_.]{0,127}(\^[0-9]+(\.[0-9]+)?)?$")]
        | TextField,
    ),
    PlainSerializer(str, return_type=str),
]


@dataclass(frozen=True)
class KeywordFilter:
    """An enumerated filter the model may set, evaluated inside the engine."""

    name: ToolName
    allowed: Annotated[
        tuple[Annotated[str, Strict(), Field(min_length=1, max_length=256)], ...], Field(min_length=1, max_length=1000)
    ]
    description: Text = ""


def filter_description(f: KeywordFilter) -> str:
    """What the model reads for an optional filter. It says when to leave the filter out: small models
    otherwise set every enumerated filter (0.5B set status on 52 of 52 searches), and an unasked
    filter silently narrows the result."""
    own = (f.description or f"Only results whose {f.name} is this value.").rstrip()
    own = own if own.endswith((".", "!", "?")) else f"{own}."
    return f"{own} Optional: leave it out unless the user asks for a particular {f.name}."


def _fetch_name(data: Mapping[str, Any]) -> str:
    name = str(data["name"])
    return f"get_{name.removeprefix('search_') or name}"[:64]


@model
class SpecFields:
    """The keys of a search spec: what a config's ``search_tools`` entry holds besides backend and fetch."""

    name: Annotated[ToolName, Field(description="Tool name the model calls: letters, digits, underscores, <= 64.")]
    description: Annotated[Text, Field(description="What the tool searches, as the model reads it.")]
    text_fields: Annotated[
        tuple[TextFieldItem, ...],
        Field(min_length=1, max_length=16, description="Full-text fields, each `name` or `name^boost` (subject^3)."),
    ]
    filters: Annotated[tuple[KeywordFilter, ...], Field(max_length=16)] = Field(
        default=(), description="Enumerated filters the model may set (keyword fields)."
    )
    index: Annotated[str, Strict(), Field(pattern=INDEX_PATTERN)] = Field(
        default_factory=lambda data: str(data["name"]),
        description="Index name; default: the tool name. Embedded: the folder under the backend path. OpenSearch/"
        "Elasticsearch, index_mode managed: the base name (searched through the alias <index>-read); index_mode "
        "existing: the index or alias searched, exactly as named.",
    )
    id_field: FieldName = Field(default="id", description="Field holding each document's id.")
    tenant_field: FieldName = Field(default="tenant_id", description="Field holding each document's tenant.")
    group_field: FieldName | None = Field(
        default=None, description="Field holding the groups allowed to see a document (optional)."
    )
    date_field: FieldName | None = Field(
        default=None,
        description="A date field (RFC 3339) the aggregation tool may count by and limit to a time range (optional).",
    )
    keyword_fields: tuple[FieldName, ...] = Field(
        default=(), description="Stored keyword fields returned per hit, besides the filters."
    )
    result_fields: tuple[FieldName, ...] = Field(
        default=(), description="Fields shown per hit, in order, besides the id and the snippet."
    )
    snippet_field: FieldName = Field(default="body", description="The text field snippets are cut from.")
    snippet_chars: Annotated[int, _int(MIN_SNIPPET_CHARS, 4000, "Snippet length in characters")] = 400
    result_field_chars: Annotated[int, _int(1, 4000, "Longest value shown per result field")] = 200
    hits_char_budget: Annotated[int, _int(200, 200_000, "Characters all hits of a page may take")] = 2500
    page_size: Annotated[
        int, _int(1, MAX_PAGE_SIZE, "Hits per page; every hit must fit hits_char_budget at the shaper's floors")
    ] = 5
    max_page: Annotated[int, _int(1, 100, "Deepest page the model may ask for")] = 4
    min_query_chars: Annotated[int, _int(1, 4000, "Shortest query")] = 1
    max_query_chars: Annotated[int, _int(1, 4000, "Longest query")] = 200
    next_page_horizon: Annotated[int, _int(1, 10_000, "next_page is offered while page x size is below this")] = 20
    many_hits_threshold: Annotated[int, _int(1, 1_000_000, "Above this many matches, hint to narrow")] = 50
    track_total_up_to: Annotated[int, _int(1, 10_000_000, "Engines count matches exactly up to this")] = 10_000
    engine_timeout_s: Annotated[float, _seconds(60, "Time budget the engine gets per query, in seconds")] = 1.0
    client_timeout_s: Annotated[float, _seconds(120, "Time the client waits for the engine, in seconds")] = 2.5
    query_description: Text = "Keywords to search for. Plain words only."
    page_description: Text = "Result page, starting at 1."
    fetch_name: ToolName = Field(
        default_factory=_fetch_name,
        description="Name of the fetch-by-id tool; default: get_ and the tool name without search_.",
    )
    fetch_description: Text = "Fetch one document by its id, as returned by the search tool."
    fetch_body_chars: Annotated[int, _int(1, 200_000, "Longest snippet-field text a fetch returns")] = 8000
    # -- relevance and retrieval (issue 14); cross-field checks in _relevance_consistent ----------
    field_combination: FieldCombination = Field(
        default="combined_fields",
        description="How text fields combine: combined_fields (BM25F over one catch-all field; weights rounded "
        "to integers, changing one needs a re-ingest), best_fields (dis_max + tie_breaker) or most_fields (sum).",
    )
    tie_breaker: Annotated[float, Field(ge=0, le=1)] = Field(
        default=0.0,
        description="best_fields (and cross_fields, an existing OpenSearch index's combined_fields, where 0 means "
        "0.1): weight of the non-best fields' scores (0-1).",
    )
    retrieval: Retrieval = Field(
        default="keyword",
        description="keyword, vector (k-NN in scope) or hybrid (both, fused); needs the vector extra.",
    )
    fusion: Fusion = Field(default="convex", description="Hybrid fusion: convex (normalised scores) or rrf.")
    fusion_weight: Annotated[float, Field(ge=0, le=1)] = Field(
        default=0.4, description="Convex fusion: weight of the vector score (0.4 chosen on BEIR SciFact)."
    )
    rrf_k: Annotated[int, _int(1, 10_000, "RRF: the k in 1 / (k + rank)")] = 60
    retrieval_depth: Annotated[
        int,
        _int(1, 10_000, "Candidates per ranked list before fusion (at least the deepest page); bounds a vector total"),
    ] = 100
    embedder: Annotated[str, Strict(), Field(min_length=1, max_length=4000)] = Field(
        default="minilm-l6-int8",
        description="Encoder: minilm-l6-int8, or onnx:<model.onnx>|<tokenizer.json>[|mean|cls].",
    )
    embed_fields: tuple[FieldName, ...] = Field(
        default=(), description="Text fields embedded (newline-joined); default: every text field."
    )
    # -- an index scopegate did not build (issue 35) -------------------------------------------------
    index_mode: IndexMode = Field(
        default="managed",
        description="managed: scopegate creates and fills <index>-v<N> behind the alias <index>-read (OpenSearch/"
        "Elasticsearch). existing: search the index or alias `index` exactly as named, read-only (never created, "
        "written or re-mapped); the text query runs over the text fields with the index's own analyzers.",
    )
    snippets: Literal["engine", "local"] = Field(
        default="engine",
        description="existing index: where snippets are cut. engine: the engine's highlighter (one fragment around "
        "the best match, with the index's analysis; the snippet field stays out of _source); local: the whole "
        "snippet field is fetched and cut by scopegate (faster on a local node, ~100x the bytes for long texts).",
    )
    field_paths: Mapping[FieldName, EnginePath] = Field(
        default_factory=dict,
        description="existing index: the engine field path behind a field name of this spec (id, tenant, groups, "
        "filters, result and text fields), e.g. component: meta.component or status: status.keyword (a keyword "
        "sub-field); a name not listed is its own path.",
    )

    # -- checks that need several fields -------------------------------------------------------
    @field_validator("text_fields", mode="before")
    @classmethod
    def _some_text_field(cls, value: Any) -> Any:
        if isinstance(value, list | tuple) and not value:
            raise ValueError("a search spec needs at least one text field")
        return value

    @field_validator("page_size")
    @classmethod
    def _page_fits_budget(cls, value: int, info: ValidationInfo) -> int:
        data = info.data
        if not {"id_field", "result_fields", "hits_char_budget"} <= data.keys():
            return value  # those failed already
        per_hit = min_hit_chars(data["id_field"], data["result_fields"])
        most = min(MAX_PAGE_SIZE, data["hits_char_budget"] // per_hit)
        if value > most:
            raise ValueError(
                f"page_size {value} is out of range: at most {most} with hits_char_budget={data['hits_char_budget']} "
                f"(each hit needs at least {per_hit} characters: its id, {MIN_FIELD_CHARS} per result field and a "
                f"{MIN_SNIPPET_CHARS}-character snippet); lower page_size or raise hits_char_budget"
            )
        return value

    @field_validator("max_query_chars", "client_timeout_s")
    @classmethod
    def _not_below(cls, value: float, info: ValidationInfo) -> float:
        low_name = _AT_LEAST[str(info.field_name)]
        low = info.data.get(low_name)
        if low is not None and value < low:
            raise ValueError(f"{info.field_name} ({value:g}) must be >= {low_name} ({low:g})")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> SpecFields:
        if self.name == self.fetch_name:
            raise ValueError("search and fetch tools need different names")
        names = [self.id_field, self.tenant_field, *self.all_keyword_fields(), *self.text_field_names()]
        if self.group_field:
            names.append(self.group_field)
        if self.date_field:
            names.append(self.date_field)
        if len(set(names)) != len(names):
            raise ValueError(f"field names must be distinct: {names}")
        reserved = [n for n in names if n.startswith(RESERVED_FIELD_PREFIX)]
        if reserved:
            raise ValueError(f"field names starting with {RESERVED_FIELD_PREFIX!r} are scopegate's own: {reserved}")
        for f in self.filters:
            if f.name in RESERVED_ARGUMENTS:
                raise ValueError(f"filter name {f.name!r} clashes with a tool argument")
        if self.snippet_field not in self.text_field_names():
            raise ValueError(f"snippet field {self.snippet_field!r} must be a text field")
        for name in self.result_fields:
            if name not in self.stored_fields():
                raise ValueError(f"result field {name!r} is not a field of the spec")
        return self._relevance_consistent()

    def _relevance_consistent(self) -> SpecFields:
        for reserved in (COMBINED_FIELD, VECTOR_FIELD):
            if reserved in self.stored_fields():
                raise ValueError(f"field name {reserved!r} is reserved")
        unknown = sorted(set(self.embed_fields) - set(self.text_field_names()))
        if unknown:
            raise ValueError(f"embed_fields must be text fields of the spec: {', '.join(unknown)}")
        return self._existing_consistent()

    def _existing_consistent(self) -> SpecFields:
        if self.index_mode == "managed":
            if self.field_paths:
                raise ValueError("field_paths is for index_mode: existing (a managed index names its fields itself)")
            return self
        unknown = sorted(set(self.field_paths) - set(self.stored_fields()))
        if unknown:
            raise ValueError(f"field_paths names fields the spec does not have: {', '.join(unknown)}")
        if self.uses_vectors():
            raise ValueError("index_mode existing supports retrieval: keyword (vectors need scopegate's own field)")
        return self

    # -- fields ---------------------------------------------------------
    def all_keyword_fields(self) -> tuple[str, ...]:
        seen: dict[str, None] = {}
        for name in (*(f.name for f in self.filters), *self.keyword_fields):
            seen.setdefault(name, None)
        return tuple(seen)

    def text_field_names(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.text_fields)

    def embedded_fields(self) -> tuple[str, ...]:
        """Text fields whose values (joined by newlines) are embedded for vector retrieval."""
        return self.embed_fields or self.text_field_names()

    def uses_vectors(self) -> bool:
        return self.retrieval != "keyword"

    def combined_weights(self) -> tuple[tuple[str, int], ...]:
        """Field -> copies in the combined field (BM25F weights, rounded, at least 1)."""
        return tuple((t.name, max(1, round(t.boost))) for t in self.text_fields)

    def stored_fields(self) -> tuple[str, ...]:
        """Every field a backend stores and may return."""
        out = [self.id_field, self.tenant_field]
        if self.group_field:
            out.append(self.group_field)
        out += [*self.all_keyword_fields(), *self.text_field_names()]
        if self.date_field:
            out.append(self.date_field)
        return tuple(out)

    def hit_source_fields(self) -> tuple[str, ...]:
        """The fields the shaper needs for a hit (``_source`` filtering)."""
        seen: dict[str, None] = {self.id_field: None}
        for name in (*self.result_fields, self.snippet_field):
            seen.setdefault(name, None)
        return tuple(seen)

    def engine_path(self, name: str) -> str:
        """The engine field path behind the spec field ``name`` (itself unless ``field_paths`` says otherwise)."""
        return self.field_paths.get(name, name)

    @property
    def existing(self) -> bool:
        """True for a team's own index (``index_mode: existing``): searched as named, never written."""
        return self.index_mode == "existing"

    def filter_named(self, name: str) -> KeywordFilter | None:
        for f in self.filters:
            if f.name == name:
                return f
        return None


def min_hit_chars(id_field: str, result_fields: tuple[str, ...]) -> int:
    """Characters one hit takes at the shaper's floors, with the ``, `` that joins hits."""
    item = {id_field: "x" * ID_RESERVE_CHARS, **dict.fromkeys(result_fields, "x" * MIN_FIELD_CHARS)}
    item["snippet"] = "x" * MIN_SNIPPET_CHARS
    return len(json.dumps(item)) + 2


@model
class SearchSpec(SpecFields):
    """Everything that defines one search tool and its fetch-by-id companion."""

    scope_keys: ScopeKeys = Field(
        default_factory=ScopeKeys, description="Session-state keys holding tenant, groups and user."
    )

    # -- what the model sees --------------------------------------------
    def argument_names(self) -> tuple[str, ...]:
        return ("query", *(f.name for f in self.filters), "page")

    def json_schema(self) -> dict[str, Any]:
        """The parameters schema of the search tool: query, filters, page. Nothing else."""
        query: dict[str, Any] = {
            "type": "string",
            "description": self.query_description,
            "minLength": self.min_query_chars,
            "maxLength": self.max_query_chars,
        }
        if self.filters:
            # A filter-only listing: an empty query with a filter lists the matching documents.
            order = "newest first" if self.date_field else "in index order"
            query["description"] = f"{self.query_description} Empty with a filter set: list what matches ({order})."
            query["minLength"] = 0
        props: dict[str, Any] = {"query": query}
        props.update(self.filter_properties())
        props["page"] = {
            "type": "integer",
            "description": self.page_description,
            "minimum": 1,
            "maximum": self.max_page,
            "default": 1,
        }
        return {"type": "object", "properties": props, "required": ["query"], "additionalProperties": False}

    def filter_properties(self) -> dict[str, Any]:
        """The enumerated filters as schema properties (the search and aggregation tools share them)."""
        return {
            f.name: {
                "type": "string",
                "enum": list(f.allowed),
                "description": filter_description(f),
            }
            for f in self.filters
        }

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

    # -- (de)serialisation -----------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """A JSON-able dict that :meth:`from_dict` turns back into an equal spec."""
        data: dict[str, Any] = _ADAPTER.dump_python(self, mode="json")
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, source: str = "search spec") -> SearchSpec:
        """Validate ``data`` (the keys of this class); raises :class:`ConfigValidationError`."""
        try:
            return _ADAPTER.validate_python(dict(data))
        except ValidationError as exc:
            raise ConfigValidationError(source, problems_of(exc, cls)) from None


_ADAPTER: TypeAdapter[SearchSpec] = TypeAdapter(SearchSpec)


def spec_to_dict(spec: SearchSpec) -> dict[str, Any]:
    return spec.to_dict()


def spec_from_dict(data: Mapping[str, Any]) -> SearchSpec:
    return SearchSpec.from_dict(data)


# -- the spec stored beside an embedded index ----------------------------------------------------
STORED_FORMAT = 2
SPEC_FILE_LIMITS = Limits(max_bytes=1_000_000, max_depth=16, max_nodes=100_000, max_scalar_chars=100_000)
# Files written before format 2 carry no "format" key; keys they lack meant the old ticket defaults.
LEGACY_DEFAULTS: Mapping[str, Any] = {
    "index": "tickets",
    "id_field": "ticket_id",
    "result_fields": ["subject", "status"],
    "query_description": "Keywords to search for: words, error messages or error codes. Plain words only.",
    "fetch_name": "get_ticket",
    "fetch_description": "Fetch one ticket by its id, as returned by the search tool.",
}


def to_stored(spec: SearchSpec) -> dict[str, Any]:
    """What ``scopegate-spec.json`` holds: every key, and the format number."""
    return {"format": STORED_FORMAT, **spec.to_dict()}


def upgrade_stored(data: Mapping[str, Any], *, source: str = "stored spec") -> dict[str, Any]:
    """The keys of a stored spec in today's terms: a format-1 file gets the defaults it was written with."""
    fields = dict(data)
    version = fields.pop("format", 1)
    # Indices written before field combinations existed were built for best_fields (no combined field).
    fields.setdefault("field_combination", "best_fields")
    if version == 1:
        return {**LEGACY_DEFAULTS, **fields}
    if version != STORED_FORMAT:
        raise ConfigError(f"{source}: spec format {version!r} is not one this scopegate reads (1, {STORED_FORMAT})")
    return fields


def from_stored(data: Mapping[str, Any], *, source: str = "stored spec") -> SearchSpec:
    """A spec from ``scopegate-spec.json``, of this format or of the one before it."""
    return SearchSpec.from_dict(upgrade_stored(data, source=source), source=source)
