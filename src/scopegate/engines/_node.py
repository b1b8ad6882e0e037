"""What the local OpenSearch and Elasticsearch test nodes share.

A node runs in the background, in a session of its own, and records itself
in plain files under its state folder: ``node.pid``, ``http.port``, ``url``
(and ``node.log`` for the JVM's output). :class:`LocalNode` starts, finds,
waits for and stops such a node; a subclass says how to build it, how to
prepare its folders and which command starts it. ``scopegate.cli.engines``
gives every engine the same ``start|stop|status|url|build`` command line.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
import zipfile
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

import httpx

from scopegate.errors import EngineNodeError

STATE_FILES = ("node.pid", "http.port", "url")


# The Maven launchers' sources ship inside the package (wheel and sdist): pom.xml + Java source.
LAUNCHERS = Path(__file__).resolve().parent / "launchers"


def repo_root() -> Path:
    """The checkout this module runs from (``src/scopegate/engines`` -> repo); meaningless when installed."""
    return Path(__file__).resolve().parents[3]


def checkout_root() -> Path | None:
    """The source checkout this module runs from, or None when scopegate is installed (a wheel)."""
    root = repo_root()
    return root if (root / "pyproject.toml").is_file() and (root / "src" / "scopegate").is_dir() else None


def cache_root() -> Path:
    """Where builds, node state and the Maven repository live by default: ``SCOPEGATE_CACHE_DIR``; else a
    checkout's ``.cache``; else (installed) ``$XDG_CACHE_HOME/scopegate`` (``~/.cache/scopegate``). Never the
    installed package itself, which may be read-only."""
    explicit = os.environ.get("SCOPEGATE_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser().resolve()
    root = checkout_root()
    if root is not None:
        return root / ".cache"
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser().resolve() / "scopegate"


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


def maven_fetch(artifact: str, target: Path, maven_repo: Path, *, label: str, timeout_s: float) -> None:
    """Download ``artifact`` (``group:name:version:zip``) into ``maven_repo`` unless ``target`` is there already."""
    if target.is_file():
        return
    mvn = shutil.which("mvn")
    if not mvn:
        raise EngineNodeError(f"Maven (mvn) is needed to fetch the {label} distribution")
    maven_repo.mkdir(parents=True, exist_ok=True)
    cmd = [mvn, "-q", "-B", f"-Dmaven.repo.local={maven_repo}", "dependency:get", f"-Dartifact={artifact}"]
    try:
        done = subprocess.run(
            [*cmd, "-Dtransitive=false"], capture_output=True, text=True, timeout=timeout_s, cwd=maven_repo.parent
        )
    except subprocess.TimeoutExpired as exc:
        raise EngineNodeError(f"downloading {label} did not finish within {timeout_s:.0f}s") from exc
    if done.returncode != 0 or not target.is_file():
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-20:])
        raise EngineNodeError(f"could not fetch {artifact}:\n{tail}")


def unpack_zip(archive_path: Path, target: Path) -> None:
    """Unpack a distribution zip into ``target`` (emptied first), keeping the files' modes."""
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    with zipfile.ZipFile(archive_path) as archive:
        for info in archive.infolist():
            extracted = Path(archive.extract(info, target))
            mode = (info.external_attr >> 16) & 0o777
            if mode:
                extracted.chmod(mode)


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


def configure(config: ConfigT, *, state_dir: str | Path | None = None, heap: str | None = None) -> ConfigT:
    """``config`` with the command line's ``--state-dir`` and ``--heap``, when given."""
    if state_dir:
        config.state_dir = Path(state_dir).resolve()
    if heap:
        config.heap = heap
    return config


_READY = {"green": frozenset({"green"}), "yellow": frozenset({"green", "yellow"})}


class LocalNode(ABC, Generic[ConfigT]):
    """Manage one local node. Every method is safe to call twice."""

    url_env = ""
    label = "engine"  # in messages: "<label> at <url> not green ..."
    start_timeout_s = 120.0  # default wait for ready health
    # The health a started node must reach. A single node can never assign replicas, so an index
    # with replicas keeps it yellow for good: single-node engines wait for yellow (every primary started).
    ready_status = "green"
    start_attempts = 3  # tries with a fresh free port each (1 when the port is pinned)
    not_built_message = "the node is not built (run with build enabled)"
    poll_s = 0.25
    process_group = False  # stop signals go to the node's whole session (launcher scripts and their JVM)

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
        ``timeout_s`` defaults to :attr:`start_timeout_s`; it bounds all attempts together.
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
        deadline = time.monotonic() + timeout
        last_error: EngineNodeError | None = None
        for _ in range(attempts):
            left = deadline - time.monotonic()
            if last_error is not None and left <= 0:
                break
            port = http_port or free_port()
            try:
                return self._launch(port, wait=wait, timeout_s=max(left, 0.0))
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

    def _health(self, client: httpx.Client, url: str, *, wait: bool) -> tuple[str | None, str]:
        """(health, detail) of a node at ``url``; :attr:`ready_status` or better means ready. Default: the
        cluster health API."""
        params = {"wait_for_status": self.ready_status, "timeout": "2s"} if wait else None
        resp = client.get(f"{url}/_cluster/health", params=params)
        if resp.status_code != 200:
            return None, f"HTTP {resp.status_code}: {resp.text[:200]}"
        return str(resp.json().get("status")), ""

    def wait_green(self, url: str, *, timeout_s: float | None = None, pid: int | None = None) -> None:
        """Wait until the node's health is :attr:`ready_status` or better, or raise with the node's log tail."""
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
                    health, detail = self._health(client, url, wait=True)
                    if health in _READY[self.ready_status]:
                        return
                    last = detail or f"health {health}"
                except (httpx.HTTPError, ValueError) as exc:
                    last = type(exc).__name__
                time.sleep(self.poll_s)
        raise EngineNodeError(
            f"{self.label} at {url} not {self.ready_status} within {timeout:.0f}s ({last}):\n{self.log_tail()}"
        )

    def _signal(self, pid: int, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError):
            if self.process_group:
                os.killpg(pid, sig)
            else:
                os.kill(pid, sig)

    def _terminate(self, pid: int, *, grace_s: float, kill: bool = False) -> None:
        """SIGTERM (SIGKILL with ``kill``), wait up to ``grace_s``, then SIGKILL (the session's stragglers too)."""
        if kill:
            self._signal(pid, signal.SIGKILL)
            grace_s = 10.0
        self._signal(pid, signal.SIGTERM)
        proc = self._proc if self._proc is not None and self._proc.pid == pid else None
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline:
            if (proc.poll() is not None) if proc is not None else not _pid_alive(pid):
                break
            time.sleep(0.05)
        else:
            self._signal(pid, signal.SIGKILL)
        if self.process_group:
            self._signal(pid, signal.SIGKILL)
        if proc is not None:
            proc.wait(timeout=10)

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
            with httpx.Client(timeout=timeout_s) as client:
                health, detail = self._health(client, url, wait=False)
        except (httpx.HTTPError, ValueError) as exc:
            health, detail = None, f"no answer: {type(exc).__name__}"
        return NodeStatus(True, pid, url, health, detail)
