"""Run eval cases over MCP: ``scopegate serve`` (stdio) + the official ``mcp`` client, the model loop here.

The server is the one users run, started per tenant (a stdio server's identity
is fixed per process) on an index holding the eval corpus. The loop gives any
ADK ``BaseLlm`` the tools the server lists (their ``inputSchema`` as
``parameters_json_schema``), sends each call with ``call_tool`` and feeds the
``structuredContent`` back, until the model answers. Faults are injected by the
harness before the call, as in the ADK runner. Only the support agent is served
over MCP here (the orders agent needs the OpenAPI service credentials in the
server's environment); its cases run through ADK.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path
from typing import Any

import yaml
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.genai import types

from scopegate.backends.embedded import EmbeddedBackend
from scopegate.evals.evalset import EvalCase, EvalSet
from scopegate.evals.scoring import ActualCall, CaseScore, TurnRecord
from scopegate.evals.worlds import SUPPORT_INSTRUCTION, SupportWorld, eval_tickets, support_spec
from scopegate.search.spec import spec_to_dict

MAX_MODEL_CALLS = 10


def _config(folder: Path, variant: str) -> Path:
    tool = spec_to_dict(support_spec(variant))
    tool.pop("scope_keys", None)
    config = {
        "version": 1,
        "server": {"name": "scopegate-eval"},
        "backends": {"local": {"type": "embedded", "path": str(folder / "data")}},
        "search_tools": [{"backend": "local", **{k: v for k, v in tool.items() if v is not None}}],
        "scope": {"state_keys": {"tenant": "tenant_id", "user": "user_id"}},
        "stdio": {"tenant": "${SCOPEGATE_TENANT}", "user": "${SCOPEGATE_USER:-eval}"},
        "guards": {"cap": {"families": {"search": 8}, "window_s": 60}},
    }
    path = folder / "scopegate.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), "utf-8")
    return path


async def _index(folder: Path, variant: str) -> dict[str, str]:
    spec = support_spec(variant)
    backend = EmbeddedBackend(spec, folder / "data" / spec.index)
    tickets = list(eval_tickets())
    try:
        await backend.ingest(iter(tickets), batch_size=5000)
    finally:
        await backend.close()
    return {t["ticket_id"]: t["tenant_id"] for t in tickets}


class _Servers:
    """One ``scopegate serve CONFIG`` stdio process (and client) per tenant, started on first use."""

    def __init__(self, config: Path, stack: contextlib.AsyncExitStack) -> None:
        self.config = config
        self.stack = stack
        self.clients: dict[str, Any] = {}

    async def client(self, tenant: str) -> Any:
        if tenant not in self.clients:
            from mcp import Client
            from mcp.client.stdio import StdioServerParameters

            params = StdioServerParameters(
                command=sys.executable,
                args=["-m", "scopegate.cli", "serve", str(self.config)],
                env={**os.environ, "SCOPEGATE_TENANT": tenant},
            )
            self.clients[tenant] = await self.stack.enter_async_context(Client(params))
        return self.clients[tenant]


def _declarations(listed: Any) -> list[types.FunctionDeclaration]:
    return [
        types.FunctionDeclaration(name=t.name, description=t.description or "", parameters_json_schema=t.input_schema)
        for t in listed.tools
    ]


async def _model_turn(model: BaseLlm, request: LlmRequest) -> types.Content:
    last = None
    async for response in model.generate_content_async(request):
        last = response
    if last is None or last.content is None:
        return types.Content(role="model", parts=[types.Part(text="")])
    return last.content


async def run_case_mcp(servers: _Servers, world: SupportWorld, model: BaseLlm, case: EvalCase) -> CaseScore:
    from scopegate.evals.adk_runner import score_case

    started = time.perf_counter()
    tenant = str(case.state.get("tenant_id", ""))
    records: list[TurnRecord] = []
    error = None
    violations = 0
    faults = {f.tool: f for f in case.spec.faults}
    seen: dict[str, int] = {}
    try:
        client = await servers.client(tenant)
        declarations = _declarations(await client.list_tools())
        config = types.GenerateContentConfig(
            system_instruction=SUPPORT_INSTRUCTION, tools=[types.Tool(function_declarations=declarations)]
        )
        contents: list[types.Content] = []
        for message in case.messages:
            contents.append(types.Content(role="user", parts=[types.Part(text=message)]))
            calls: list[ActualCall] = []
            reply = ""
            for _ in range(MAX_MODEL_CALLS):
                answer = await _model_turn(model, LlmRequest(model=model.model, contents=list(contents), config=config))
                contents.append(answer)
                fcs = [p.function_call for p in answer.parts or [] if p.function_call is not None]
                if not fcs:
                    reply = "".join(p.text or "" for p in answer.parts or [])
                    break
                parts = []
                for fc in fcs:
                    name, args = fc.name or "", dict(fc.args or {})
                    seen[name] = seen.get(name, 0) + 1
                    fault = faults.get(name)
                    if fault is not None and seen[name] <= fault.calls:
                        result: Mapping[str, Any] = {
                            "status": "error",
                            "error_code": fault.error_code,
                            "message": fault.message,
                            "retryable": fault.retryable,
                        }
                    else:
                        called = await client.call_tool(name, args)
                        result = dict(called.structured_content or {})
                        violations += world.check_response(name, result, case.state)
                    calls.append(ActualCall(name, args, result))
                    parts.append(types.Part(function_response=types.FunctionResponse(name=name, response=dict(result))))
                contents.append(types.Content(role="user", parts=parts))
            records.append(TurnRecord(tuple(calls), reply))
    except Exception as exc:  # an eval run must finish and report
        error = f"{type(exc).__name__}: {exc}"
    return score_case(case, records, error, started, violations, 0)


@contextlib.asynccontextmanager
async def mcp_support(variant: str = "baseline") -> AsyncIterator[tuple[_Servers, SupportWorld]]:
    with tempfile.TemporaryDirectory(prefix="scopegate-eval-mcp-") as tmp:
        folder = Path(tmp)
        owner = await _index(folder, variant)
        config = _config(folder, variant)
        checker = SupportWorld(EmbeddedBackend(support_spec(variant), folder / "checker"), owner)
        async with contextlib.AsyncExitStack() as stack:
            yield _Servers(config, stack), checker
        await checker.backend.close()


async def run_cases_mcp(
    eval_set: EvalSet,
    model: BaseLlm | str,
    *,
    progress: Callable[[int, CaseScore], None] | None = None,
    variant: str = "baseline",
    run: int = 0,
) -> list[CaseScore]:
    if eval_set.agent != "support":
        raise ValueError("over MCP only the support set runs here (the orders agent runs through ADK)")
    if isinstance(model, str):
        from google.adk.models.registry import LLMRegistry

        model = LLMRegistry.new_llm(model)
    scores = []
    async with mcp_support(variant) as (servers, world):
        for case in eval_set.cases:
            reset = getattr(model, "reset_stats", None)
            if callable(reset):
                reset()
            score = await run_case_mcp(servers, world, model, case)
            scores.append(score)
            if progress is not None:
                progress(run, score)
    return scores
