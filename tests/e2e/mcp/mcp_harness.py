"""What the MCP end-to-end tests share: config files, keys and tokens, servers, clients.

Servers run as ``scopegate serve`` subprocesses (the way users run them) or,
where a test needs a special config, as the same ASGI app under uvicorn in a
background thread. Clients are the official SDK's ``mcp.Client``.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import hashlib
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import httpx2
import jwt
import uvicorn
import yaml
from cryptography.hazmat.primitives.asymmetric import rsa
from mcp import Client
from mcp.client.session import ElicitationFnT
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from scopegate.demo.corpus import ticket_spec
from scopegate.examples.orders import SPEC_PATH as ORDERS_SPEC
from scopegate.search.spec import spec_to_dict

ISSUER = "https://login.scopegate.test/"
AUDIENCE = "scopegate-e2e"
KID = "e2e-key-1"
START_TIMEOUT_S = 30.0
MODES = ("legacy", "auto")  # handshake era (2025-11-25) and the default probe (2026-07-28)
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}},
}
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def opaque_token(tenant: str, user: str) -> str:
    return f"sg-e2e-{tenant}-{user}-" + hashlib.sha256(f"{tenant}/{user}".encode()).hexdigest()[:24]


@dataclass
class Keys:
    private: rsa.RSAPrivateKey
    jwks_path: Path

    def mint(self, tenant: str | None, user: str = "u1", groups: list[str] | None = None, **claims: Any) -> str:
        now = int(time.time())
        body: dict[str, Any] = {"iss": ISSUER, "aud": AUDIENCE, "sub": user, "iat": now, "exp": now + 600}
        if tenant is not None:
            body["tenant_id"] = tenant
        if groups is not None:
            body["groups"] = groups
        body.update(claims)
        body = {k: v for k, v in body.items() if v is not None}
        return jwt.encode(body, self.private, algorithm="RS256", headers={"kid": KID})


def make_keys(folder: Path) -> Keys:
    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(private.public_key()))
    jwk.update(kid=KID, alg="RS256", use="sig")
    path = folder / "jwks.json"
    path.write_text(json.dumps({"keys": [jwk]}), "utf-8")
    return Keys(private, path)


def write_token_table(path: Path, entries: list[dict[str, Any]]) -> Path:
    rows = []
    for entry in entries:
        row = {k: v for k, v in entry.items() if k != "token"}
        row["sha256"] = hashlib.sha256(entry["token"].encode()).hexdigest()
        rows.append(row)
    path.write_text(yaml.safe_dump({"tokens": rows}), "utf-8")
    return path


def search_tool_config(backend: str = "local") -> dict[str, Any]:
    """The demo ticket spec as a config entry (exactly what ``ticket_spec()`` builds)."""
    data = spec_to_dict(ticket_spec())
    data.pop("scope_keys")
    return {"backend": backend, **{k: v for k, v in data.items() if v is not None}}


# The orders example's ownership rules: a read owns what it returns, a change owns what getOrder says.
ORDERS_POLICIES: dict[str, dict[str, Any]] = {
    "listOrders": {"bind": {"customer_id": "user_id"}},
    "getOrder": {"ownership": "response.customer_id == state.user_id"},
}
LOOKED_UP = "getOrder(orderId=orderId).customer_id == state.user_id"


def orders_openapi(base_url: str, allow: list[str], **extra: Any) -> dict[str, Any]:
    """An ``openapi:`` entry for the orders example service: ``allow``ed operations with the staff key from
    ``ORDERS_STAFF_KEY`` and each operation's ownership rule (``extra`` adds or replaces keys)."""
    policies = {name: copy.deepcopy(ORDERS_POLICIES.get(name, {"ownership": LOOKED_UP})) for name in allow}
    return {
        "name": "orders",
        "spec": str(ORDERS_SPEC),
        "base_url": base_url,
        "allow": allow,
        "credentials": {"staffKey": {"env": "ORDERS_STAFF_KEY"}},
        "policies": policies,
        **extra,
    }


def write_config(path: Path, **sections: Any) -> Path:
    data = {"version": 1, **sections}
    path.write_text(yaml.safe_dump(data, sort_keys=False), "utf-8")
    return path


@dataclass
class World:
    """Everything a test needs to talk to a real server about a known corpus."""

    folder: Path
    data: Path
    tickets: list[dict[str, Any]]
    owner: dict[str, str]
    keys: Keys
    tokens: dict[str, str]  # tenant -> opaque token
    config: Path

    def jwt(self, tenant: str | None, **claims: Any) -> str:
        return self.keys.mint(tenant, **claims)


# -- servers -----------------------------------------------------------------------------
@dataclass
class ServerProcess:
    """``scopegate serve CONFIG --transport http`` in a subprocess."""

    process: subprocess.Popen[bytes]
    url: str
    base: str
    stderr_path: Path

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)

    def stderr(self) -> str:
        return self.stderr_path.read_text("utf-8", errors="replace")


def scopegate_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "scopegate.cli", *args]


def wait_healthy(base: str, process: subprocess.Popen[bytes] | None, log: Path | None) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"server exited with {process.returncode}: {log.read_text() if log else ''}")
        try:
            if httpx.get(f"{base}/healthz", timeout=1.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"server did not become healthy: {log.read_text() if log else ''}")


def start_http_server(
    config: Path, env: Mapping[str, str] | None = None, *, log_dir: Path, args: tuple[str, ...] = ()
) -> ServerProcess:
    port = free_port()
    log = log_dir / f"server-{port}.log"
    handle = open(log, "wb")  # noqa: SIM115 - owned by the process for its lifetime
    process = subprocess.Popen(
        scopegate_command("serve", str(config), "--transport", "http", "--port", str(port), *args),
        stdout=subprocess.DEVNULL,
        stderr=handle,
        env={**os.environ, **(env or {})},
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(base, process, log)
    except BaseException:
        process.kill()
        raise
    return ServerProcess(process, f"{base}/mcp", base, log)


@contextlib.contextmanager
def serving_in_thread(run: Callable[[], None], stop: Callable[[], None], port: int) -> Iterator[str]:
    """Run a server (``run``) in a background thread until ``stop``; yields its base URL once healthy."""
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(base, None, None)
        yield base
    finally:
        stop()
        thread.join(timeout=15)


@contextlib.contextmanager
def in_thread_http_server(asgi: Any) -> Iterator[str]:
    """Serve an ASGI app on a free loopback port in a background thread; yields the base URL."""
    port = free_port()
    config = uvicorn.Config(asgi, host="127.0.0.1", port=port, log_level="warning", lifespan="on", access_log=False)
    server = uvicorn.Server(config)

    def stop() -> None:
        server.should_exit = True

    with serving_in_thread(server.run, stop, port) as base:
        yield base


# -- clients -----------------------------------------------------------------------------
@contextlib.asynccontextmanager
async def http_client(
    url: str,
    token: str | None,
    *,
    mode: str = "auto",
    elicitation: ElicitationFnT | None = None,
    headers: Mapping[str, str] | None = None,
) -> AsyncIterator[Client]:
    headers = {**(headers or {}), **({"Authorization": f"Bearer {token}"} if token is not None else {})}
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30.0)) as http:
        transport = streamable_http_client(url, http_client=http)
        async with Client(transport, mode=mode, elicitation_callback=elicitation) as client:
            yield client


@contextlib.asynccontextmanager
async def stdio_client(
    config: Path, env: Mapping[str, str], *, mode: str = "auto", elicitation: ElicitationFnT | None = None
) -> AsyncIterator[Client]:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "scopegate.cli", "serve", str(config)], env={**os.environ, **env}
    )
    async with Client(params, mode=mode, elicitation_callback=elicitation) as client:
        yield client


def result_ids(structured: Mapping[str, Any]) -> list[str]:
    """Every document id in a search or fetch result."""
    ids = [str(r.get("ticket_id")) for r in structured.get("results", []) or []]
    if isinstance(structured.get("document"), Mapping):
        ids.append(str(structured["document"].get("ticket_id")))
    return ids


async def gather_limited(coros: list[Any], limit: int) -> list[Any]:
    sem = asyncio.Semaphore(limit)

    async def one(coro: Any) -> Any:
        async with sem:
            return await coro

    return await asyncio.gather(*(one(c) for c in coros))
