"""Defining a hand-written tool: what the model is declared, and what is refused before anything runs."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

import pytest
from google.genai import types
from jsonschema import Draft202012Validator
from pydantic import BaseModel, Field
from syrupy.extensions.json import JSONSnapshotExtension

from scopegate.apptools import AppContext, app_tool
from scopegate.apptools.signature import parse_docstring
from scopegate.config.declarations import declaration
from scopegate.errors import ConfigError
from scopegate.examples.orders.tools import cancel_order
from scopegate.scope import Scope, ScopeKeys


@pytest.fixture
def snap(snapshot: Any) -> Any:
    return snapshot.use_extension(JSONSnapshotExtension)


class Address(BaseModel):
    """A postal address."""

    line1: Annotated[str, Field(min_length=1, max_length=200)]
    city: str
    postal_code: Annotated[str, Field(pattern=r"^[0-9A-Z -]{3,10}$")]
    country: Literal["FR", "DE", "NG"] = "FR"


class Move(BaseModel):
    order_id: Annotated[str, Field(description="The order to move.")]
    address: Address
    notify: bool = True


@app_tool(read_only=False)
async def move_order(ctx: AppContext, move: Move) -> dict[str, Any]:
    """Ship an order to a new address."""
    return {"order": move.order_id}


@app_tool(read_only=True)
def open_ticket_summary(
    ctx: AppContext,
    product: Literal["payments", "billing"],
    limit: Annotated[int, Field(ge=1, le=20)] = 5,
    labels: list[str] | None = None,
    since: str | None = None,
) -> list[str]:
    """Summarise the caller's open tickets.

    Longer explanation that stays in the description.

    Args:
        product: Which product's tickets.
        limit: How many tickets at most,
            counted from the newest.

    Returns:
        Ticket subjects.
    """
    return []


def declared(tool: Any) -> dict[str, Any]:
    found = declaration(tool)
    Draft202012Validator.check_schema(found["parameters"])
    types.FunctionDeclaration(
        name=found["name"], description=found["description"], parameters_json_schema=found["parameters"]
    )
    return found


def test_declarations_are_generated_from_the_type_hints(snap: Any) -> None:
    pinned = {tool.name: declared(tool) for tool in (cancel_order, move_order, open_ticket_summary)}
    assert pinned == snap
    summary = pinned["open_ticket_summary"]["parameters"]
    assert summary["properties"]["limit"] == {
        "type": "integer",
        "description": "How many tickets at most, counted from the newest.",
        "minimum": 1,
        "maximum": 20,
        "default": 5,
    }
    assert summary["required"] == ["product"] and summary["additionalProperties"] is False
    assert "ctx" not in summary["properties"]
    assert "$ref" not in json.dumps(pinned) and "title" not in json.dumps(pinned)
    moved = pinned["move_order"]
    assert moved["parameters"]["properties"]["address"]["properties"]["country"]["enum"] == ["FR", "DE", "NG"]
    assert moved["requires_confirmation"] is True and moved["annotations"]["destructiveHint"] is True
    assert "the user is asked to confirm" in moved["description"]
    assert pinned["open_ticket_summary"]["read_only"] is True


def test_the_docstring_gives_summary_and_argument_texts() -> None:
    docs = parse_docstring(open_ticket_summary.definition.fn.__doc__)
    assert docs.summary == "Summarise the caller's open tickets. Longer explanation that stays in the description."
    assert docs.arguments == {
        "product": "Which product's tickets.",
        "limit": "How many tickets at most, counted from the newest.",
    }


SCOPE_NAMES = ["tenant_id", "TenantId", "tenant", "user_id", "userId", "group_ids", "groups", "group_id", "scope"]


@pytest.mark.parametrize("name", SCOPE_NAMES)
def test_an_argument_named_like_a_scope_key_is_refused_at_definition(name: str) -> None:
    namespace: dict[str, Any] = {}
    source = f'def fn(ctx: AppContext, order: str, {name}: str) -> str:\n    "x"\n    return ""\n'
    exec(source, {"AppContext": AppContext}, namespace)  # a parameter of exactly that name
    with pytest.raises(ConfigError, match="look like scope keys"):
        app_tool(read_only=True)(namespace["fn"])


class Aliased(BaseModel):
    order: str
    sneaky: str = Field(alias="tenant-id")


class Inner(BaseModel):
    tenantId: str | None = None


class Outer(BaseModel):
    filters: list[Inner]


async def aliased(args: Aliased) -> str:
    """x"""
    return ""


async def nested(args: Outer) -> str:
    """x"""
    return ""


def test_a_nested_property_or_alias_named_like_a_scope_key_is_refused() -> None:
    with pytest.raises(ConfigError, match="'tenant-id'"):
        app_tool(read_only=True)(aliased)
    with pytest.raises(ConfigError, match="'tenantId'"):
        app_tool(read_only=True)(nested)


def test_the_configured_scope_keys_are_refused_when_the_tool_is_bound() -> None:
    @app_tool(read_only=True)
    async def lookup(ctx: AppContext, org: str, customer: str) -> str:
        """Look something up."""
        return ""

    with pytest.raises(ConfigError, match="'org'"):
        lookup.bind(scope_keys=ScopeKeys(tenant="org"))
    with pytest.raises(ConfigError, match="'customer'"):
        lookup.bind(scope_keys=ScopeKeys(tenant="tenant_id", user="customer"))
    assert lookup.bind(scope_keys=ScopeKeys(tenant="account")).scope_keys.tenant == "account"
    with pytest.raises(ConfigError, match="'org'"):
        app_tool(read_only=True, scope_keys=ScopeKeys(tenant="org"))(lookup.definition.fn)


def test_definitions_that_cannot_be_served_are_refused() -> None:
    def plain(x: int) -> int:
        """Double."""
        return 2 * x

    with pytest.raises(ConfigError, match="read_only"):
        app_tool(plain)  # type: ignore[call-overload]
    with pytest.raises(ConfigError, match="read_only"):
        app_tool()(plain)  # type: ignore[call-overload]

    def nodoc(x: int) -> int:
        return x

    with pytest.raises(ConfigError, match="needs a description"):
        app_tool(read_only=True)(nodoc)
    assert app_tool(read_only=True, description="Echo.")(nodoc).description == "Echo."

    def untyped(x) -> int:  # type: ignore[no-untyped-def]
        """x"""
        return 1

    with pytest.raises(ConfigError, match="needs a type hint"):
        app_tool(read_only=True)(untyped)

    def star(*args: int) -> int:
        """x"""
        return 1

    with pytest.raises(ConfigError, match=r"\*args"):
        app_tool(read_only=True)(star)

    def scoped(who: Scope) -> int:
        """x"""
        return 1

    with pytest.raises(ConfigError, match=r"scope comes from ctx\.scope"):
        app_tool(read_only=True)(scoped)

    def two(a: AppContext, b: AppContext) -> int:
        """x"""
        return 1

    with pytest.raises(ConfigError, match="only one parameter"):
        app_tool(read_only=True)(two)
    with pytest.raises(ConfigError, match="name"):
        app_tool(read_only=True, name="no spaces allowed")(plain)
    with pytest.raises(ConfigError, match="never asks"):
        app_tool(read_only=True, confirm="in_body")(plain)


def test_declarations_pass_every_provider_profile() -> None:
    """Gemini, OpenAI strict, Anthropic and MCP accept the generated declarations (scopegate.declarations lint)."""
    from scopegate.declarations import ToolDecl, lint_tools
    from scopegate.demo.corpus import ticket_spec
    from scopegate.search.agg_tool import AggregateTool
    from scopegate.search.aggregation import AggregationSpec

    class NoBackend:
        def aggregation_problems(self, fields: Any) -> list[str]:
            return []

    count = AggregateTool(ticket_spec(), NoBackend(), AggregationSpec())  # type: ignore[arg-type]
    tools = [ToolDecl.from_neutral(declaration(t)) for t in (cancel_order, move_order, open_ticket_summary, count)]
    assert lint_tools(tools) == []
