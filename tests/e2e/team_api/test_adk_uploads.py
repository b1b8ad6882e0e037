"""Issue 37, a team's own API: an ADK agent uploads one of its artifacts through a multipart operation.

A real spec's upload (OpenAI's ``createFile``: ``multipart/form-data`` with a binary ``file`` part
and a ``purpose`` enum) is served by a local API that parses the multipart body. The real ADK
``Runner`` runs a scripted model with an ``InMemoryArtifactService`` holding a saved artifact; the
model only names the artifact, the tool reads it and sends it. Missing artifacts, files over the
limit, files of a type the operation does not take and bad form fields are structured errors,
and nothing is sent for them. The file's bytes never reach the model.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from google.adk.agents import LlmAgent
from google.adk.artifacts import InMemoryArtifactService
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.genai import types
from team_service import TEAM_SPEC, RunningTeam, running_team_service

from scopegate.adapters.adk_openapi import OpenApiToolset
from scopegate.demo.orders_demo import send, user_text
from scopegate.openapi.runtime import DeclaredScheme, FromProvider, OperationPolicy, ToolsetSettings
from scopegate.openapi.runtime.uploads import UploadLimits
from scopegate.testing.scripted_llm import ScriptedLlm, Turn, final_text

APP = "uploads_e2e"
API_KEY = "sk-team-5e0c1d9f7a"
CONTENT = b'{"custom_id": "r-1", "marker": "ARTIFACT-BYTES-93c1"}\n' * 20
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64


@pytest.fixture(scope="module")
def team() -> Iterator[RunningTeam]:
    with running_team_service({API_KEY: "team"}) as svc:
        yield svc


def upload_settings(spec: Any, team: RunningTeam, allow: tuple[str, ...], **limits: int) -> ToolsetSettings:
    """OpenAI's spec has its bearer scheme; the team spec has none, so the toolset declares its key."""
    openai = allow == ("createFile",)
    return ToolsetSettings(
        spec=spec,
        allow=allow,
        base_url=team.base_url,  # an origin: the service answers with or without the spec's /v1
        credentials={"ApiKeyAuth" if openai else "teamKey": FromProvider(lambda _ctx, _s: API_KEY)},
        security_schemes={} if openai else {"teamKey": DeclaredScheme.api_key(header="X-Team-Key")},
        policies={name: OperationPolicy(confirm=False) for name in allow},
        uploads=UploadLimits(**limits),
    )


async def run_agent(
    toolset: OpenApiToolset, turns: list[Turn | Callable[..., Turn]], artifacts: dict[str, types.Part]
) -> tuple[list[tuple[str, dict[str, Any]]], ScriptedLlm, list[str]]:
    model = ScriptedLlm(turns)
    agent = LlmAgent(name="uploader", model=model, instruction="Upload what the user asks.", tools=[toolset])
    store = InMemoryArtifactService()
    runner = Runner(agent=agent, app_name=APP, session_service=InMemorySessionService(), artifact_service=store)
    lines: list[str] = []
    try:
        session = await runner.session_service.create_session(app_name=APP, user_id="ana", state={"user_id": "ana"})
        for name, part in artifacts.items():
            await store.save_artifact(app_name=APP, user_id="ana", session_id=session.id, filename=name, artifact=part)
        events = await send(runner, session, user_text("Upload my batch file."), lines.append)
    finally:
        await runner.close()
        await toolset.close()
    responses = [
        (str(p.function_response.name), dict(p.function_response.response or {}))
        for e in events
        for p in (e.content.parts if e.content and e.content.parts else [])
        if p.function_response
    ]
    return responses, model, lines


def done(responses: list[tuple[str, dict[str, Any]]]) -> Turn:
    return final_text("done: " + ", ".join(str(r[1].get("error_code") or r[1].get("status")) for r in responses))


async def test_adk_agent_uploads_an_artifact_through_the_specs_multipart_operation(
    team: RunningTeam, shared: Callable[..., Path]
) -> None:
    spec = shared("openapi", "openai-openapi.yaml")
    toolset = OpenApiToolset(upload_settings(spec, team, ("createFile",)))
    artifacts = {"batch.jsonl": types.Part.from_bytes(data=CONTENT, mime_type="application/jsonl")}
    calls = Turn(calls=(("createFile", {"file": "batch.jsonl", "purpose": "batch"}),))
    team.state.clear()
    responses, model, lines = await run_agent(toolset, [calls, done], artifacts)

    ((name, result),) = responses
    assert name == "createFile" and result["status"] == "ok", result
    (seen,) = team.state.requests()
    assert seen.method == "POST" and seen.path.endswith("/files")
    assert seen.headers["content-type"].startswith("multipart/form-data; boundary=")
    assert seen.headers["authorization"] == f"Bearer {API_KEY}"
    file_part = next(p for p in seen.parts if p["name"] == "file")
    assert file_part["filename"] == "batch.jsonl" and file_part["data"] == CONTENT
    assert file_part["content_type"] == "application/jsonl"
    assert [p["data"] for p in seen.parts if p["name"] == "purpose"] == [b"batch"]
    assert result["untrusted"]["data"]["bytes"] == len(CONTENT)

    # The model named the file; it never saw (or could send) its bytes, nor the key.
    declared = model.seen_declarations[0][0]["parameters_json_schema"]["properties"]
    assert declared["file"]["type"] == "string" and "name of a file" in declared["file"]["description"]
    everything = json.dumps(model.seen_declarations) + json.dumps(model.seen_responses) + "\n".join(lines)
    assert "ARTIFACT-BYTES" not in everything and API_KEY not in everything


async def test_missing_large_and_invalid_uploads_are_structured_errors(
    team: RunningTeam, shared: Callable[..., Path]
) -> None:
    spec = shared("openapi", "openai-openapi.yaml")
    toolset = OpenApiToolset(upload_settings(spec, team, ("createFile",), max_file_bytes=len(CONTENT) - 1))
    artifacts = {
        "batch.jsonl": types.Part.from_bytes(data=CONTENT, mime_type="application/jsonl"),
        "notes.txt": types.Part(text="small"),
    }
    calls = Turn(
        calls=(
            ("createFile", {"file": "missing.jsonl", "purpose": "batch"}),
            ("createFile", {"file": "batch.jsonl", "purpose": "batch"}),
            ("createFile", {"file": "notes.txt", "purpose": "not-a-purpose"}),
            ("createFile", {"file": CONTENT.decode()[:200], "purpose": "batch"}),
        )
    )
    team.state.clear()
    responses, model, _ = await run_agent(toolset, [calls, done], artifacts)

    by_code = [r[1].get("error_code") for r in responses]
    assert by_code == ["FILE_NOT_FOUND", "FILE_TOO_LARGE", "BAD_ARGUMENTS", "BAD_ARGUMENTS"], responses
    assert sorted(responses[0][1]["available"]) == ["batch.jsonl", "notes.txt"]
    assert responses[1][1]["limit_bytes"] == len(CONTENT) - 1
    assert responses[2][1]["problems"][0]["field"] == "purpose"  # the form field keeps its validation
    # Content pasted where a name goes is not a name (and is not echoed back).
    assert "not its content" in responses[3][1]["problems"][0]["problem"]
    assert team.state.requests() == []  # nothing was sent for any of them
    assert "ARTIFACT-BYTES" not in json.dumps(model.seen_responses[-1])


async def test_a_binary_body_takes_only_the_types_the_spec_offers(team: RunningTeam) -> None:
    toolset = OpenApiToolset(upload_settings(TEAM_SPEC, team, ("putBlob",)))
    artifacts = {
        "logo.png": types.Part.from_bytes(data=PNG, mime_type="image/png"),
        "notes.txt": types.Part(text="not an image"),
    }
    calls = Turn(
        calls=(("putBlob", {"name": "logo", "body": "logo.png"}), ("putBlob", {"name": "n", "body": "notes.txt"}))
    )
    team.state.clear()
    responses, _, _ = await run_agent(toolset, [calls, done], artifacts)
    ok, refused = (r[1] for r in responses)
    (seen,) = team.state.requests()
    assert seen.method == "PUT" and seen.path == "/v1/blobs/logo"
    assert seen.body == PNG and seen.headers["content-type"] == "image/png"
    assert ok["status"] == "ok" and ok["untrusted"]["data"]["bytes"] == len(PNG), ok
    assert refused["error_code"] == "FILE_TYPE_NOT_ALLOWED"
    assert refused["allowed"] == ["image/png", "image/jpeg"] and refused["file_type"] == "text/plain"
