"""A local single-node Elasticsearch for tests, from Maven Central's integ-test distribution.

``org.elasticsearch.distribution.integ-test-zip:elasticsearch`` is a real,
minimal Elasticsearch (core, transport-netty4, x-pack-core/security; no
analysis-common, no rest-root, no reindex). Maven Central's newest is
``8.19.21``: no 9.x integ-test zip is published there, so the 9.x client runs
against it in REST compatibility mode 8 (see :mod:`scopegate.backends.elasticsearch`).

Elasticsearch refuses to run as root. When this process is root, the node runs
as a dedicated system user (created with ``useradd`` if missing) via
``runuser``; otherwise it runs as the current user. Layout under the state
folder (default ``<repo>/.cache/elasticsearch-node``): ``dist/`` (unpacked
zip), ``home/data``, ``home/logs``, ``node.pid``, ``http.port``, ``url``, ``node.log``.

Usage::

    python -m scopegate.engines.elasticsearch_node start --clean --wait
    export SCOPEGATE_ELASTICSEARCH_URL=$(python -m scopegate.engines.elasticsearch_node url)
    python -m scopegate.engines.elasticsearch_node stop
"""

from __future__ import annotations

import argparse
import contextlib
import os
import pwd
import shutil
import signal
import subprocess
import sys
import time
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from scopegate.engines.opensearch_node import (
    NodeStatus,
    _env_path,
    _pid_alive,
    add_node_commands,
    find_java,
    free_port,
    repo_root,
)
from scopegate.errors import EngineNodeError

ES_VERSION = "8.19.21"
ARTIFACT = f"org.elasticsearch.distribution.integ-test-zip:elasticsearch:{ES_VERSION}:zip"
URL_ENV = "SCOPEGATE_ELASTICSEARCH_URL"
RUN_USER = "scopegate-es"


@dataclass
class ESNodeConfig:
    state_dir: Path = field(
        default_factory=lambda: _env_path(
            "SCOPEGATE_ELASTICSEARCH_STATE_DIR", repo_root() / ".cache" / "elasticsearch-node"
        )
    )
    maven_repo: Path = field(default_factory=lambda: _env_path("SCOPEGATE_MAVEN_REPO", repo_root() / ".cache" / "m2"))
    heap: str = field(default_factory=lambda: os.environ.get("SCOPEGATE_ELASTICSEARCH_HEAP", "512m"))
    java: str | None = None
    version: str = ES_VERSION

    @property
    def dist(self) -> Path:
        return self.state_dir / "dist" / f"elasticsearch-{self.version}"

    @property
    def home(self) -> Path:
        return self.state_dir / "home"

    @property
    def log_file(self) -> Path:
        return self.state_dir / "node.log"


def _java_home(java: str) -> str:
    return str(Path(os.path.realpath(java)).parents[1])


class ElasticsearchNode:
    """Manage one local Elasticsearch node; same interface as :class:`OpenSearchNode`."""

    url_env = URL_ENV

    def __init__(self, config: ESNodeConfig | None = None) -> None:
        self.config = config or ESNodeConfig()

    # -- fetch ("build") ----------------------------------------------------
    @property
    def zip_path(self) -> Path:
        group = "org/elasticsearch/distribution/integ-test-zip/elasticsearch"
        return self.config.maven_repo / group / self.config.version / f"elasticsearch-{self.config.version}.zip"

    def is_built(self) -> bool:
        return (self.config.dist / "bin" / "elasticsearch").is_file()

    def build(self, *, force: bool = False, timeout_s: float = 900.0) -> bool:
        """Download the distribution with Maven and unpack it, unless already there."""
        if self.is_built() and not force:
            return False
        if not self.zip_path.is_file():
            mvn = shutil.which("mvn")
            if not mvn:
                raise EngineNodeError("Maven (mvn) is needed to fetch the Elasticsearch distribution")
            cmd = [
                mvn,
                "-q",
                "-B",
                f"-Dmaven.repo.local={self.config.maven_repo}",
                "dependency:get",
                f"-Dartifact={ARTIFACT.replace(ES_VERSION, self.config.version)}",
                "-Dtransitive=false",
            ]
            try:
                done = subprocess.run(
                    cmd, capture_output=True, text=True, timeout=timeout_s, cwd=self.config.maven_repo.parent
                )
            except subprocess.TimeoutExpired as exc:
                raise EngineNodeError(f"downloading Elasticsearch did not finish within {timeout_s:.0f}s") from exc
            if done.returncode != 0 or not self.zip_path.is_file():
                tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-20:])
                raise EngineNodeError(f"could not fetch {ARTIFACT}:\n{tail}")
        target = self.config.dist.parent
        if target.exists():
            shutil.rmtree(target)
        target.mkdir(parents=True)
        with zipfile.ZipFile(self.zip_path) as archive:
            for info in archive.infolist():
                extracted = Path(archive.extract(info, target))
                mode = (info.external_attr >> 16) & 0o777
                if mode:
                    extracted.chmod(mode)
        return True

    # -- state --------------------------------------------------------------
    def _read_int(self, name: str) -> int | None:
        try:
            return int((self.config.state_dir / name).read_text().strip())
        except (OSError, ValueError):
            return None

    def pid(self) -> int | None:
        pid = self._read_int("node.pid")
        if pid is None or not _pid_alive(pid):
            return None
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
        except OSError:
            return None
        return pid if str(self.config.dist) in cmdline else None

    def url(self) -> str | None:
        port = self._read_int("http.port")
        return f"http://127.0.0.1:{port}" if port else None

    def _clear_state(self) -> None:
        for name in ("node.pid", "http.port", "url"):
            (self.config.state_dir / name).unlink(missing_ok=True)

    def _run_user(self) -> str | None:
        """The user the node runs as when we are root (created if missing), else None."""
        if os.geteuid() != 0:
            return None
        try:
            pwd.getpwnam(RUN_USER)
        except KeyError:
            done = subprocess.run(
                ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", RUN_USER],
                capture_output=True,
                text=True,
                timeout=60,
            )
            if done.returncode != 0:
                raise EngineNodeError(
                    f"cannot create user {RUN_USER} for Elasticsearch: {done.stderr.strip()}"
                ) from None
        return RUN_USER

    # -- lifecycle ----------------------------------------------------------
    def start(
        self,
        *,
        wait: bool = True,
        timeout_s: float = 180.0,
        clean: bool = False,
        http_port: int | None = None,
        build: bool = True,
    ) -> str:
        running = self.pid()
        if running is not None:
            url = self.url()
            if url is None:
                raise EngineNodeError(f"node pid {running} is running but its port is unknown; stop it first")
            if wait:
                self.wait_green(url, timeout_s=timeout_s, pid=running)
            return url
        if build:
            self.build()
        elif not self.is_built():
            raise EngineNodeError("the Elasticsearch distribution is not unpacked (run with build enabled)")
        cfg = self.config
        if clean and cfg.home.exists():
            shutil.rmtree(cfg.home)
        for sub in ("data", "logs", "tmp"):
            (cfg.home / sub).mkdir(parents=True, exist_ok=True)
        self._clear_state()
        user = self._run_user()
        if user is not None:
            entry = pwd.getpwnam(user)
            for root in (cfg.dist, cfg.home):
                for path in (root, *root.rglob("*")):
                    os.chown(path, entry.pw_uid, entry.pw_gid, follow_symlinks=False)
            # The user must be able to reach the folders on the way down.
            for parent in (cfg.state_dir, cfg.dist.parent):
                parent.chmod(parent.stat().st_mode | 0o711)
        port = http_port or free_port()
        java = cfg.java or find_java()
        settings = [
            "discovery.type=single-node",
            "network.host=127.0.0.1",
            f"http.port={port}",
            f"transport.port={free_port()}",
            "xpack.security.enabled=false",
            f"path.data={cfg.home / 'data'}",
            f"path.logs={cfg.home / 'logs'}",
            "cluster.name=scopegate-es-test",
            "cluster.routing.allocation.disk.threshold_enabled=false",
            "action.auto_create_index=false",
            "thread_pool.estimated_time_interval=0ms",
        ]
        cmd = [str(cfg.dist / "bin" / "elasticsearch")]
        for item in settings:
            cmd += ["-E", item]
        if user is not None:
            cmd = ["runuser", "-u", user, "--", *cmd]
        env = {
            **os.environ,
            "ES_JAVA_HOME": _java_home(java),
            "ES_JAVA_OPTS": f"-Xms{cfg.heap} -Xmx{cfg.heap}",
            "ES_TMPDIR": str(cfg.home / "tmp"),
        }
        env.pop("JAVA_HOME", None)
        with cfg.log_file.open("ab") as log:
            log.write(f"\n--- start {time.strftime('%Y-%m-%dT%H:%M:%S')} port {port}\n".encode())
            log.flush()
            proc = subprocess.Popen(
                cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True, env=env
            )
        self._proc = proc
        (cfg.state_dir / "node.pid").write_text(f"{proc.pid}\n")
        (cfg.state_dir / "http.port").write_text(f"{port}\n")
        url = f"http://127.0.0.1:{port}"
        (cfg.state_dir / "url").write_text(url + "\n")
        if wait:
            try:
                self.wait_green(url, timeout_s=timeout_s, pid=proc.pid)
            except EngineNodeError:
                self.stop(grace_s=10)
                raise
        return url

    def log_tail(self, lines: int = 30) -> str:
        try:
            text = self.config.log_file.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.rsplit("\n--- start ", 1)[-1].strip().splitlines()[-lines:])

    def wait_green(self, url: str, *, timeout_s: float = 180.0, pid: int | None = None) -> None:
        deadline = time.monotonic() + timeout_s
        last = "no answer yet"
        proc = getattr(self, "_proc", None)
        with httpx.Client(timeout=httpx.Timeout(5.0, connect=1.0)) as client:
            while time.monotonic() < deadline:
                if pid is not None:
                    exited = proc.poll() if proc is not None and proc.pid == pid else (None if _pid_alive(pid) else -1)
                    if exited is not None:
                        raise EngineNodeError(
                            f"Elasticsearch exited during start (status {exited}):\n{self.log_tail()}"
                        )
                try:
                    resp = client.get(f"{url}/_cluster/health", params={"wait_for_status": "green", "timeout": "2s"})
                    if resp.status_code == 200 and resp.json().get("status") == "green":
                        return
                    last = f"HTTP {resp.status_code}"
                except httpx.HTTPError as exc:
                    last = type(exc).__name__
                time.sleep(0.5)
        raise EngineNodeError(f"Elasticsearch at {url} not green within {timeout_s:.0f}s ({last}):\n{self.log_tail()}")

    def stop(self, *, grace_s: float = 30.0, kill: bool = False) -> bool:
        pid = self.pid()
        if pid is None:
            self._clear_state()
            return False
        sig = signal.SIGKILL if kill else signal.SIGTERM
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, sig)  # runuser, the CLI launcher and the server share the session
        deadline = time.monotonic() + grace_s
        proc = getattr(self, "_proc", None)
        while time.monotonic() < deadline and _pid_alive(pid):
            if proc is not None and proc.pid == pid and proc.poll() is not None:
                break
            time.sleep(0.1)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)
        if proc is not None and proc.pid == pid:
            proc.wait(timeout=10)
        self._clear_state()
        return True

    def status(self, *, timeout_s: float = 2.0) -> NodeStatus:
        pid = self.pid()
        url = self.url()
        if pid is None or url is None:
            return NodeStatus(pid is not None, pid, url, None, "not running" if pid is None else "port unknown")
        try:
            resp = httpx.get(f"{url}/_cluster/health", timeout=timeout_s)
            health = str(resp.json().get("status")) if resp.status_code == 200 else None
            detail = "" if health else f"HTTP {resp.status_code}"
        except (httpx.HTTPError, ValueError) as exc:
            health, detail = None, f"no answer: {type(exc).__name__}"
        return NodeStatus(True, pid, url, health, detail)


def node_from_args(args: argparse.Namespace) -> ElasticsearchNode:
    config = ESNodeConfig()
    if getattr(args, "state_dir", None):
        config.state_dir = Path(args.state_dir).resolve()
    if getattr(args, "heap", None):
        config.heap = args.heap
    return ElasticsearchNode(config)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m scopegate.engines.elasticsearch_node",
        description=f"Manage the local Elasticsearch {ES_VERSION} test node.",
    )
    add_node_commands(parser, node_from_args, "Elasticsearch")
    args = parser.parse_args(argv)
    result: int = args.func(args)
    return result


if __name__ == "__main__":
    sys.exit(main())
