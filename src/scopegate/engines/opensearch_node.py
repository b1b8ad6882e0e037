"""Build, start, stop and inspect the local single-node OpenSearch used for development and tests.

The node is the launcher in ``engines/opensearch`` (a ``Node`` subclass on the
OpenSearch 2.19 Maven artifacts). Everything it needs lives under a state
folder (default ``<repo>/.cache/opensearch-node``):

- ``home/`` the node's ``path.home`` (``data/``, ``logs/``, ``config/``)
- ``node.pid``, ``http.port``, ``url`` plain files other tools can read
- ``node.log`` the JVM's stdout and stderr

Usage from a shell (``make test`` does this)::

    python -m scopegate.engines.opensearch_node start --clean --wait
    export SCOPEGATE_OPENSEARCH_URL=$(python -m scopegate.engines.opensearch_node url)
    python -m scopegate.engines.opensearch_node stop
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scopegate.engines import _node
from scopegate.engines._node import (
    LocalNode,
    NodeLayout,
    _cmdline,
    _env_path,
    apply_args,
    find_java,
    free_port,
    repo_root,
)
from scopegate.errors import EngineNodeError

MAIN_CLASS = "dev.scopegate.engine.OpenSearchTestNode"
JAR_NAME = "opensearch-test-node.jar"
URL_ENV = "SCOPEGATE_OPENSEARCH_URL"
_STAMP = ".scopegate-build-stamp"
_EXIT_REASONS = {2: "a required OpenSearch plugin class is missing", 64: "bad launcher arguments"}


@dataclass
class NodeConfig(NodeLayout):
    """Where the launcher, its build and its state live, and how the JVM is sized."""

    engine_dir: Path = field(default_factory=lambda: repo_root() / "engines" / "opensearch")
    state_dir: Path = field(
        default_factory=lambda: _env_path("SCOPEGATE_OPENSEARCH_STATE_DIR", repo_root() / ".cache" / "opensearch-node")
    )
    maven_repo: Path = field(default_factory=lambda: _env_path("SCOPEGATE_MAVEN_REPO", repo_root() / ".cache" / "m2"))
    heap: str = field(default_factory=lambda: os.environ.get("SCOPEGATE_OPENSEARCH_HEAP", "1g"))
    java: str | None = None
    extra_settings: tuple[str, ...] = ()


class OpenSearchNode(LocalNode[NodeConfig]):
    """Manage the local OpenSearch node (see :class:`LocalNode`). Every method is safe to call twice."""

    url_env = URL_ENV
    label = "OpenSearch"
    not_built_message = "the OpenSearch launcher is not built (run with build enabled)"

    def __init__(self, config: NodeConfig | None = None) -> None:
        super().__init__(config or NodeConfig())

    # -- build -----------------------------------------------------------
    @property
    def jar(self) -> Path:
        return self.config.engine_dir / "target" / JAR_NAME

    @property
    def lib_dir(self) -> Path:
        return self.config.engine_dir / "target" / "lib"

    def classpath(self) -> str:
        return f"{self.jar}{os.pathsep}{self.lib_dir}{os.sep}*"

    def _source_digest(self) -> str:
        digest = hashlib.sha256()
        sources = [self.config.engine_dir / "pom.xml", *sorted((self.config.engine_dir / "src").rglob("*"))]
        for path in sources:
            if path.is_file():
                digest.update(str(path.relative_to(self.config.engine_dir)).encode())
                digest.update(path.read_bytes())
        return digest.hexdigest()

    def is_built(self) -> bool:
        stamp = self.config.engine_dir / "target" / _STAMP
        if not (self.jar.is_file() and self.lib_dir.is_dir() and stamp.is_file()):
            return False
        if not any(self.lib_dir.glob("opensearch-*.jar")):
            return False
        return stamp.read_text().strip() == self._source_digest()

    def build(self, *, force: bool = False, timeout_s: float = 900.0) -> bool:
        """Build the launcher with Maven unless it is up to date. Returns True when it built."""
        if not (self.config.engine_dir / "pom.xml").is_file():
            raise EngineNodeError(f"launcher sources not found in {self.config.engine_dir}")
        if not force and self.is_built():
            return False
        mvn = shutil.which("mvn")
        if not mvn:
            raise EngineNodeError("Maven (mvn) is not installed; it is needed to build the OpenSearch launcher")
        self.config.maven_repo.mkdir(parents=True, exist_ok=True)
        cmd = [mvn, "-q", "-B", f"-Dmaven.repo.local={self.config.maven_repo}", "package"]
        env = dict(os.environ)
        if self.config.java:
            env["JAVA_HOME"] = str(Path(self.config.java).resolve().parents[1])
        try:
            done = subprocess.run(
                cmd, cwd=self.config.engine_dir, capture_output=True, text=True, timeout=timeout_s, env=env
            )
        except subprocess.TimeoutExpired as exc:
            raise EngineNodeError(f"Maven build did not finish within {timeout_s:.0f}s") from exc
        if done.returncode != 0:
            tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-40:])
            raise EngineNodeError(f"Maven build failed (exit {done.returncode}):\n{tail}")
        (self.config.engine_dir / "target" / _STAMP).write_text(self._source_digest() + "\n")
        return True

    # -- running -------------------------------------------------------
    def _is_our_process(self, pid: int) -> bool:
        args = _cmdline(pid)
        return args is not None and MAIN_CLASS in args and str(self.config.home) in args

    def _command(self, port: int) -> tuple[list[str], dict[str, str] | None]:
        cfg = self.config
        java = cfg.java or find_java()
        cmd = [
            java,
            f"-Xms{cfg.heap}",
            f"-Xmx{cfg.heap}",
            "-XX:+UseG1GC",
            "-Dfile.encoding=UTF-8",
            f"-Djava.io.tmpdir={cfg.home / 'tmp'}",
            "-Dopensearch.set.netty.runtime.available.processors=false",
            "-Dlog4j2.disable.jmx=true",
            "-cp",
            self.classpath(),
            MAIN_CLASS,
            str(cfg.home),
            f"http.port={port}",
            f"transport.port={free_port()}",
            *cfg.extra_settings,
        ]
        return cmd, None

    def _exit_message(self, code: int) -> str:
        reason = _EXIT_REASONS.get(code, f"exit status {code}")
        return f"OpenSearch node exited during start ({reason})"


# -- command line ---------------------------------------------------------


def node_from_args(args: argparse.Namespace) -> OpenSearchNode:
    return OpenSearchNode(apply_args(NodeConfig(), args))


def add_node_commands(
    parser: argparse.ArgumentParser, node_factory: Any = None, engine_label: str = "OpenSearch"
) -> None:
    """Add ``start|stop|status|url|build`` under ``parser``.

    ``node_factory(args)`` builds the node manager (default: :class:`OpenSearchNode`).
    """
    _node.add_node_commands(parser, node_factory or node_from_args, engine_label)


def main(argv: Sequence[str] | None = None) -> int:
    return _node.run_cli(
        argv,
        prog="python -m scopegate.engines.opensearch_node",
        description="Manage the local OpenSearch test node.",
        node_factory=node_from_args,
        engine_label="OpenSearch",
    )


if __name__ == "__main__":
    sys.exit(main())
