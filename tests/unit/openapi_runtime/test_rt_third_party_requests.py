"""Built requests for real third-party specs (Twilio: form bodies + basic auth; GitHub: JSON, paths, queries).

Snapshots of what would be sent; credentials are masked in the snapshot but their placement is shown.
The specs are read from ../shared/data/openapi (skipped when absent).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from syrupy.assertion import SnapshotAssertion

from scopegate.context import CallContext
from scopegate.openapi.loader import SpecDocument, load_document
from scopegate.openapi.runtime.credentials import FromState, resolve_auth
from scopegate.openapi.runtime.request import ArgumentsInvalid, RequestBuilder
from scopegate.openapi.translate import translate

DATA = Path(__file__).resolve().parents[3].parent / "shared" / "data" / "openapi"
pytestmark = pytest.mark.skipif(not DATA.is_dir(), reason=f"real specs not found at {DATA}")
ACCOUNT = "AC" + "0123456789abcdef" * 2
MESSAGE = "SM" + "fedcba9876543210" * 2


def _builders(name: str, operation_ids: tuple[str, ...]) -> tuple[SpecDocument, dict[str, RequestBuilder]]:
    doc = load_document(DATA / name)
    infos = [i for i in doc.infos() if i.operation_id in operation_ids]
    out = {}
    for tool in translate(doc, infos).tools:
        server = tool.operation.servers[0].default_url()
        out[tool.operation.operation_id or tool.name] = RequestBuilder(tool.binding, server)
    return doc, out


@pytest.fixture(scope="module")
def twilio() -> tuple[SpecDocument, dict[str, RequestBuilder]]:
    return _builders("twilio_api_v2010.json", ("CreateMessage", "FetchMessage", "ListMessage", "DeleteMessage"))


@pytest.fixture(scope="module")
def github() -> tuple[SpecDocument, dict[str, RequestBuilder]]:
    return _builders(
        "github-api.github.com-v0.0.5.json",
        ("issues/create", "issues/update", "search/issues-and-pull-requests", "repos/get-content", "repos/get"),
    )


async def test_twilio_requests(
    twilio: tuple[SpecDocument, dict[str, RequestBuilder]], snapshot: SnapshotAssertion
) -> None:
    doc, b = twilio
    ctx = CallContext(state={"twilio_sid": ACCOUNT, "twilio_token": "twilio-auth-token-123"})
    source = {"accountSid_authToken": FromState("twilio_token", username_key="twilio_sid")}
    built: dict[str, Any] = {}
    calls = {
        "CreateMessage": {
            "AccountSid": ACCOUNT,
            "To": "+15551234567",
            "From": "+15557654321",
            "Body": "Your code is 0 — don't share it & reply STOP",
            "MediaUrl": ["https://example.test/a.png", "https://example.test/b.png"],
            "SendAsMms": False,
            "ValidityPeriod": 14400,
        },
        "FetchMessage": {"AccountSid": ACCOUNT, "Sid": MESSAGE},
        "ListMessage": {"AccountSid": ACCOUNT, "To": "+15551234567", "query_DateSent": "2024-01-01", "Page": 0},
        "DeleteMessage": {"AccountSid": ACCOUNT, "Sid": MESSAGE},
    }
    for op, args in calls.items():
        request = b[op].build(args)
        auth = await resolve_auth(b[op].operation.security, doc.security_schemes, source, ctx)
        request = request.with_parts(headers=auth.headers, query=auth.query, cookies=auth.cookies, secret=True)
        built[op] = request.describe()
        assert ("Authorization", "***") in [tuple(h) for h in built[op]["headers"]]
        assert "twilio-auth-token-123" not in str(built[op])
    assert built == snapshot


def test_twilio_injections_are_refused(twilio: tuple[SpecDocument, dict[str, RequestBuilder]]) -> None:
    _, b = twilio
    for sid in ("../Calls", MESSAGE[:-2] + "/.", "SM" + "%2F" * 10 + "0" * 2, MESSAGE + "?x", "x"):
        with pytest.raises(ArgumentsInvalid) as info:
            b["FetchMessage"].build({"AccountSid": ACCOUNT, "Sid": sid})
        assert info.value.problems[0]["field"] == "Sid"
    with pytest.raises(ArgumentsInvalid) as info:
        b["CreateMessage"].build({"AccountSid": ACCOUNT, "To": "+1", "ValidityPeriod": "forever"})
    assert [p["field"] for p in info.value.problems] == ["ValidityPeriod"]


def test_github_requests(github: tuple[SpecDocument, dict[str, RequestBuilder]], snapshot: SnapshotAssertion) -> None:
    _, b = github
    calls = {
        "issues/create": {
            "owner": "octo-org",
            "repo": "hello world",
            "title": "Crash on start ✗",
            "body": "",
            "labels": ["bug", "p0"],
            "assignees": [],
        },
        "issues/update": {"owner": "octo-org", "repo": "hello", "issue_number": 0, "state": "closed"},
        "search/issues-and-pull-requests": {"q": "is:open label:bug repo:octo-org/hello", "per_page": 1, "page": 2},
        # A multi-segment value stays one segment: "/" is always encoded (see README limits).
        "repos/get-content": {"owner": "octo-org", "repo": "hello", "path": "src/../../etc/passwd", "ref": "main"},
        "repos/get": {"owner": "..", "repo": "."},
    }
    built = {op: b[op].build(args).describe() for op, args in calls.items()}
    assert built == snapshot
    with pytest.raises(ArgumentsInvalid) as info:
        b["issues/update"].build({"owner": "o", "repo": "r", "issue_number": 1, "state": "deleted"})
    assert info.value.problems == [{"field": "state", "problem": "must be one of: open, closed"}]
