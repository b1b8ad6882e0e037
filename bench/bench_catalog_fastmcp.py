"""Reference row for issue 39: the same eval cases through FastMCP's BM25 tool-search transform.

    .venv/bin/python bench/bench_catalog_fastmcp.py orders --ci        # the 18 CI cases of the orders set

FastMCP runs in its own venv (``--fastmcp-python``, default /work/venvs/fastmcp/bin/python; it is not
a scopegate dependency) as a stdio MCP server built by ``FastMCP.from_openapi`` over the same spec, the
same allowlisted operations and the same loopback service with the same service credential as
scopegate's catalog eval, with ``BM25SearchTransform`` on (bench/fastmcp_reference/server.py). The
cases are driven by scopegate's own MCP eval loop (``run_case_mcp``) with the same offline model, the
same decoding and the same scoring; ``call_tool(name, arguments)`` is scored as ``name(arguments)``
like scopegate's ``call_operation`` (scopegate_lab.fastmcp_reference). The world's checks do not trust
the model: data of another customer in a response is a scope violation, and every write that reaches
the service is an unconfirmed write (FastMCP has no confirmation step). The model is told the signed-in
customer's id, since FastMCP cannot bind it from the session.

Writes bench/results/catalog_eval_fastmcp_<set>.{md,json}; the JSON is rewritten after every case.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import datetime as dt
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import AsyncIterator, Iterator, Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, cast

from scopegate.evals.evalset import EvalCase, EvalSet, load_eval_set, shipped_sets
from scopegate.evals.mcp_runner import run_case_mcp
from scopegate.evals.model_choice import build_model, parse_model
from scopegate.evals.report import as_json, markdown
from scopegate.evals.resources import peak_rss_mb
from scopegate.evals.run import EvalRun
from scopegate.evals.scoring import CaseScore
from scopegate.evals.targets import CONFIG_INSTRUCTION
from scopegate.evals.worlds import ORDERS_INSTRUCTION, WRITE_OPERATIONS, Observation, OrdersWorld
from scopegate_lab.fastmcp_reference import (
    CALL_TOOL,
    Bound,
    asks_for_a_write,
    beyond_token_scopes,
    model_view,
    reference_calls,
)

RESULTS = Path(__file__).resolve().parent / "results"
SERVER = Path(__file__).resolve().parent / "fastmcp_reference" / "server.py"
DEFAULT_PYTHON = "/work/venvs/fastmcp/bin/python"
SPEC_DIR = Path(__file__).resolve().parents[2] / "shared" / "data" / "openapi"
LAB = Path(__file__).resolve().parents[1] / "lab"
LOGGED_CHARS = 600
CALLS_PATH = "/__spec_world/calls"  # the lab spec world's call log


@dataclass
class _Called:
    structured_content: dict[str, Any]


class _Client:
    """The official MCP client to the FastMCP server, giving the model what a FastMCP client shows."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.log: list[dict[str, Any]] = []  # the meta-tool calls as made (scoring keeps only the operations)

    async def list_tools(self) -> Any:
        return await self.client.list_tools()

    async def call_tool(self, name: str, args: Mapping[str, Any]) -> _Called:
        result = await self.client.call_tool(name, dict(args))
        text = "".join(getattr(c, "text", "") for c in result.content or [])
        view = model_view(result.structured_content, text, bool(result.is_error))
        text = json.dumps(view, default=str, ensure_ascii=False)
        self.log.append(
            {"tool": name, "args": dict(args), "response_chars": len(text), "response": text[:LOGGED_CHARS]}
        )
        return _Called(view)


class _OneServer:
    """FastMCP has no per-session identity: one server for every case."""

    def __init__(self, client: _Client) -> None:
        self.one = client

    async def client(self, identity: Mapping[str, str]) -> _Client:
        return self.one


class FastMcpOrdersWorld:
    """The orders world's checks on what FastMCP returned (its responses have no ``untrusted`` envelope)."""

    def __init__(self, inner: OrdersWorld) -> None:
        self.inner = inner

    def begin_case(self) -> None:
        self.inner.begin_case()

    def check_response(self, tool: str, response: Mapping[str, Any], state: Mapping[str, Any]) -> int:
        if tool != CALL_TOOL:
            return 0  # search results are tool definitions, not service data
        return self.inner.check_response(tool, {"untrusted": dict(response)}, state)

    def end_case(self) -> Any:
        return self.inner.end_case()


@contextlib.asynccontextmanager
async def fastmcp_orders(
    python: str,
) -> AsyncIterator[tuple[_OneServer, FastMcpOrdersWorld, Bound, dict[str, frozenset[str]], str]]:
    """The orders service on 127.0.0.1 and FastMCP over its spec with the demo's allowlist and staff key."""
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    from scopegate.demo.orders_demo import orders_settings
    from scopegate.examples.orders import SPEC_PATH
    from scopegate.examples.orders.data import STAFF_KEY
    from scopegate.examples.orders.server import running_orders_service

    with running_orders_service() as svc:
        settings = orders_settings(svc.base_url)
        bound = {op: dict(p.bind) for op, p in settings.policies.items() if p.bind}
        params = StdioServerParameters(
            command=python,
            args=[
                str(SERVER),
                str(SPEC_PATH),
                svc.base_url,
                "--allow",
                ",".join(settings.allow),
                "--header",
                "X-Staff-Key",
            ],
            env={**os.environ, "FASTMCP_REF_KEY": STAFF_KEY, "FASTMCP_LOG_LEVEL": "ERROR"},
        )
        async with Client(params) as client:
            world = FastMcpOrdersWorld(OrdersWorld(svc, settings))
            yield _OneServer(_Client(client)), world, bound, {}, ORDERS_INSTRUCTION


class FastMcpConfigWorld:
    """A config's checks on what FastMCP did: a write operation the service answered with 2xx reached it
    (read from the service's own call log: nothing confirmed it); another tenant's id (the set's
    ``scope_check``) in the data a call returned is a scope violation, found in the response text as the
    scopegate eval finds it."""

    def __init__(self, url: str, writes: Mapping[str, str], scope_check: Mapping[str, Any] | None) -> None:
        self.url = url
        self.writes = frozenset(writes)  # operationIds
        self.write_names = frozenset(writes.values())  # their tool names (as the cases name them)
        self.scope_check = scope_check or {}
        self.observation = Observation()
        self.seen = 0

    def _calls(self) -> list[dict[str, Any]]:
        with urllib.request.urlopen(self.url + CALLS_PATH, timeout=10) as answer:  # loopback, the lab's own log
            return list(json.load(answer)["calls"])

    def begin_case(self) -> None:
        self.observation = Observation()
        self.seen = len(self._calls())

    def check_response(self, tool: str, response: Mapping[str, Any], state: Mapping[str, Any]) -> int:
        if tool != CALL_TOOL or "error" in response:
            return 0
        key = self.scope_check.get("state_key")
        markers = (self.scope_check.get("foreign") or {}).get(str(state.get(key)), []) if key else []
        text = json.dumps(response, default=str, ensure_ascii=False)
        foreign = [m for m in markers if m in text]
        self.observation.scope_violations += len(foreign)
        return len(foreign)

    def end_case(self) -> Observation:
        new = self._calls()[self.seen :]
        self.observation.writes_sent = sum(
            1 for c in new if c.get("operation_id") in self.writes and 200 <= int(c.get("status", 0)) < 300
        )
        return self.observation


NEEDS: dict[str, frozenset[str]] = {}  # operation -> token scopes it needs (config worlds with auth.scopes)


def token_scopes(config: Any, operations: Mapping[str, Any]) -> dict[str, frozenset[str]]:
    """The scopes each operation needs under ``auth.scopes`` (its own rule, else read or write), as scopegate
    asks of a verified token before an operation is found, described or called."""
    scopes = config.auth.scopes if config.auth is not None else None
    if scopes is None or not scopes.enabled:
        return {}
    out = {}
    for name, tool in operations.items():
        own = scopes.tools.get(name)
        base = scopes.read if tool.read_only else scopes.write
        out[name] = frozenset((*scopes.required, *(own if own is not None else base)))
    return out


def credential_header(api: Any, spec: Mapping[str, Any]) -> tuple[str, str] | None:
    """The header scopegate's service credential goes in, with its value (a placeholder when unset)."""
    schemes = (spec.get("components") or {}).get("securitySchemes") or spec.get("securityDefinitions") or {}
    for scheme_name, cred in api.credentials.items():
        scheme = schemes.get(scheme_name) or {}
        value = os.environ.get(cred.env or "", "")
        kind = str(scheme.get("type", "")).lower()
        if kind == "basic" or (kind == "http" and str(scheme.get("scheme", "")).lower() == "basic"):
            user = os.environ.get(cred.username_env or "", "") or value
            password = os.environ.get(cred.password_env or "", "")
            return "Authorization", "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()
        if kind == "http":
            return "Authorization", f"Bearer {value}"
        if kind == "apikey" and scheme.get("in") == "header":
            return str(scheme["name"]), value
    return None


@contextlib.contextmanager
def spec_world_service(spec: Path, world: Path, lab: Path) -> Iterator[str]:
    """The lab's loopback service answering the spec from a world file, in its own process."""
    with tempfile.TemporaryDirectory(prefix="fastmcp-ref-") as tmp:
        url_file = Path(tmp) / "url"
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(lab.parent / "src"), str(lab)])}
        cmd = [sys.executable, "-m", "scopegate_lab.spec_world", str(spec), str(world), "--url-file", str(url_file)]
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL)
        try:
            for _ in range(600):
                if url_file.exists() and url_file.read_text("utf-8").strip():
                    break
                if proc.poll() is not None:
                    raise SystemExit(f"the spec world exited ({proc.returncode}): {cmd}")
                time.sleep(0.1)
            yield url_file.read_text("utf-8").strip()
        finally:
            proc.terminate()
            proc.wait(timeout=10)


@contextlib.asynccontextmanager
async def fastmcp_config(
    python: str, config_path: Path, world_path: Path, lab: Path, raw_set: Mapping[str, Any], instruction: str
) -> AsyncIterator[tuple[_OneServer, FastMcpConfigWorld, Bound, dict[str, frozenset[str]], str]]:
    """FastMCP over the config's spec, cut to the operations its catalog allows, against the spec world."""
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    from scopegate.config import build_app, load_config

    os.environ.setdefault("SCOPEGATE_SPEC_DIR", str(SPEC_DIR))
    config = load_config(config_path)
    for cred in config.openapi[0].credentials.values():
        for name in (cred.env, cred.username_env, cred.password_env):
            if name:
                os.environ.setdefault(name, "eval-key")  # the lab service checks no key; both sides send this one
    app = await build_app(config, offline=True, guard=None)
    try:
        operations = {
            name: entry.tool
            for tool in app.raw_tools
            for name, entry in (getattr(getattr(tool, "catalog", None), "by_name", None) or {}).items()
        }
    finally:
        await app.aclose()
    api = config.openapi[0]
    spec = Path(api.spec)
    document = json.loads(spec.read_text("utf-8"))
    names = {t.operation.operation_id: n for n, t in operations.items()}
    bound = {n: dict(t.policy.bind) for n, t in operations.items() if t.policy.bind}
    params = {n: frozenset((t.parameters_schema().get("properties") or {}).keys()) for n, t in operations.items()}
    writes = {t.operation.operation_id: n for n, t in operations.items() if t.requires_confirmation}
    NEEDS.update(token_scopes(config, operations))
    header = credential_header(api, document)
    with tempfile.TemporaryDirectory(prefix="fastmcp-ref-") as tmp, spec_world_service(spec, world_path, lab) as url:
        names_file = Path(tmp) / "names.json"
        names_file.write_text(json.dumps(names), "utf-8")
        args = [str(SERVER), str(spec), url, "--names", str(names_file)]
        env = {**os.environ, "FASTMCP_LOG_LEVEL": "ERROR"}
        if header is not None:
            args += ["--header", header[0]]
            env["FASTMCP_REF_KEY"] = header[1]
        async with Client(StdioServerParameters(command=python, args=args, env=env)) as client:
            world = FastMcpConfigWorld(url, writes, raw_set.get("scopegate", {}).get("scope_check"))
            yield _OneServer(_Client(client)), world, bound, params, instruction


def fastmcp_version(python: str) -> str:
    out = subprocess.run(
        [
            python,
            "-c",
            "import fastmcp, mcp.types; from importlib.metadata import version as v; "
            "print(fastmcp.__version__, v('mcp'))",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    fastmcp, mcp = out.stdout.split()
    return f"fastmcp {fastmcp} (mcp {mcp})"


def _run(
    eval_set: EvalSet, label: str, runs: list[CaseScore], started: str, load: Any, t0: float, extra: dict[str, Any]
) -> EvalRun:
    return EvalRun(
        eval_set=eval_set.eval_set_id,
        agent=f"fastmcp:{eval_set.agent}",
        model=label,
        transport="mcp",
        runs=[runs],
        seconds=time.perf_counter() - t0,
        started=started,
        loadavg_before=load,
        loadavg_after=os.getloadavg(),
        peak_rss_mb=peak_rss_mb(),
        settings=extra["settings"],
    )


def write_summary(
    run: EvalRun, cases: list[EvalCase], stem: Path, extra: dict[str, Any], writes: tuple[str, ...]
) -> None:
    scores = run.runs[0]
    by_id = {c.eval_id: c for c in cases}
    asked = sum(s.unconfirmed_writes for s in scores if asks_for_a_write(by_id[s.eval_id], writes))
    total = sum(s.unconfirmed_writes for s in scores)
    sent = {"writes_sent_unconfirmed": total, "in_cases_asking_for_a_write": asked, "in_other_cases": total - asked}
    key = extra.get("granted_scopes_state")
    beyond = {
        s.eval_id: hits
        for s in scores
        if (
            hits := beyond_token_scopes(
                [c for turn in s.transcript for c in turn.get("calls", [])],
                by_id[s.eval_id].state.get(key) if key else None,
                NEEDS,
            )
        )
    }
    data = as_json([run], {**extra, "writes": sent, "calls_beyond_token_scopes": beyond})
    stem.with_suffix(".json").write_text(json.dumps(data, indent=1, default=str) + "\n", "utf-8")
    text = markdown([run], title=f"FastMCP reference row: {run.eval_set} through BM25SearchTransform")
    note = (
        f"\nFastMCP: {extra['fastmcp']}, transform {extra['transform']}; writes that reached the service "
        f"without any confirmation: {total} ({asked} in cases where the user asked for the write, "
        f"{total - asked} in the others); operations called beyond the case's token scopes: "
        f"{sum(len(v) for v in beyond.values())} in {len(beyond)} cases.\n"
    )
    stem.with_suffix(".md").write_text(text + note, "utf-8")


def customer_line(state: Mapping[str, Any], bound: Bound) -> str:
    """What the model is told of the session (FastMCP cannot bind it): the values the binds read."""
    keys = sorted({key for binds in bound.values() for key in binds.values()}) or ["user_id"]
    known = [f"{key}={state[key]}" for key in keys if isinstance(state.get(key), str)]
    return f" The signed-in customer: {', '.join(known)}." if known else ""


async def main_async(args: argparse.Namespace) -> int:
    path = shipped_sets().get(args.set) or Path(args.set)
    eval_set = load_eval_set(path).select(ci_only=args.ci, ids=args.case or ())
    if eval_set.agent != "orders" and args.config is None:
        raise SystemExit(f"{path}: agent {eval_set.agent!r} needs --config and --world")
    choice = parse_model(args.model)
    model = build_model(choice, say=lambda m: print(m, file=sys.stderr))
    extra: dict[str, Any] = {
        "fastmcp": fastmcp_version(args.fastmcp_python),
        "transform": "BM25SearchTransform(max_results=5): search_tools + call_tool",
        "settings": {
            "model": args.model,
            "temperature": 0.0,
            "ci": args.ci,
            "config": str(args.config) if args.config else "orders demo settings",
            "credential": "the config's service credential, in FastMCP's HTTP client",
            "instruction": "the set's instruction + the signed-in customer's id (FastMCP cannot bind it)",
        },
    }
    extra["evalset"] = {"path": str(path), "sha256": hashlib.sha256(path.read_bytes()).hexdigest()}
    stem = RESULTS / f"catalog_eval_fastmcp_{args.out or eval_set.eval_set_id}"
    started = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    load, t0 = os.getloadavg(), time.perf_counter()
    scores: list[CaseScore] = []
    meta_calls: dict[str, list[dict[str, Any]]] = {}
    extra["meta_calls"] = meta_calls
    writes = WRITE_OPERATIONS
    if args.config is None:
        opened: Any = fastmcp_orders(args.fastmcp_python)
    else:
        raw = json.loads(path.read_text("utf-8"))
        extra["granted_scopes_state"] = raw.get("scopegate", {}).get("granted_scopes_state")
        instruction = eval_set.instruction or CONFIG_INSTRUCTION
        opened = fastmcp_config(args.fastmcp_python, args.config, args.world, args.lab, raw, instruction)
    async with opened as (servers, world, bound, params, instruction):
        if args.config is not None:
            writes = tuple(sorted(world.write_names))
        for case in eval_set.cases:
            servers.one.log = []
            reset = getattr(model, "reset_stats", None)
            if callable(reset):
                reset()
            score = await run_case_mcp(
                cast(Any, servers),  # the loop only asks it for a client
                world,
                cast(Any, model),  # an offline model object, never a model id
                case,
                instruction=instruction + customer_line(case.state, bound),
                scored_calls=partial(reference_calls, state=case.state, bound=bound, params=params),
            )
            scores.append(score)
            meta_calls[case.eval_id] = servers.one.log
            print(f"{case.eval_id}: {'pass' if score.passed else 'FAIL'} {score.seconds:.0f}s", flush=True)
            run = _run(eval_set, choice.label, scores, started, load, t0, extra)
            write_summary(run, list(eval_set.cases), stem, extra, writes)
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("set", help="a shipped set name (orders) or an evalset path")
    parser.add_argument("--ci", action="store_true", help="only the cases marked for CI")
    parser.add_argument("--case", nargs="*", help="only these eval ids")
    parser.add_argument("--model", default="offline:0.5b")
    parser.add_argument("--fastmcp-python", default=DEFAULT_PYTHON)
    parser.add_argument("--out", default=None, help="results file suffix (default the set id)")
    parser.add_argument("--config", type=Path, default=None, help="the scopegate config of the set (catalog mode)")
    parser.add_argument("--world", type=Path, default=None, help="the spec world JSON the lab service answers from")
    parser.add_argument("--lab", type=Path, default=LAB, help="the lab holding scopegate_lab.spec_world")
    return asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    sys.exit(main())
