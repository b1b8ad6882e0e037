"""A local Keycloak for tests: the identity provider, from Maven Central's Quarkus distribution.

``org.keycloak:keycloak-quarkus-dist`` is the same zip Keycloak's own downloads
page serves. :meth:`KeycloakNode.build` fetches it with Maven (into
``SCOPEGATE_MAVEN_REPO``, shared with the other nodes), unpacks it, runs
``kc.sh build`` once (Quarkus augmentation: H2 file database, local caches, no
clustering, no management interface) and starts it once on an empty database
to make a *seed*: the database with its schema and master realm, copied into
place by every later ``start --clean`` so a start skips schema creation
(about half of a cold start's CPU time).

A start runs ``kc.sh start --optimized`` on 127.0.0.1 with a free port, a
pinned hostname (so the issuer is stable), a modest heap, and imports the
realm JSON files (by default :func:`scopegate_lab.keycloak_realm.realm`:
two tenants, users, clients, scopes). It is ready when every imported realm
serves its OpenID configuration. Layout under the state folder (default
``<repo>/.cache/keycloak-node``): ``dist/`` (unpacked, built), ``seed/``,
``node.pid``, ``http.port``, ``url``, ``node.log``. By hand: ``scopegate engine keycloak
start|stop|status|url|build`` (or ``python -m scopegate_lab.keycloak_node ...``).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from scopegate.engines._node import (
    LocalNode,
    NodeLayout,
    _cmdline,
    _env_path,
    cache_root,
    configure,
    find_java,
    free_port,
    maven_fetch,
    unpack_zip,
)
from scopegate.errors import EngineNodeError
from scopegate_lab.keycloak_realm import realm, rotation_spec

KEYCLOAK_VERSION = "26.5.6"
ARTIFACT = f"org.keycloak:keycloak-quarkus-dist:{KEYCLOAK_VERSION}:zip"
URL_ENV = "SCOPEGATE_KEYCLOAK_URL"
# One bound on a start, first-time fetch and build included (a cold start on a loaded 2-core machine:
# download ~165 MB, build + seed ~150 s, start ~80 s); a warm start from the seed needs 20-90 s.
TIMEOUT_ENV = "SCOPEGATE_KEYCLOAK_TIMEOUT"
DEFAULT_TIMEOUT_S = 600.0
# Build-time options (kc.sh build): changing them re-runs the build and the seed.
BUILD_OPTIONS = ("--db=dev-file", "--health-enabled=false", "--metrics-enabled=false")
# Run-time options of every start: one node, no clustering (no JGroups ports), plain HTTP on loopback.
RUN_OPTIONS = ("--cache=local", "--http-enabled=true", "--http-host=127.0.0.1", "--log-level=info")
_BUILD_STAMP = ".scopegate-build"
_SEED_STAMP = ".scopegate-seed"


def _default_realms() -> tuple[Mapping[str, Any], ...]:
    return (realm(), realm(rotation_spec()))


@dataclass
class KeycloakConfig(NodeLayout):
    state_dir: Path = field(
        default_factory=lambda: _env_path("SCOPEGATE_KEYCLOAK_STATE_DIR", cache_root() / "keycloak-node")
    )
    maven_repo: Path = field(default_factory=lambda: _env_path("SCOPEGATE_MAVEN_REPO", cache_root() / "m2"))
    heap: str = field(default_factory=lambda: os.environ.get("SCOPEGATE_KEYCLOAK_HEAP", "384m"))
    java: str | None = field(default_factory=lambda: os.environ.get("SCOPEGATE_KEYCLOAK_JAVA") or None)
    version: str = KEYCLOAK_VERSION
    # Realm representations imported at every start (a realm that exists already is kept as it is).
    realms: tuple[Mapping[str, Any], ...] = field(default_factory=_default_realms)

    @property
    def dist(self) -> Path:
        return self.state_dir / "dist" / f"keycloak-{self.version}"

    @property
    def seed(self) -> Path:
        return self.state_dir / "seed"


class KeycloakNode(LocalNode[KeycloakConfig]):
    """Manage one local Keycloak; the same interface as the search engine nodes."""

    url_env = URL_ENV
    label = "Keycloak"
    start_timeout_s = DEFAULT_TIMEOUT_S  # bounds fetch + build + start together (see start)
    start_attempts = 2
    not_built_message = "the Keycloak distribution is not built (run with build enabled)"
    poll_s = 0.5
    process_group = True  # kc.sh and its JVM share the session

    def __init__(self, config: KeycloakConfig | None = None) -> None:
        super().__init__(config or KeycloakConfig())
        self._import = True

    # -- fetch and build --------------------------------------------------
    @property
    def zip_path(self) -> Path:
        group = "org/keycloak/keycloak-quarkus-dist"
        return self.config.maven_repo / group / self.config.version / f"keycloak-quarkus-dist-{self.config.version}.zip"

    def _stamp(self) -> str:
        return json.dumps({"version": self.config.version, "build": BUILD_OPTIONS, "run": RUN_OPTIONS})

    def is_built(self) -> bool:
        stamp = self.config.dist / _BUILD_STAMP
        seed = self.config.seed / _SEED_STAMP
        kc = self.config.dist / "bin" / "kc.sh"
        return kc.is_file() and stamp.is_file() and stamp.read_text() == self._stamp() and seed.is_file()

    def _java(self) -> str:
        return self.config.java or find_java()

    def _env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("KC_", "KEYCLOAK_", "JAVA_OPTS"))}
        env["JAVA"] = self._java()
        env["JAVA_OPTS_KC_HEAP"] = f"-Xms64m -Xmx{self.config.heap}"
        return env

    def build(self, *, force: bool = False, timeout_s: float = DEFAULT_TIMEOUT_S) -> bool:
        """Fetch, unpack and ``kc.sh build`` the distribution, then make the database seed; skipped when done.

        ``timeout_s`` bounds the whole build (download, ``kc.sh build`` and the seed start together).
        """
        if self.is_built() and not force:
            return False
        cfg = self.config
        deadline = time.monotonic() + timeout_s
        stamp = cfg.dist / _BUILD_STAMP
        if force or not (stamp.is_file() and stamp.read_text() == self._stamp()):
            maven_fetch(ARTIFACT.replace(KEYCLOAK_VERSION, cfg.version), self.zip_path, cfg.maven_repo,
                        label="Keycloak", timeout_s=_left(deadline, "fetching Keycloak", timeout_s))  # fmt: skip
            unpack_zip(self.zip_path, cfg.dist.parent)
            cmd = [str(cfg.dist / "bin" / "kc.sh"), "build", *BUILD_OPTIONS]
            code, output = _run_in_group(cmd, self._env(), _left(deadline, "kc.sh build", timeout_s))
            if code != 0:
                tail = "\n".join(output.strip().splitlines()[-30:])
                raise EngineNodeError(f"kc.sh build failed (exit {code}):\n{tail}")
            stamp.write_text(self._stamp())
        self._make_seed(_left(deadline, "the database seed", timeout_s))
        return True

    def _make_seed(self, timeout_s: float) -> None:
        """Start once on an empty database (no realm import), stop, keep the database as the seed."""
        cfg = self.config
        shutil.rmtree(cfg.seed, ignore_errors=True)
        shutil.rmtree(cfg.dist / "data", ignore_errors=True)
        super()._prepare(clean=True)
        self._import = False
        try:
            self._launch(free_port(), wait=True, timeout_s=timeout_s)
        finally:
            self._import = True
            self.stop(grace_s=60.0)
        h2 = cfg.dist / "data" / "h2"
        if not any(h2.glob("*.mv.db")):
            raise EngineNodeError(f"Keycloak left no database in {h2}; cannot make a seed:\n{self.log_tail()}")
        shutil.copytree(h2, cfg.seed / "h2")
        (cfg.seed / _SEED_STAMP).write_text(self._stamp())

    # -- running -------------------------------------------------------
    def start(
        self,
        *,
        wait: bool = True,
        timeout_s: float | None = None,
        clean: bool = False,
        http_port: int | None = None,
        build: bool = True,
    ) -> str:
        """Start (building first when needed) and return the URL; ``timeout_s`` bounds build and start together.

        The default is ``SCOPEGATE_KEYCLOAK_TIMEOUT``, else 600 s: a first start on a clean machine
        downloads and builds; a start from the cached build and seed needs a fraction of that.
        """
        budget = timeout_s if timeout_s is not None else start_timeout()
        deadline = time.monotonic() + budget
        if build and self.pid() is None:
            self.build(timeout_s=budget)
        return super().start(
            wait=wait, timeout_s=_left(deadline, "the start", budget), clean=clean, http_port=http_port, build=False
        )

    def _prepare(self, *, clean: bool) -> None:
        super()._prepare(clean=clean)
        cfg = self.config
        data = cfg.dist / "data"
        if clean:
            shutil.rmtree(data, ignore_errors=True)
        h2 = data / "h2"
        if not h2.exists() and (cfg.seed / "h2").is_dir():
            shutil.copytree(cfg.seed / "h2", h2)
        imports = data / "import"
        shutil.rmtree(imports, ignore_errors=True)
        imports.mkdir(parents=True)
        for representation in cfg.realms:
            # Keycloak insists on <realm>-realm.json.
            (imports / f"{representation['realm']}-realm.json").write_text(json.dumps(representation), "utf-8")

    def _is_our_process(self, pid: int) -> bool:
        args = _cmdline(pid)
        return args is not None and any(str(self.config.dist) in arg for arg in args)

    def _command(self, port: int) -> tuple[list[str], dict[str, str] | None]:
        cmd = [
            str(self.config.dist / "bin" / "kc.sh"),
            "start",
            "--optimized",
            *RUN_OPTIONS,
            f"--http-port={port}",
            f"--hostname=http://127.0.0.1:{port}",
        ]
        if self._import:
            cmd.append("--import-realm")
        return cmd, self._env()

    def _ready_realms(self) -> list[str]:
        if not self._import:
            return ["master"]
        return [str(r["realm"]) for r in self.config.realms] or ["master"]

    def _health(self, client: httpx.Client, url: str, *, wait: bool) -> tuple[str | None, str]:
        for name in self._ready_realms():
            resp = client.get(f"{url}/realms/{name}/.well-known/openid-configuration")
            if resp.status_code != 200:
                return None, f"realm {name}: HTTP {resp.status_code}"
        return "green", ""

    def _abort_start(self, pid: int) -> None:
        self.stop(grace_s=10)


def start_timeout() -> float:
    """``SCOPEGATE_KEYCLOAK_TIMEOUT`` (seconds, > 0), else :data:`DEFAULT_TIMEOUT_S`."""
    raw = os.environ.get(TIMEOUT_ENV)
    if not raw:
        return DEFAULT_TIMEOUT_S
    try:
        value = float(raw)
    except ValueError:
        raise EngineNodeError(f"{TIMEOUT_ENV} must be a number of seconds, not {raw!r}") from None
    if not (value > 0 and math.isfinite(value)):
        raise EngineNodeError(f"{TIMEOUT_ENV} must be a positive, finite number of seconds, not {raw!r}")
    return value


def _left(deadline: float, step: str, budget: float) -> float:
    """Seconds left before ``deadline``; raises when none are left for ``step``."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise EngineNodeError(f"Keycloak: no time left for {step} (the start is bounded to {budget:.0f}s)")
    return left


def _run_in_group(cmd: Sequence[str], env: Mapping[str, str], timeout_s: float) -> tuple[int, str]:
    """Run ``cmd`` in a process group of its own; on timeout (or any interruption) kill the whole group.

    ``kc.sh`` runs the JVM as its child: killing only the shell would leave the JVM behind.
    """
    proc = subprocess.Popen(
        list(cmd), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True,
        env=dict(env), start_new_session=True,
    )  # fmt: skip
    try:
        output, _ = proc.communicate(timeout=timeout_s)
    except BaseException as exc:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        if isinstance(exc, subprocess.TimeoutExpired):
            raise EngineNodeError(f"{Path(cmd[0]).name} {cmd[1]} did not finish within {timeout_s:.0f}s") from exc
        raise
    return proc.returncode, output


def _exit_on_sigterm() -> None:
    """Turn SIGTERM into SystemExit, so a killed ``start`` still ends what it started (a build, a seed node)."""

    def handler(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, handler)


def node_from_options(state_dir: str | Path | None = None, heap: str | None = None) -> KeycloakNode:
    """The node manager for the command line's ``--state-dir`` and ``--heap``."""
    return KeycloakNode(configure(KeycloakConfig(), state_dir=state_dir, heap=heap))
