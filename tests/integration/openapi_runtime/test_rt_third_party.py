"""The same checks on a real third-party spec (Twilio 2010), sent over HTTP to a loopback server.

No Twilio server is reachable; a catch-all loopback service records what arrives, so the test sees
the real bytes: path, form body, basic auth, and that nothing goes anywhere else.
"""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import parse_qs

import pytest

from scopegate.context import CallContext
from scopegate.examples.orders.server import RunningService
from scopegate.openapi.runtime import FromState, OperationPolicy, OperationToolset, ToolsetSettings

SPEC = Path(__file__).resolve().parents[3].parent / "shared" / "data" / "openapi" / "twilio_api_v2010.json"
pytestmark = pytest.mark.skipif(not SPEC.is_file(), reason=f"Twilio spec not found at {SPEC}")
ACCOUNT = "AC" + "0123456789abcdef" * 2
OTHER_ACCOUNT = "AC" + "f" * 32
TOKEN = "twilio-auth-token-9f8e7d6c5b4a"
MESSAGE = "SM" + "fedcba9876543210" * 2
STATE = {"user_id": "u1", "twilio_account": ACCOUNT, "twilio_token": TOKEN}


@pytest.fixture
async def twilio(attacker: RunningService) -> AsyncIterator[OperationToolset]:
    # Here the "attacker" catch-all server plays Twilio: it is the pinned base URL.
    settings = ToolsetSettings(
        spec=SPEC,
        allow=("CreateMessage", "FetchMessage", "ListMessage"),
        base_url=attacker.base_url,
        credentials={"accountSid_authToken": FromState("twilio_token", username_key="twilio_account")},
        policies={
            op: OperationPolicy(bind={"AccountSid": "twilio_account"})
            for op in ("CreateMessage", "FetchMessage", "ListMessage")
        },
    )
    toolset = OperationToolset(settings)
    yield toolset
    await toolset.aclose()


def test_declarations_hide_the_account_and_credentials(twilio: OperationToolset) -> None:
    for tool in twilio.tools:
        schema = json.dumps(tool.parameters_schema())
        assert "AccountSid" not in tool.parameters_schema()["properties"]
        assert TOKEN not in schema and ACCOUNT not in schema
    assert twilio.tool("CreateMessage").requires_confirmation
    assert not twilio.tool("FetchMessage").requires_confirmation


async def test_form_body_and_basic_auth_arrive(twilio: OperationToolset, attacker: RunningService) -> None:
    args = {"To": "+15551234567", "From": "+15557654321", "Body": "Code 0 & more", "SendAsMms": False}
    asked = (await twilio.tool("CreateMessage").run(args, CallContext(state=STATE))).result
    assert asked["error_code"] == "CONFIRMATION_REQUIRED" and attacker.state.total_hits == 0
    result = (await twilio.tool("CreateMessage").run(args, CallContext(state=STATE, confirmed=True))).result
    assert result["status"] == "ok", result
    (record,) = attacker.state.recorded()
    assert record.method == "POST"
    assert record.raw_path == f"/2010-04-01/Accounts/{ACCOUNT}/Messages.json"
    assert record.headers["content-type"] == "application/x-www-form-urlencoded"
    expected = "Basic " + base64.b64encode(f"{ACCOUNT}:{TOKEN}".encode()).decode()
    assert record.headers["authorization"] == expected
    assert parse_qs(record.body.decode()) == {
        "To": ["+15551234567"],
        "From": ["+15557654321"],
        "Body": ["Code 0 & more"],
        "SendAsMms": ["false"],
    }
    assert TOKEN not in json.dumps(result)


async def test_scope_cannot_be_chosen_and_ids_cannot_escape(twilio: OperationToolset, attacker: RunningService) -> None:
    fetch = twilio.tool("FetchMessage")
    sneaky = (await fetch.run({"AccountSid": OTHER_ACCOUNT, "Sid": MESSAGE}, CallContext(state=STATE))).result
    assert sneaky["error_code"] == "BAD_ARGUMENTS" and sneaky["fields"] == ["AccountSid"]
    for sid in ("../../Calls", MESSAGE + "/../x", "%2E%2E", MESSAGE + "?Page=1"):
        result = (await fetch.run({"Sid": sid}, CallContext(state=STATE))).result
        assert result["error_code"] == "BAD_ARGUMENTS", (sid, result)
    ok = (await fetch.run({"Sid": MESSAGE}, CallContext(state=STATE))).result
    assert ok["status"] == "ok"
    listed = (
        await twilio.tool("ListMessage").run({"query_DateSent": "2024-01-01", "Page": 0}, CallContext(state=STATE))
    ).result
    assert listed["status"] == "ok"
    paths = [(r.raw_path, r.query) for r in attacker.state.recorded()]
    assert paths == [
        (f"/2010-04-01/Accounts/{ACCOUNT}/Messages/{MESSAGE}.json", ""),
        (f"/2010-04-01/Accounts/{ACCOUNT}/Messages.json", "DateSent%3C=2024-01-01&Page=0"),
    ]
    no_account = (await fetch.run({"Sid": MESSAGE}, CallContext(state={"twilio_token": TOKEN}))).result
    assert no_account["error_code"] == "NO_SCOPE"
