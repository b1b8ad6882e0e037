"""Map source records (any column names) onto a search spec's field names."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from scopegate.errors import ConfigError
from scopegate.ingest.readers import SourceRecordError
from scopegate.search.spec import SearchSpec

ROW_NUMBER = "@row"


@dataclass(frozen=True)
class FieldMapping:
    """Spec field name → source column. Unnamed spec fields map to a column of the same name.

    ``id="@row"`` numbers records by their position (for sources without an id column);
    ``tenant_value`` gives every record the same tenant (for sources without a tenant column).
    """

    id: str | None = None
    tenant: str | None = None
    tenant_value: str | None = None
    groups: str | None = None
    fields: Mapping[str, str] = field(default_factory=dict)
    # Prefix for ids, e.g. to keep two sources apart in one index.
    id_prefix: str = ""

    def __post_init__(self) -> None:
        if self.tenant_value is not None:
            if not self.tenant_value.strip():
                raise ConfigError("the constant tenant must not be empty")
            if self.tenant is not None:
                raise ConfigError(
                    f"give a tenant column (tenant={self.tenant}) or a constant tenant ({self.tenant_value!r}), "
                    "not both"
                )

    @classmethod
    def parse(cls, pairs: Iterable[str], *, tenant_value: str | None = None) -> FieldMapping:
        """From ``spec_field=column`` strings; ``id=``, ``tenant=`` and ``groups=`` are special."""
        special: dict[str, str] = {}
        rest: dict[str, str] = {}
        for pair in pairs:
            name, sep, column = pair.partition("=")
            if not sep or not name.strip() or not column.strip():
                raise ConfigError(f"mapping {pair!r} must look like field=column")
            target = special if name.strip() in {"id", "tenant", "groups"} else rest
            target[name.strip()] = column.strip()
        prefix = rest.pop("id_prefix", "")
        return cls(
            id=special.get("id"),
            tenant=special.get("tenant"),
            groups=special.get("groups"),
            fields=rest,
            id_prefix=prefix,
            tenant_value=tenant_value,
        )

    def source_of(self, spec: SearchSpec, name: str) -> str:
        if name == spec.id_field and self.id:
            return self.id
        if name == spec.tenant_field and self.tenant:
            return self.tenant
        if spec.group_field and name == spec.group_field and self.groups:
            return self.groups
        return self.fields.get(name, name)

    def check(self, spec: SearchSpec) -> None:
        unknown = sorted(set(self.fields) - set(spec.stored_fields()))
        if unknown:
            raise ConfigError(f"mapping names fields the spec does not have: {', '.join(unknown)}")

    def sources(self, spec: SearchSpec) -> dict[str, str]:
        """Spec field -> the source column it is read from (the id with ``@row``, a constant tenant: none)."""
        sources = {name: self.source_of(spec, name) for name in spec.stored_fields()}
        if self.id == ROW_NUMBER:
            del sources[spec.id_field]
        if self.tenant_value is not None:
            del sources[spec.tenant_field]
        return sources

    def required_columns(self, spec: SearchSpec) -> dict[str, str]:
        """Spec field -> column that must exist in the source: the id and tenant (unless numbered or constant),
        the groups column when the spec has groups, and every column named explicitly."""
        sources = self.sources(spec)
        needed = {spec.id_field, spec.tenant_field, *(self.fields or {})}
        if spec.group_field:
            needed.add(spec.group_field)
        return {name: column for name, column in sources.items() if name in needed}

    def apply(
        self, spec: SearchSpec, records: Iterable[Mapping[str, Any] | SourceRecordError]
    ) -> Iterator[dict[str, Any] | SourceRecordError]:
        self.check(spec)
        sources = self.sources(spec)
        for position, record in enumerate(records, start=1):
            if isinstance(record, SourceRecordError):
                yield record
                continue
            out: dict[str, Any] = {}
            for name, column in sources.items():
                value = record.get(column)
                if value is None:
                    continue
                if name == spec.group_field:
                    out[name] = value if isinstance(value, list) else [g for g in str(value).split("|") if g]
                else:
                    out[name] = value if isinstance(value, str) else str(value)
            if self.id == ROW_NUMBER:
                out[spec.id_field] = str(position)
            if self.tenant_value is not None:
                out[spec.tenant_field] = self.tenant_value
            if spec.id_field in out and self.id_prefix:
                out[spec.id_field] = self.id_prefix + out[spec.id_field]
            yield out
