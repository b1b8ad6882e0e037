"""The Keycloak start is bounded, and a provider that cannot start fails the tests in CI.

Real processes, no Keycloak: a process group that outlives its time is killed whole, and the session
fixture of tests/conftest.py, run by a child pytest on a clean state folder without Maven, answers
``CI=true`` with a failure naming the cause.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from scopegate.errors import EngineNodeError
from scopegate_lab.keycloak_node import (
    DEFAULT_TIMEOUT_S,
    TIMEOUT_ENV,
    KeycloakConfig,
    KeycloakNode,
    _run_in_group,
    start_timeout,
)

CONFTEST = Path(__file__).resolve().parents[2] / "conftest.py"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().rsplit(")", 1)[1].split()[0] == "Z")


def test_a_step_over_its_time_is_killed_with_its_children(tmp_path: Path) -> None:
    marker = tmp_path / "child.pid"
    # The shell starts a child and waits, as kc.sh does with its JVM.
    cmd = ["sh", "-c", f"sleep 60 & echo $! > {marker}; wait", "kc.sh", "build"]
    started = time.monotonic()
    with pytest.raises(EngineNodeError, match="did not finish within"):
        _run_in_group(cmd, dict(os.environ), timeout_s=1.0)
    assert time.monotonic() - started < 30
    child = int(marker.read_text())
    for _ in range(50):
        if not _alive(child):
            break
        time.sleep(0.1)
    assert not _alive(child), "the child of the timed-out step is still running"


def test_a_failing_step_reports_its_output(tmp_path: Path) -> None:
    code, output = _run_in_group(["sh", "-c", "echo broken build; exit 3"], dict(os.environ), timeout_s=30)
    assert (code, output.strip()) == (3, "broken build")


@pytest.mark.parametrize(("raw", "expected"), [(None, DEFAULT_TIMEOUT_S), ("", DEFAULT_TIMEOUT_S), ("90", 90.0)])
def test_the_start_timeout_comes_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, raw: str | None, expected: float
) -> None:
    if raw is None:
        monkeypatch.delenv(TIMEOUT_ENV, raising=False)
    else:
        monkeypatch.setenv(TIMEOUT_ENV, raw)
    assert start_timeout() == expected


@pytest.mark.parametrize("raw", ["soon", "0", "-5", "nan", "inf"])
def test_a_bad_start_timeout_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, raw: str) -> None:
    monkeypatch.setenv(TIMEOUT_ENV, raw)
    with pytest.raises(EngineNodeError, match=TIMEOUT_ENV):
        start_timeout()


def test_a_start_without_maven_fails_fast_and_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no mvn, no java
    node = KeycloakNode(KeycloakConfig(state_dir=tmp_path / "kc", maven_repo=tmp_path / "m2"))
    with pytest.raises(EngineNodeError, match="Maven"):
        node.start(clean=True, timeout_s=30)
    assert node.pid() is None


def _child_pytest(tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """A child pytest with the real root conftest and one test that needs Keycloak, on a clean machine."""
    shutil.copy(CONFTEST, tmp_path / "conftest.py")
    (tmp_path / "test_needs_keycloak.py").write_text("def test_uses_it(keycloak):\n    assert keycloak.base_url\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SCOPEGATE_KEYCLOAK", "CI", "PYTEST_"))}
    env.update(
        PATH=str(Path(sys.executable).parent),  # python, but no mvn: the fetch cannot happen
        SCOPEGATE_KEYCLOAK_STATE_DIR=str(tmp_path / "kc"),
        SCOPEGATE_MAVEN_REPO=str(tmp_path / "m2"),
        SCOPEGATE_KEYCLOAK_TIMEOUT="60",
        CI="true",
    )
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(tmp_path), str(tmp_path)]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)


def test_in_ci_a_provider_that_cannot_start_fails_the_tests(tmp_path: Path) -> None:
    done = _child_pytest(tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Keycloak is required in CI" in done.stdout
    assert "Maven (mvn) is needed" in done.stdout
    assert "1 error" in done.stdout
