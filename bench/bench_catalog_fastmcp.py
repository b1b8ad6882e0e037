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
import contextlib
import datetime as dt
import json
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Mapping
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
from scopegate.evals.worlds import ORDERS_INSTRUCTION, WRITE_OPERATIONS, OrdersWorld
from scopegate_lab.fastmcp_reference import CALL_TOOL, Bound, asks_for_a_write, model_view, reference_calls

RESULTS = Path(__file__).resolve().parent / "results"
SERVER = Path(__file__).resolve().parent / "fastmcp_reference" / "server.py"
DEFAULT_PYTHON = "/work/venvs/fastmcp/bin/python"
LOGGED_CHARS = 600
CUSTOMER_LINE = " The signed-in customer's id is {user_id}."


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
        self.log.append({"tool": name, "args": dict(args), "response": json.dumps(view, default=str)[:LOGGED_CHARS]})
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
async def fastmcp_orders(python: str) -> AsyncIterator[tuple[_OneServer, FastMcpOrdersWorld, Bound, str]]:
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
            yield _OneServer(_Client(client)), world, bound, ORDERS_INSTRUCTION + CUSTOMER_LINE


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


def write_summary(run: EvalRun, cases: list[EvalCase], stem: Path, extra: dict[str, Any]) -> None:
    scores = run.runs[0]
    by_id = {c.eval_id: c for c in cases}
    asked = sum(s.unconfirmed_writes for s in scores if asks_for_a_write(by_id[s.eval_id], WRITE_OPERATIONS))
    total = sum(s.unconfirmed_writes for s in scores)
    writes = {"writes_sent_unconfirmed": total, "in_cases_asking_for_a_write": asked, "in_other_cases": total - asked}
    data = as_json([run], {**extra, "writes": writes})
    stem.with_suffix(".json").write_text(json.dumps(data, indent=1, default=str) + "\n", "utf-8")
    text = markdown([run], title=f"FastMCP reference row: {run.eval_set} through BM25SearchTransform")
    note = (
        f"\nFastMCP: {extra['fastmcp']}, transform {extra['transform']}; writes that reached the service "
        f"without any confirmation: {total} ({asked} in cases where the user asked for the write, "
        f"{total - asked} in the others).\n"
    )
    stem.with_suffix(".md").write_text(text + note, "utf-8")


async def main_async(args: argparse.Namespace) -> int:
    path = shipped_sets().get(args.set) or Path(args.set)
    eval_set = load_eval_set(path).select(ci_only=args.ci, ids=args.case or ())
    if eval_set.agent != "orders":
        raise SystemExit(f"{path}: only the orders world is wired here (agent {eval_set.agent!r})")
    choice = parse_model(args.model)
    model = build_model(choice, say=lambda m: print(m, file=sys.stderr))
    extra = {
        "fastmcp": fastmcp_version(args.fastmcp_python),
        "transform": "BM25SearchTransform(max_results=5): search_tools + call_tool",
        "settings": {
            "model": args.model,
            "temperature": 0.0,
            "ci": args.ci,
            "credential": "staff key (X-Staff-Key)",
            "instruction": "orders instruction + the signed-in customer's id",
        },
    }
    stem = RESULTS / f"catalog_eval_fastmcp_{args.out or eval_set.eval_set_id}"
    started = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    load, t0 = os.getloadavg(), time.perf_counter()
    scores: list[CaseScore] = []
    meta_calls: dict[str, list[dict[str, Any]]] = {}
    extra["meta_calls"] = meta_calls
    async with fastmcp_orders(args.fastmcp_python) as (servers, world, bound, instruction):
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
                instruction=instruction,
                scored_calls=partial(reference_calls, state=case.state, bound=bound),
            )
            scores.append(score)
            meta_calls[case.eval_id] = servers.one.log
            print(f"{case.eval_id}: {'pass' if score.passed else 'FAIL'} {score.seconds:.0f}s", flush=True)
            write_summary(
                _run(eval_set, choice.label, scores, started, load, t0, extra), list(eval_set.cases), stem, extra
            )
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("set", help="a shipped set name (orders) or an evalset path")
    parser.add_argument("--ci", action="store_true", help="only the cases marked for CI")
    parser.add_argument("--case", nargs="*", help="only these eval ids")
    parser.add_argument("--model", default="offline:0.5b")
    parser.add_argument("--fastmcp-python", default=DEFAULT_PYTHON)
    parser.add_argument("--out", default=None, help="results file suffix (default the set id)")
    return asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    sys.exit(main())
