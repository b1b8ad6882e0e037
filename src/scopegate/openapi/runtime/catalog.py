"""Catalog mode: a large allowlist behind three tools instead of one declaration per operation.

* ``find_operations(query, tag?)``: the best matches (BM25, :mod:`.catalog_index`) among the
  allowlisted operations this caller may use: name, one-line summary, whether it changes state.
* ``describe_operation(name)``: that operation's declaration, exactly what flat mode declares.
* ``call_operation(name, arguments)``: runs that operation's own tool, unchanged: its schema
  validation, scope and credentials from the session, ownership rules, confirmation before a
  change, retries, bounded responses; under a guard, the operation's own cap, cache and call-log
  line (the operation actually called, not only ``call_operation``).

What a caller may use is decided per call by ``CallContext.may_use`` (the token's scopes, set by
the adapter): an operation outside the allowlist, or one the token does not permit, is never
found, described or called, and the answer is the same as for a name that does not exist.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from scopegate.context import CallContext
from scopegate.errors import BAD_ARGUMENTS, NOT_FOUND, ConfigError, tool_error
from scopegate.openapi.runtime.catalog_index import MAX_QUERY_CHARS, CatalogIndex, IndexedOperation
from scopegate.openapi.runtime.tool import OperationTool
from scopegate.scope import Scope, ScopeKeys, ScopeMissing, read_scope
from scopegate.tools import LogFields, ScopedTool, ToolOutcome

FAMILY = "catalog"
DEFAULT_MAX_RESULTS = 8
MAX_TAGS_IN_SCHEMA = 60
SUMMARY_CHARS = 120
MAX_NAME_CHARS = 200
HOW_TO = "describe_operation(name) shows its arguments; call_operation(name, arguments) runs it."


def _one_line(text: str) -> str:
    line = " ".join(text.split())
    first = re.split(r"(?<=[.!?])\s", line, maxsplit=1)[0]
    return first if len(first) <= SUMMARY_CHARS else first[: SUMMARY_CHARS - 1].rstrip() + "…"


@dataclass(frozen=True)
class CatalogEntry:
    """One operation in a catalog: the tool that runs it (guarded or not) and the text it is found by."""

    tool: ScopedTool
    summary: str
    tags: tuple[str, ...]
    text: IndexedOperation

    @classmethod
    def of(cls, operation: OperationTool, runner: ScopedTool | None = None) -> CatalogEntry:
        """The entry of an operation tool; ``runner`` runs it (``guard.wrap(operation)``), else itself."""
        op = operation.operation
        params = tuple((operation.parameters_schema().get("properties") or {}).keys())
        summary = _one_line(op.summary or operation.description or op.label)
        text = IndexedOperation(
            name=operation.name,
            summary=op.summary,
            description=operation.description,
            tags=op.tags,
            params=params,
        )
        return cls(runner if runner is not None else operation, summary, op.tags, text)


def _no_such(name: str) -> dict[str, Any]:
    # The same answer for a name that does not exist, one outside the allowlist, and one the
    # caller's token does not permit: the catalog never says which.
    return tool_error(
        NOT_FOUND,
        f"There is no operation named {name[:80]!r} here. Use find_operations to find one by what it does.",
        retryable=False,
    )


class OperationCatalog:
    """The allowlisted operations of one toolset as three tools (``.tools``), sharing one index."""

    def __init__(
        self,
        entries: Sequence[CatalogEntry],
        *,
        max_results: int = DEFAULT_MAX_RESULTS,
        prefix: str = "",
        on_close: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        if not entries:
            raise ConfigError("an operation catalog needs at least one operation")
        if not 1 <= max_results <= 50:
            raise ConfigError("max_results must be between 1 and 50")
        self.entries = tuple(entries)
        self.by_name = {e.tool.name: e for e in self.entries}
        if len(self.by_name) != len(self.entries):
            raise ConfigError("two operations of a catalog have the same tool name")
        self.max_results = max_results
        self.index = CatalogIndex([e.text for e in self.entries])
        self.tags = tuple(sorted({t for e in self.entries for t in e.tags}))
        keys = {e.tool.scope_keys for e in self.entries}
        if len(keys) != 1:
            raise ConfigError("the operations of a catalog must read their scope from the same session keys")
        self.scope_keys: ScopeKeys = keys.pop()
        self.find = FindOperations(self, f"{prefix}find_operations")
        self.describe = DescribeOperation(self, f"{prefix}describe_operation")
        self.call = CallOperation(self, f"{prefix}call_operation")
        self.tools: tuple[ScopedTool, ...] = (self.find, self.describe, self.call)
        self._on_close = on_close

    async def aclose(self) -> None:
        """Release what the operations hold (the toolset's HTTP client), when the catalog owns it."""
        if self._on_close is not None:
            await self._on_close()

    @classmethod
    def of(
        cls,
        operations: Sequence[OperationTool],
        runners: Sequence[ScopedTool] | None = None,
        *,
        max_results: int = DEFAULT_MAX_RESULTS,
        prefix: str = "",
        on_close: Callable[[], Awaitable[None]] | None = None,
    ) -> OperationCatalog:
        """A catalog over a toolset's operation tools, each run by its runner (e.g. guarded) when given."""
        run = list(runners) if runners is not None else list(operations)
        if len(run) != len(operations):
            raise ConfigError("one runner per operation")
        entries = [CatalogEntry.of(o, r) for o, r in zip(operations, run, strict=True)]
        return cls(entries, max_results=max_results, prefix=prefix, on_close=on_close)

    def usable(self, name: Any, ctx: CallContext) -> CatalogEntry | None:
        """The entry of ``name`` when it exists and the caller's token permits it, else None."""
        if not isinstance(name, str):
            return None
        entry = self.by_name.get(name.strip())
        if entry is None:
            return None
        tool = entry.tool
        if ctx.may_use is not None and not ctx.may_use(tool.name, tool.family, tool.read_only):
            return None
        return entry

    def scope_of(self, ctx: CallContext) -> Scope | None:
        try:
            return read_scope(ctx.state, self.scope_keys)
        except ScopeMissing:
            return None


class _CatalogTool:
    family = FAMILY
    read_only = True
    requires_confirmation = False

    def __init__(self, catalog: OperationCatalog, name: str) -> None:
        self.catalog = catalog
        self.name = name
        self.scope_keys = catalog.scope_keys

    def scope_of(self, ctx: CallContext) -> Scope | None:
        return self.catalog.scope_of(ctx)

    def _name_schema(self, what: str) -> dict[str, Any]:
        return {"type": "string", "minLength": 1, "maxLength": MAX_NAME_CHARS, "description": what}


class FindOperations(_CatalogTool):
    """``find_operations(query, tag?)``: the best matches among the operations this caller may use."""

    def __init__(self, catalog: OperationCatalog, name: str) -> None:
        super().__init__(catalog, name)
        self.description = (
            f"Find the API operation for a task among {len(catalog.entries)} operations. "
            f"Returns up to {catalog.max_results} matches: name, summary and whether it changes data. "
            "Then describe_operation(name) for its arguments and call_operation(name, arguments) to run it."
        )

    def parameters_schema(self) -> dict[str, Any]:
        tag: dict[str, Any] = {
            "type": "string",
            "maxLength": MAX_NAME_CHARS,
            "description": "Only operations with this tag.",
        }
        if 0 < len(self.catalog.tags) <= MAX_TAGS_IN_SCHEMA:
            tag["enum"] = list(self.catalog.tags)
        properties: dict[str, Any] = {
            "query": {
                "type": "string",
                "minLength": 1,
                "maxLength": MAX_QUERY_CHARS,
                "description": "What the operation should do, in plain words (e.g. 'refund a charge').",
            }
        }
        if self.catalog.tags:  # an untagged spec: a tag parameter only invites a model to put an id there
            properties["tag"] = tag
        return {"type": "object", "properties": properties, "required": ["query"], "additionalProperties": False}

    def describe(self, args: Mapping[str, Any]) -> LogFields:
        query = args.get("query") if isinstance(args, Mapping) else None
        words = CatalogIndex.query_words(query) if isinstance(query, str) else []
        return {"tool": self.name, "query_words": words}

    async def run(self, args: Mapping[str, Any], ctx: CallContext) -> ToolOutcome:
        fields = dict(self.describe(args))
        if not isinstance(args, Mapping):
            return ToolOutcome(tool_error(BAD_ARGUMENTS, "arguments must be an object"), fields)
        unknown = sorted(set(args) - {"query", "tag"})
        query, tag = args.get("query"), args.get("tag")
        if unknown:
            return ToolOutcome(tool_error(BAD_ARGUMENTS, f"unknown argument(s): {', '.join(unknown)[:200]}"), fields)
        if not isinstance(query, str) or not query.strip() or len(query) > MAX_QUERY_CHARS:
            msg = f"query must be a non-empty string of at most {MAX_QUERY_CHARS} characters"
            return ToolOutcome(tool_error(BAD_ARGUMENTS, msg), fields)
        if tag is not None:  # a model writes "zone" for the spec's "Zone": tags match case-insensitively
            by_lower = {t.casefold(): t for t in self.catalog.tags}
            tag = by_lower.get(tag.casefold()) if isinstance(tag, str) else None
            if tag is None:
                shown = list(self.catalog.tags)[:MAX_TAGS_IN_SCHEMA]
                return ToolOutcome(tool_error(BAD_ARGUMENTS, "unknown tag", allowed=shown), fields)
        among = [
            i
            for i, e in enumerate(self.catalog.entries)
            if (tag is None or tag in e.tags) and self.catalog.usable(e.tool.name, ctx) is not None
        ]
        hits = self.catalog.index.search(query, among=among)[: self.catalog.max_results]
        found = []
        for position, _score in hits:
            entry = self.catalog.entries[position]
            found.append({"name": entry.tool.name, "summary": entry.summary, "changes_state": not entry.tool.read_only})
        fields["results"] = [f["name"] for f in found]
        result: dict[str, Any] = {"status": "ok", "operations": found}
        result["hint"] = HOW_TO if found else "No operation matches these words; try other words or no tag."
        return ToolOutcome(result, fields)


class _NamedOperation(_CatalogTool):
    """A catalog tool whose first argument names one operation (describe_operation, call_operation)."""

    def describe(self, args: Mapping[str, Any]) -> LogFields:
        name = args.get("name") if isinstance(args, Mapping) else None
        return {"tool": self.name, "operation": name[:MAX_NAME_CHARS] if isinstance(name, str) else None}

    def _entry(self, args: Mapping[str, Any], ctx: CallContext) -> tuple[dict[str, Any], Any, ToolOutcome]:
        """The call-log fields, the named operation's entry when this caller may use it (else None), and the
        answer for a name that is missing or not permitted (the same answer for both)."""
        fields = dict(self.describe(args))
        name = args.get("name") if isinstance(args, Mapping) else None
        return fields, self.catalog.usable(name, ctx), ToolOutcome(_no_such(str(name or "")), fields)


class DescribeOperation(_NamedOperation):
    """``describe_operation(name)``: the operation's declaration, as flat mode declares it."""

    def __init__(self, catalog: OperationCatalog, name: str) -> None:
        super().__init__(catalog, name)
        self.description = (
            "The arguments of one API operation found with find_operations: its name, description and "
            "JSON Schema of arguments, to pass to call_operation."
        )

    def parameters_schema(self) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {"name": self._name_schema("The operation's name, as find_operations returned it.")},
            "required": ["name"],
            "additionalProperties": False,
        }

    async def run(self, args: Mapping[str, Any], ctx: CallContext) -> ToolOutcome:
        fields, entry, refused = self._entry(args, ctx)
        if entry is None:
            return refused
        tool = entry.tool
        declaration = {"name": tool.name, "description": tool.description, "parameters": tool.parameters_schema()}
        result = {
            "status": "ok",
            "declaration": declaration,
            "changes_state": not tool.read_only,
            "requires_confirmation": bool(tool.requires_confirmation),
            "hint": f"call_operation(name={tool.name!r}, arguments={{...}}) with arguments matching 'parameters'.",
        }
        return ToolOutcome(result, fields)


class CallOperation(_NamedOperation):
    """``call_operation(name, arguments)``: runs the operation's own tool (its guard, checks and confirmation)."""

    def __init__(self, catalog: OperationCatalog, name: str) -> None:
        super().__init__(catalog, name)
        tools = [e.tool for e in catalog.entries]
        self.read_only = all(t.read_only for t in tools)
        # ADK and MCP run their confirmation flow for this tool; each operation still decides for itself.
        self.requires_confirmation = any(t.requires_confirmation for t in tools)
        self.description = (
            "Run one API operation found with find_operations, with the arguments describe_operation lists. "
            "Operations that change data ask the user to confirm before anything is sent."
        )

    def parameters_schema(self) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {
                "name": self._name_schema("The operation's name, as find_operations returned it."),
                "arguments": {
                    "type": "object",
                    "description": "The operation's arguments, matching the parameters describe_operation showed.",
                },
            },
            "required": ["name"],
            "additionalProperties": False,
        }

    async def run(self, args: Mapping[str, Any], ctx: CallContext) -> ToolOutcome:
        fields, entry, refused = self._entry(args, ctx)
        if entry is None:
            return refused
        unknown = sorted(set(args) - {"name", "arguments"})
        if unknown:
            return ToolOutcome(tool_error(BAD_ARGUMENTS, f"unknown argument(s): {', '.join(unknown)[:200]}"), fields)
        arguments = args.get("arguments")
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, Mapping):
            return ToolOutcome(tool_error(BAD_ARGUMENTS, "arguments must be an object"), fields)
        # The operation's own tool, unchanged: when guarded, its cap, cache and call-log line.
        outcome = await entry.tool.run(dict(arguments), ctx)
        fields["operation"] = entry.tool.name
        fields["outcome"] = "ok" if outcome.ok else str(outcome.error_code)
        return ToolOutcome(outcome.result, fields)
