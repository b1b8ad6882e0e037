"""The real ``adk api_server`` (google-adk 2.13) on 127.0.0.1, with an agents folder the test writes.

Agents reach shared test objects (the embedded index, identities, tokens,
signing keys, the orders service URL) through ``sg_support``, a module on the
server's ``PYTHONPATH``, configured through environment variables. The client
side speaks the server's REST API with httpx, as any ADK client does.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

START_TIMEOUT_S = 60.0
TENANTS = ("acme", "globex", "initech", "umbrella")
FOREIGN_ID = "GLO-00001"  # the model asks for this ticket by id in every session

SUPPORT = '''
"""Shared by the test agents (on the server's PYTHONPATH)."""
import functools
import hashlib
import os

from scopegate.backends.embedded import EmbeddedBackend
from scopegate.demo.corpus import ticket_spec
from scopegate.examples.orders.data import ALICE, BOB
from scopegate.identity import Identity, KeyRing
from scopegate.testing import ScriptedLlm, call, final_text

TENANTS = ("acme", "globex", "initech", "umbrella")
DIRECTORY = {f"user-{t}": Identity(t, f"user-{t}") for t in TENANTS}
ORDERS_DIRECTORY = {ALICE: Identity("shop", ALICE), BOB: Identity("shop", BOB)}


def token(tenant):
    return f"tok-{tenant}-" + hashlib.sha256(tenant.encode()).hexdigest()[:20]


TOKENS = {token(t): Identity(t, f"user-{t}") for t in TENANTS}


@functools.cache
def backend():
    return EmbeddedBackend(ticket_spec(), os.environ["SG_TEST_INDEX"])


def ring():
    return KeyRing.parse(os.environ["SG_TEST_KEYS"])


def search_model():
    """Every invocation: a search, a fetch of another tenant's ticket by id, an answer."""
    steps = [call("search_tickets", query="refund failed"), call("get_ticket", id="GLO-00001"), final_text("done")]
    return ScriptedLlm(steps, per_invocation=True)
'''

HEADER = """
from google.adk.agents import LlmAgent
from google.adk.apps import App

import sg_support as s
from scopegate.adapters.adk import adk_search_tools
from scopegate.adapters.adk_scope import ScopeBindingPlugin, ScopePolicy
"""

AGENTS: dict[str, str] = {
    # A trusted binding: identity from a server-side directory keyed by the session's user id.
    "bound_search": """
root_agent = LlmAgent(name="support", model=s.search_model(), instruction="Use the tools.",
                      tools=adk_search_tools(s.backend().spec, s.backend(), scope_policy=ScopePolicy.binding()))
app = App(name="bound_search", root_agent=root_agent, plugins=[ScopeBindingPlugin(s.DIRECTORY)])
""",
    # A trusted binding: identity from a bearer token presented for each run.
    "token_search": """
from scopegate.identity import TokenSource

root_agent = LlmAgent(name="support", model=s.search_model(), instruction="Use the tools.",
                      tools=adk_search_tools(s.backend().spec, s.backend(), scope_policy=ScopePolicy.binding()))
source = TokenSource(s.TOKENS.get, require_user_match=True)
app = App(name="token_search", root_agent=root_agent, plugins=[ScopeBindingPlugin(source)])
""",
    # Tamper-evident state: tools verify the signed scope on every call; no plugin.
    "signed_search": """
root_agent = LlmAgent(name="support", model=s.search_model(), instruction="Use the tools.",
                      tools=adk_search_tools(s.backend().spec, s.backend(), scope_policy=ScopePolicy.signed(s.ring())))
""",
    # The unsafe default: scope from client-writable state (warned at the first invocation).
    "open_search": """
root_agent = LlmAgent(name="support", model=s.search_model(), instruction="Use the tools.",
                      tools=adk_search_tools(s.backend().spec, s.backend()))
""",
    # The OpenAPI toolset over the local orders service, with the binding and ADK's confirmation flow.
    "orders_bound": """
import os

from scopegate.adapters.adk_openapi import OpenApiToolset
from scopegate.demo.orders_demo import NEW_ADDRESS, orders_settings
from scopegate.testing import ScriptedLlm, Turn, call, final_text

toolset = OpenApiToolset(orders_settings(os.environ["SG_TEST_ORDERS_URL"]), scope_policy=ScopePolicy.binding())
steps = [call("getOrder", orderId="ord_2001"),
         Turn(calls=(("updateShippingAddress", {"orderId": "ord_1001", **NEW_ADDRESS}),)),
         final_text("done")]
root_agent = LlmAgent(name="orders", model=ScriptedLlm(steps, per_invocation=True), instruction="Help.",
                      tools=[toolset])
app = App(name="orders_bound", root_agent=root_agent, plugins=[ScopeBindingPlugin(s.ORDERS_DIRECTORY)])
""",
    # Keeps searching until a tool says CALL_LIMIT: the guard comes only from --extra_plugins GuardPlugin.
    "looping": """
from scopegate.testing import ScriptedLlm, call, final_text

def step(responses):
    if any(r.get("error_code") == "CALL_LIMIT" for _, r in responses):
        return final_text("limit reached")
    return call("search_tickets", query="refund failed")

root_agent = LlmAgent(name="looping", model=ScriptedLlm([step] * 8, per_invocation=True), instruction="Search.",
                      tools=adk_search_tools(s.backend().spec, s.backend(), scope_policy=ScopePolicy.binding()))
app = App(name="looping", root_agent=root_agent, plugins=[ScopeBindingPlugin(s.DIRECTORY)])
""",
}


def token(tenant: str) -> str:
    return f"tok-{tenant}-" + hashlib.sha256(tenant.encode()).hexdigest()[:20]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def write_agents(root: Path, agents: Mapping[str, str]) -> tuple[Path, Path]:
    """The agents folder and the support folder (for PYTHONPATH)."""
    support = root / "support"
    support.mkdir(parents=True, exist_ok=True)
    (support / "sg_support.py").write_text(textwrap.dedent(SUPPORT), encoding="utf-8")
    agents_dir = root / "agents"
    for name, body in agents.items():
        folder = agents_dir / name
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "__init__.py").write_text("from . import agent  # noqa: F401\n", encoding="utf-8")
        (folder / "agent.py").write_text(HEADER + body, encoding="utf-8")
    return agents_dir, support


@dataclass
class AdkServer:
    base_url: str
    process: subprocess.Popen[bytes]
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")


@contextmanager
def adk_api_server(
    agents_dir: Path, support: Path, *, env: Mapping[str, str], extra_args: tuple[str, ...] = ()
) -> Iterator[AdkServer]:
    """``adk api_server`` on a free loopback port until the block ends; its output goes to a log file."""
    port = free_port()
    adk = Path(sys.executable).with_name("adk")
    command = [str(adk), "api_server", "--host", "127.0.0.1", "--port", str(port),
               "--session_service_uri", "memory://", "--artifact_service_uri", "memory://",
               *extra_args, str(agents_dir)]  # fmt: skip
    inherited = {k: v for k, v in os.environ.items() if not k.startswith(("SCOPEGATE_SCOPE", "SCOPEGATE_IDENTITY"))}
    full_env = {**inherited, **env, "PYTHONPATH": os.pathsep.join([str(support), os.environ.get("PYTHONPATH", "")])}
    log_path = agents_dir.parent / f"server-{port}.log"
    with open(log_path, "wb") as log_file:
        process = subprocess.Popen(command, stdout=log_file, stderr=subprocess.STDOUT, env=full_env)
    server = AdkServer(f"http://127.0.0.1:{port}", process, log_path)
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"adk api_server exited with {process.returncode}:\n{server.log()[-3000:]}")
            try:
                if httpx.get(server.base_url + "/list-apps", timeout=1.0).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"adk api_server did not start in {START_TIMEOUT_S:.0f}s:\n{server.log()[-3000:]}")
            time.sleep(0.1)
        yield server
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


# -- the client side ------------------------------------------------------------------------
def text_message(text: str) -> dict[str, Any]:
    return {"role": "user", "parts": [{"text": text}]}


def confirmation_message(call_id: str, confirmed: bool) -> dict[str, Any]:
    response = {"id": call_id, "name": "adk_request_confirmation", "response": {"confirmed": confirmed}}
    return {"role": "user", "parts": [{"functionResponse": response}]}


def function_responses(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        part["functionResponse"].get("response") or {}
        for event in events
        for part in (event.get("content") or {}).get("parts") or []
        if "functionResponse" in part
    ]


def function_calls(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        part["functionCall"]
        for event in events
        for part in (event.get("content") or {}).get("parts") or []
        if "functionCall" in part
    ]


def sse_events(body: str) -> list[dict[str, Any]]:
    return [json.loads(line[5:]) for line in body.splitlines() if line.startswith("data:")]


async def create_session(
    client: httpx.AsyncClient, app: str, user: str, *, state: Mapping[str, Any] | None = None,
    session_id: str | None = None,
) -> str:  # fmt: skip
    body: dict[str, Any] = {}
    if state is not None:
        body["state"] = dict(state)
    if session_id is not None:
        body["session_id"] = session_id
    response = await client.post(f"/apps/{app}/users/{user}/sessions", json=body)
    response.raise_for_status()
    return str(response.json()["id"])


async def run(
    client: httpx.AsyncClient, app: str, user: str, session: str, *, message: dict[str, Any] | None = None,
    state_delta: Mapping[str, Any] | None = None, sse: bool = False,
) -> list[dict[str, Any]]:  # fmt: skip
    body: dict[str, Any] = {"app_name": app, "user_id": user, "session_id": session,
                            "new_message": message or text_message("help")}  # fmt: skip
    if state_delta is not None:
        body["state_delta"] = dict(state_delta)
    response = await client.post("/run_sse" if sse else "/run", json=body)
    response.raise_for_status()
    return sse_events(response.text) if sse else list(response.json())


async def patch_state(client: httpx.AsyncClient, app: str, user: str, session: str, delta: Mapping[str, Any]) -> None:
    response = await client.patch(f"/apps/{app}/users/{user}/sessions/{session}", json={"state_delta": dict(delta)})
    response.raise_for_status()


async def session_state(client: httpx.AsyncClient, app: str, user: str, session: str) -> dict[str, Any]:
    response = await client.get(f"/apps/{app}/users/{user}/sessions/{session}")
    response.raise_for_status()
    return dict(response.json().get("state") or {})
