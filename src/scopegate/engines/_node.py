"""What the local OpenSearch and Elasticsearch test nodes share.

A node runs in the background, in a session of its own, and records itself
in plain files under its state folder: ``node.pid``, ``http.port``, ``url``
(and ``node.log`` for the JVM's output). :class:`LocalNode` starts, finds,
waits for and stops such a node; a subclass says how to build it, how to
prepare its folders and which command starts it. :func:`add_node_commands`
and :func:`run_cli` give every engine the same ``start|stop|status|url|build``
command line.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

import httpx

from scopegate.errors import EngineNodeError

STATE_FILES = ("node.pid", "http.port", "url")


def repo_root() -> Path:
    """The checkout this module runs from (``src/scopegate/engines`` -> repo)."""
    return Path(__file__).resolve().parents[3]


def _env_path(name: str, default: Path) -> Path:
    value = os.environ.get(name)
    return Path(value).expanduser().resolve() if value else default


def find_java() -> str:
    """``SCOPEGATE_JAVA``, else ``$JAVA_HOME/bin/java``, else ``java`` on PATH."""
    explicit = os.environ.get("SCOPEGATE_JAVA")
    if explicit:
        return explicit
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").exists():
        return str(Path(home) / "bin" / "java")
    found = shutil.which("java")
    if not found:
        raise EngineNodeError("no java executable found (set SCOPEGATE_JAVA or JAVA_HOME; Java 17 is required)")
    return found


def free_port() -> int:
    """A port that was free on 127.0.0.1 a moment ago (the node re-checks by binding it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie child still answers kill(0); treat it as gone.
    with contextlib.suppress(OSError):
        stat = Path(f"/proc/{pid}/stat").read_text()
        if stat.rsplit(")", 1)[-1].split()[0] == "Z":
            return False
    return True


def _cmdline(pid: int) -> list[str] | None:
    """The arguments process ``pid`` runs with, or None when they cannot be read."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    return [part.decode(errors="replace") for part in raw.split(b"\0")]


@dataclass(frozen=True)
class NodeStatus:
    running: bool
    pid: int | None
    url: str | None
    health: str | None
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"running": self.running, "pid": self.pid, "url": self.url, "health": self.health, "detail": self.detail}


class NodeLayout:
    """Base of an engine's config (a dataclass): what :class:`LocalNode` needs, and the state folder layout."""

    state_dir: Path
    heap: str
    java: str | None

    @property
    def home(self) -> Path:
        return self.state_dir / "home"

    @property
    def log_file(self) -> Path:
        return self.state_dir / "node.log"


ConfigT = TypeVar("ConfigT", bound=NodeLayout)


def apply_args(config: ConfigT, args: argparse.Namespace) -> ConfigT:
    """``config`` changed by the command line's ``--state-dir`` and ``--heap``."""
    if getattr(args, "state_dir", None):
        config.state_dir = Path(args.state_dir).resolve()
    if getattr(args, "heap", None):
        config.heap = args.heap
    return config


class LocalNode(ABC, Generic[ConfigT]):
    """Manage one local node. Every method is safe to call twice."""

    url_env = ""
    label = "engine"  # in messages: "<label> at <url> not green ..."
    start_timeout_s = 120.0  # default wait for green health
    start_attempts = 3  # tries with a fresh free port each (1 when the port is pinned)
    not_built_message = "the node is not built (run with build enabled)"
    poll_s = 0.25

    def __init__(self, config: ConfigT) -> None:
        self.config = config
        self._proc: subprocess.Popen[bytes] | None = None

    # -- what an engine provides ------------------------------------------
    @abstractmethod
    def is_built(self) -> bool: ...

    @abstractmethod
    def build(self, *, force: bool = False, timeout_s: float = 900.0) -> bool:
        """Build or fetch the node unless it is up to date. Returns True when it did."""

    @abstractmethod
    def _is_our_process(self, pid: int) -> bool:
        """Whether ``pid`` (alive) is this node, not an unrelated process that reused the pid."""

    @abstractmethod
    def _command(self, port: int) -> tuple[list[str], dict[str, str] | None]:
        """The command line (and environment, None to inherit) that runs the node on ``port``."""

    def _exit_message(self, code: int) -> str:
        return f"{self.label} exited during start (status {code})"

    def _prepare(self, *, clean: bool) -> None:
        """Make the state folders (``clean``: wipe ``home`` first)."""
        cfg = self.config
        cfg.state_dir.mkdir(parents=True, exist_ok=True)
        if clean and cfg.home.exists():
            shutil.rmtree(cfg.home)
        (cfg.home / "tmp").mkdir(parents=True, exist_ok=True)

    # -- state files -----------------------------------------------------
    def _state_file(self, name: str) -> Path:
        return self.config.state_dir / name

    def _read_int(self, name: str) -> int | None:
        try:
            return int(self._state_file(name).read_text().strip())
        except (OSError, ValueError):
            return None

    def pid(self) -> int | None:
        pid = self._read_int("node.pid")
        if pid is None or not _pid_alive(pid) or not self._is_our_process(pid):
            return None
        return pid

    def url(self) -> str | None:
        port = self._read_int("http.port")
        return f"http://127.0.0.1:{port}" if port else None

    def _clear_state(self) -> None:
        for name in STATE_FILES:
            self._state_file(name).unlink(missing_ok=True)

    # -- lifecycle -------------------------------------------------------
    def start(
        self,
        *,
        wait: bool = True,
        timeout_s: float | None = None,
        clean: bool = False,
        http_port: int | None = None,
        build: bool = True,
    ) -> str:
        """Start the node in the background (or reuse a running one) and return its URL.

        ``clean`` wipes the data folder first. ``http_port`` pins the port (a
        restart keeps its URL that way); otherwise a free port is chosen.
        ``timeout_s`` defaults to :attr:`start_timeout_s`.
        """
        timeout = self.start_timeout_s if timeout_s is None else timeout_s
        running = self.pid()
        if running is not None:
            url = self.url()
            if url is None:
                raise EngineNodeError(f"node pid {running} is running but its port is unknown; stop it first")
            if wait:
                self.wait_green(url, timeout_s=timeout, pid=running)
            return url
        if build:
            self.build()
        elif not self.is_built():
            raise EngineNodeError(self.not_built_message)
        self._prepare(clean=clean)
        self._clear_state()
        attempts = 1 if http_port else self.start_attempts
        last_error: EngineNodeError | None = None
        for _ in range(attempts):
            port = http_port or free_port()
            try:
                return self._launch(port, wait=wait, timeout_s=timeout)
            except EngineNodeError as exc:  # e.g. the port was taken between probe and bind
                last_error = exc
                self._clear_state()
        assert last_error is not None
        raise last_error

    def _launch(self, port: int, *, wait: bool, timeout_s: float) -> str:
        cmd, env = self._command(port)
        with self.config.log_file.open("ab") as log:
            log.write(f"\n--- start {time.strftime('%Y-%m-%dT%H:%M:%S')} port {port}\n".encode())
            log.flush()
            # A session of its own: the node outlives the CLI that started it and
            # ignores the terminal's Ctrl-C; stop() ends it.
            proc = subprocess.Popen(
                cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True, env=env
            )
        self._proc = proc
        self._state_file("node.pid").write_text(f"{proc.pid}\n")
        self._state_file("http.port").write_text(f"{port}\n")
        url = f"http://127.0.0.1:{port}"
        self._state_file("url").write_text(url + "\n")
        if wait:
            try:
                self.wait_green(url, timeout_s=timeout_s, pid=proc.pid)
            except EngineNodeError:
                self._abort_start(proc.pid)
                raise
        return url

    def _abort_start(self, pid: int) -> None:
        """End a node that did not get green in time."""
        self._terminate(pid, grace_s=5.0)

    def _exit_code(self, pid: int) -> int | None:
        if self._proc is not None and self._proc.pid == pid:
            return self._proc.poll()
        return None if _pid_alive(pid) else -1

    def log_tail(self, lines: int = 30) -> str:
        try:
            text = self.config.log_file.read_text(errors="replace")
        except OSError:
            return ""
        current = text.rsplit("\n--- start ", 1)[-1]  # only this run's output
        return "\n".join(current.strip().splitlines()[-lines:])

    def wait_green(self, url: str, *, timeout_s: float | None = None, pid: int | None = None) -> None:
        """Wait until cluster health is green, or raise with the node's log tail."""
        timeout = self.start_timeout_s if timeout_s is None else timeout_s
        deadline = time.monotonic() + timeout
        last = "no answer yet"
        with httpx.Client(timeout=httpx.Timeout(5.0, connect=1.0)) as client:
            while time.monotonic() < deadline:
                if pid is not None:
                    code = self._exit_code(pid)
                    if code is not None:
                        raise EngineNodeError(f"{self._exit_message(code)}:\n{self.log_tail()}")
                try:
                    resp = client.get(f"{url}/_cluster/health", params={"wait_for_status": "green", "timeout": "2s"})
                    if resp.status_code == 200 and resp.json().get("status") == "green":
                        return
                    last = f"HTTP {resp.status_code}: {resp.text[:200]}"
                except httpx.HTTPError as exc:
                    last = type(exc).__name__
                time.sleep(self.poll_s)
        raise EngineNodeError(f"{self.label} at {url} not green within {timeout:.0f}s ({last}):\n{self.log_tail()}")

    def _terminate(self, pid: int, *, grace_s: float, kill: bool = False) -> None:
        """SIGTERM (SIGKILL with ``kill``), wait up to ``grace_s``, then SIGKILL."""
        if kill:
            os.kill(pid, signal.SIGKILL)
            grace_s = 10.0
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline:
            if self._proc is not None and self._proc.pid == pid:
                if self._proc.poll() is not None:
                    return
            elif not _pid_alive(pid):
                return
            time.sleep(0.05)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        if self._proc is not None and self._proc.pid == pid:
            self._proc.wait(timeout=10)

    def stop(self, *, grace_s: float = 30.0, kill: bool = False) -> bool:
        """Stop the node (SIGTERM, then SIGKILL after ``grace_s``). Returns True if one was running."""
        pid = self.pid()
        if pid is None:
            self._clear_state()
            return False
        self._terminate(pid, grace_s=grace_s, kill=kill)
        self._clear_state()
        self._proc = None
        return True

    def status(self, *, timeout_s: float = 2.0) -> NodeStatus:
        pid = self.pid()
        url = self.url()
        if pid is None:
            return NodeStatus(False, None, None, None, "not running")
        if url is None:
            return NodeStatus(True, pid, None, None, "port unknown")
        try:
            resp = httpx.get(f"{url}/_cluster/health", timeout=timeout_s)
            health = str(resp.json().get("status")) if resp.status_code == 200 else None
            detail = "" if health else f"HTTP {resp.status_code}"
        except (httpx.HTTPError, ValueError) as exc:
            health, detail = None, f"no answer: {type(exc).__name__}"
        return NodeStatus(True, pid, url, health, detail)


# -- command line ---------------------------------------------------------
NodeFactory = Callable[[argparse.Namespace], Any]


def cmd_start(args: argparse.Namespace) -> int:
    node = args.node_factory(args)
    began = time.monotonic()
    try:
        url = node.start(wait=args.wait, timeout_s=args.timeout, clean=args.clean, http_port=args.port)
    except EngineNodeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"{node.url_env}={url}")
    print(f"node ready at {url} in {time.monotonic() - began:.1f}s", file=sys.stderr)
    return 0


def cmd_stop(args: argparse.Namespace) -> int:
    node = args.node_factory(args)
    was_running = node.stop(grace_s=args.timeout)
    print("stopped" if was_running else "not running")
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    status = args.node_factory(args).status()
    if args.json:
        print(json.dumps(status.to_dict()))
    else:
        print(f"running={status.running} pid={status.pid} url={status.url} health={status.health} {status.detail}")
    return 0 if status.running and status.health in ("green", "yellow") else 1


def cmd_url(args: argparse.Namespace) -> int:
    node = args.node_factory(args)
    url = node.url() if node.pid() is not None else None
    if url is None:
        print("error: no running node", file=sys.stderr)
        return 1
    print(url)
    return 0


def cmd_build(args: argparse.Namespace) -> int:
    node = args.node_factory(args)
    began = time.monotonic()
    try:
        built = node.build(force=args.force)
    except EngineNodeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"built in {time.monotonic() - began:.1f}s" if built else "up to date")
    return 0


def add_node_commands(parser: argparse.ArgumentParser, node_factory: NodeFactory, engine_label: str) -> None:
    """Add ``start|stop|status|url|build`` under ``parser``; ``node_factory(args)`` makes the node."""
    parser.set_defaults(node_factory=node_factory)
    sub = parser.add_subparsers(dest="node_command", required=True, metavar="COMMAND")

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--state-dir",
            help=f"folder for the {engine_label} node's data, logs, pid and port files (default under .cache/)",
        )

    start = sub.add_parser("start", help="build the launcher if needed and start a local node in the background")
    common(start)
    start.add_argument(
        "--wait", action=argparse.BooleanOptionalAction, default=True, help="wait for green health (default: yes)"
    )
    start.add_argument("--timeout", type=float, default=120.0, help="seconds to wait for green health")
    start.add_argument("--clean", action="store_true", help="delete the node's data folder before starting")
    start.add_argument("--port", type=int, default=None, help="HTTP port (default: a free port)")
    start.add_argument("--heap", default=None, help="JVM heap, e.g. 1g (default 1g or $SCOPEGATE_OPENSEARCH_HEAP)")
    start.set_defaults(func=cmd_start)

    stop = sub.add_parser("stop", help="stop the local node (SIGTERM, then SIGKILL)")
    common(stop)
    stop.add_argument("--timeout", type=float, default=30.0, help="seconds to wait before SIGKILL")
    stop.set_defaults(func=cmd_stop)

    status = sub.add_parser("status", help="show whether the node runs, its URL and cluster health")
    common(status)
    status.add_argument("--json", action="store_true", help="print the status as JSON")
    status.set_defaults(func=cmd_status)

    url = sub.add_parser("url", help="print the running node's URL (exit 1 if none)")
    common(url)
    url.set_defaults(func=cmd_url)

    build = sub.add_parser("build", help=f"fetch/build the {engine_label} node with Maven (skipped when up to date)")
    common(build)
    build.add_argument("--force", action="store_true", help="rebuild even when up to date")
    build.set_defaults(func=cmd_build)


def run_cli(
    argv: Sequence[str] | None, *, prog: str, description: str, node_factory: NodeFactory, engine_label: str
) -> int:
    """Parse ``argv`` as ``start|stop|status|url|build`` and run the command."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    add_node_commands(parser, node_factory, engine_label)
    args = parser.parse_args(argv)
    result: int = args.func(args)
    return result
