"""Pure MCP conversions: tools -> ``Tool``, results -> ``CallToolResult``, confirmation helpers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest

from scopegate.backends.embedded import EmbeddedBackend
from scopegate.config.declarations import declaration
from scopegate.demo.corpus import ticket_spec
from scopegate.errors import tool_error
from scopegate.search.tools import FetchTool, SearchTool
from scopegate.server import confirm
from scopegate.server.results import call_result, compact_text, mcp_tool, unknown_tool


@pytest.fixture(scope="module")
def tools() -> list[Any]:
    backend = EmbeddedBackend(ticket_spec(), None, threads=1)
    return [SearchTool(backend.spec, backend), FetchTool(backend.spec, backend)]


def test_mcp_tool_is_the_declaration(tools: list[Any], snapshot: Any) -> None:
    for tool in tools:
        wire = mcp_tool(tool).model_dump(by_alias=True, exclude_none=True, mode="json")
        assert wire["inputSchema"] == tool.parameters_schema()
        assert wire["description"] == tool.description
        assert wire["annotations"] == declaration(tool)["annotations"]
        assert json.dumps(wire, indent=2, sort_keys=True) == snapshot


def test_call_result_structured_and_text() -> None:
    ok = {"status": "ok", "results": [{"ticket_id": "A-1", "subject": "Café ✓"}], "total": 1}
    result = call_result(ok)
    assert result.structured_content == ok and result.is_error is False
    text = result.content[0]
    assert isinstance(text, types.TextContent)
    assert text.text == '{"status":"ok","results":[{"ticket_id":"A-1","subject":"Café ✓"}],"total":1}'
    assert json.loads(text.text) == ok

    err = tool_error("BAD_FILTER", "product must be one of ...", allowed=["a"])
    failed = call_result(err)
    assert failed.is_error is True and failed.structured_content == err
    wire = failed.model_dump(by_alias=True, exclude_none=True, mode="json")
    assert wire["isError"] is True and wire["structuredContent"]["error_code"] == "BAD_FILTER"


def test_compact_text_never_fails_on_odd_values() -> None:
    assert compact_text({"x": Path("/tmp")}) == '{"x":"/tmp"}'


def test_unknown_tool_lists_a_bounded_set() -> None:
    env = unknown_tool("x" * 500, [f"t{i}" for i in range(200)])
    assert env["error_code"] == "UNKNOWN_TOOL" and len(env["allowed"]) == 50
    assert len(env["message"]) < 200


def test_decisions() -> None:
    assert confirm.decision_of(types.ElicitResult(action="accept", content={"approve": True})) is True
    assert confirm.decision_of(types.ElicitResult(action="accept", content={"approve": False})) is False
    assert confirm.decision_of(types.ElicitResult(action="accept", content={"approve": "yes"})) is False
    assert confirm.decision_of(types.ElicitResult(action="accept")) is False
    assert confirm.decision_of(types.ElicitResult(action="decline")) is False
    assert confirm.decision_of(types.ElicitResult(action="cancel", content={"approve": True})) is False


def _params(state: str | None, answer: Any) -> types.CallToolRequestParams:
    responses = {confirm.CONFIRM_KEY: answer} if answer is not None else None
    return types.CallToolRequestParams(name="t", arguments={}, request_state=state, input_responses=responses)


def test_answered_round_needs_our_state_and_an_answer() -> None:
    yes = types.ElicitResult(action="accept", content={"approve": True})
    state = confirm.input_required("Approve?", "call-1").request_state
    assert confirm.answered_round(_params(state, yes)) == ("call-1", True)
    assert confirm.answered_round(_params(None, yes)) is None
    assert confirm.answered_round(_params(state, None)) is None
    assert confirm.answered_round(_params("not json", yes)) is None
    assert confirm.answered_round(_params('{"v": 99, "call_id": "x"}', yes)) is None
    assert confirm.answered_round(_params('["call-1"]', yes)) is None


def test_question_and_refusal_shapes() -> None:
    asked = confirm.input_required("  Approve   'Cancel order'\\n with x=1? " + "y" * 5000, "c")
    request = asked.input_requests[confirm.CONFIRM_KEY]  # type: ignore[index]
    assert isinstance(request, types.ElicitRequest)
    params = request.params
    assert isinstance(params, types.ElicitRequestFormParams)
    assert len(params.message) <= confirm.MAX_HINT_CHARS and "  " not in params.message
    assert params.requested_schema["required"] == ["approve"]
    pending = {"error_code": "CONFIRMATION_REQUIRED", "confirmation": {"hint": "h", "payload": {"tool": "t"}}}
    refusal = confirm.unavailable(pending, "this client cannot ask")
    assert refusal["error_code"] == confirm.CONFIRMATION_UNAVAILABLE and refusal["retryable"] is False
    assert refusal["confirmation"]["payload"] == {"tool": "t"} and "nothing was sent" in refusal["message"]
