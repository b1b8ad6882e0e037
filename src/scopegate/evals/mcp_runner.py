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
import json
import os
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.genai import types

from scopegate.backends.embedded import EmbeddedBackend
from scopegate.errors import ConfigError
from scopegate.evals.evalset import EvalCase, EvalSet
from scopegate.evals.scoring import ActualCall, CaseScore, TurnRecord
from scopegate.evals.worlds import SUPPORT_INSTRUCTION, SupportWorld, eval_tickets, support_spec
from scopegate.scope import ScopeKeys
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

    async def client(self, identity: Mapping[str, str]) -> Any:
        """The server for one stdio identity (``SCOPEGATE_TENANT``/``_USER``/``_GROUPS``)."""
        key = json.dumps(dict(identity), sort_keys=True)
        if key not in self.clients:
            from mcp import Client
            from mcp.client.stdio import StdioServerParameters

            params = StdioServerParameters(
                command=sys.executable,
                args=["-m", "scopegate.cli", "serve", str(self.config)],
                env={**os.environ, **identity},
                cwd=str(self.config.parent),
            )
            self.clients[key] = await self.stack.enter_async_context(Client(params))
        return self.clients[key]


def stdio_identity_env(state: Mapping[str, Any], keys: ScopeKeys) -> dict[str, str]:
    """The stdio server's identity for a case: its session state under the config's state keys."""
    env = {"SCOPEGATE_TENANT": str(state.get(keys.tenant, ""))}
    if keys.user and state.get(keys.user) is not None:
        env["SCOPEGATE_USER"] = str(state[keys.user])
    groups = state.get(keys.groups) if keys.groups else None
    if isinstance(groups, list | tuple):
        env["SCOPEGATE_GROUPS"] = ",".join(str(g) for g in groups)
    return env


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


async def run_case_mcp(
    servers: _Servers,
    world: Any,
    model: BaseLlm,
    case: EvalCase,
    *,
    instruction: str = SUPPORT_INSTRUCTION,
    keys: ScopeKeys | None = None,
    scored_calls: Callable[[Sequence[ActualCall]], list[ActualCall]] | None = None,
) -> CaseScore:
    """One case over MCP; ``scored_calls`` maps the calls made to the calls scored (default: catalog
    meta-tool calls scored as the operations they call, as over ADK)."""
    from scopegate.evals.adk_runner import operation_calls, score_case

    scored = scored_calls or operation_calls

    started = time.perf_counter()
    identity = stdio_identity_env(case.state, keys or ScopeKeys())
    check_scope = getattr(world, "check_scope", None)
    world.begin_case()
    records: list[TurnRecord] = []
    error = None
    violations = 0
    faults = {f.tool: f for f in case.spec.faults}
    seen: dict[str, int] = {}
    try:
        client = await servers.client(identity)
        declarations = _declarations(await client.list_tools())
        config = types.GenerateContentConfig(
            system_instruction=instruction, tools=[types.Tool(function_declarations=declarations)]
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
                        if check_scope is not None:
                            violations += await check_scope(name, result, case.state)
                    calls.append(ActualCall(name, args, result))
                    parts.append(types.Part(function_response=types.FunctionResponse(name=name, response=dict(result))))
                contents.append(types.Content(role="user", parts=parts))
            records.append(TurnRecord(tuple(scored(calls)), reply))
    except Exception as exc:  # an eval run must finish and report
        error = f"{type(exc).__name__}: {exc}"
    # A write needs the user's confirmation, which this loop never gives: any write that got through is unconfirmed.
    return score_case(case, records, error, started, violations, world.end_case().writes_sent)


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


@contextlib.asynccontextmanager
async def mcp_config(config: Path) -> AsyncIterator[tuple[_Servers, Any]]:
    """``scopegate serve CONFIG`` per case identity, and the same config's tools in process for the checks."""
    from scopegate.evals.targets import config_world, load_config_file

    loaded = load_config_file(config)
    if loaded.stdio.tenant is not None:
        raise ConfigError(
            f"{config}: stdio.tenant is set, so an MCP eval cannot give each case its own tenant; "
            "leave it unset (the eval sets SCOPEGATE_TENANT per case)"
        )
    async with config_world(config) as world, contextlib.AsyncExitStack() as stack:
        yield _Servers(config.resolve(), stack), world


async def run_cases_mcp(
    eval_set: EvalSet,
    model: BaseLlm | str | None,
    *,
    progress: Callable[[int, CaseScore], None] | None = None,
    variant: str = "baseline",
    run: int = 0,
    config: Path | None = None,
) -> list[CaseScore]:
    if config is None and eval_set.agent != "support":
        raise ConfigError("over MCP the shipped support set or a --config runs (the orders agent runs through ADK)")
    if model is None:
        raise ConfigError("over MCP the eval needs a model (--model)")
    if isinstance(model, str):
        from google.adk.models.registry import LLMRegistry

        model = LLMRegistry.new_llm(model)
    scores = []
    servers_cm: Any = mcp_config(config) if config is not None else mcp_support(variant)
    async with servers_cm as (servers, world):
        keys = world.app.config.scope_keys if config is not None else ScopeKeys()
        instruction = (eval_set.instruction or world.instruction) if config is not None else SUPPORT_INSTRUCTION
        for case in eval_set.cases:
            reset = getattr(model, "reset_stats", None)
            if callable(reset):
                reset()
            score = await run_case_mcp(servers, world, model, case, instruction=instruction, keys=keys)
            scores.append(score)
            if progress is not None:
                progress(run, score)
    return scores
