"""The snippet path a process runs (scopegate.search.native): native or pure-python, one for the whole
process, forced pure by SCOPEGATE_NATIVE_SNIPPETS=0, and named by ``scopegate --version``.

The unit layer runs once per path (scripts/unit-other-pythons.sh): every snippet property and snapshot
test holds the path this process runs; these tests check that the switch reaches every module.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import scopegate.text
from scopegate.search import analysis, snippet
from scopegate.search import native as native_module
from scopegate.search.native import ENV, NATIVE, SNIPPET_PATH

PROBE = """
import scopegate.text as text
from scopegate.search import analysis, native, snippet
pure = (
    snippet.first_start is None
    and snippet.native_window is None
    and text.clean_head is text.python_clean_head
    and text.clean_tail is text.python_clean_tail
    and analysis._native_word_runs is analysis._python_word_runs
)
print(native.SNIPPET_PATH, pure)
"""


def _run(args: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    unset = {ENV, "CI", "SCOPEGATE_EXPECT_NATIVE"}
    environment = {k: v for k, v in os.environ.items() if k not in unset} | env
    return subprocess.run(
        args, capture_output=True, text=True, timeout=300, env=environment, check=False, cwd=Path(__file__).parents[2]
    )


def _extension_builds() -> bool:
    try:
        from scopegate.search import _wordscan  # noqa: F401
    except ImportError:
        return False
    return True


def test_every_module_runs_the_path_the_switch_chose() -> None:
    assert SNIPPET_PATH in {"native", "pure-python"} and (SNIPPET_PATH == "native") is NATIVE
    if NATIVE:
        from scopegate.search import _wordscan

        assert snippet.first_start is _wordscan.first_start and snippet.native_window is _wordscan.first_window
        assert scopegate.text.clean_head is _wordscan.clean_head and scopegate.text.clean_tail is _wordscan.clean_tail
        assert analysis._native_word_runs is _wordscan.word_runs
    else:
        assert snippet.first_start is None and snippet.native_window is None
        assert scopegate.text.clean_head is scopegate.text.python_clean_head
        assert scopegate.text.clean_tail is scopegate.text.python_clean_tail
        assert analysis._native_word_runs is analysis._python_word_runs


def test_the_switch_forces_the_pure_path_in_a_new_process() -> None:
    forced = _run([sys.executable, "-c", PROBE], **{ENV: "0"})
    assert forced.returncode == 0, forced.stderr[-2000:]
    assert forced.stdout.split() == ["pure-python", "True"]
    default = _run([sys.executable, "-c", PROBE])
    assert default.returncode == 0, default.stderr[-2000:]
    expected = ["native", "False"] if _extension_builds() else ["pure-python", "True"]
    assert default.stdout.split() == expected


@pytest.mark.parametrize(("value", "native"), [("0", False), ("1", True), ("", True), (" 0 ", False)])
def test_only_zero_turns_the_native_path_off(monkeypatch: pytest.MonkeyPatch, value: str, native: bool) -> None:
    monkeypatch.setenv(ENV, value)
    assert native_module._native_wanted_and_built() is (native and _extension_builds())


def test_version_names_the_snippet_path() -> None:
    command = [sys.executable, "-m", "scopegate.cli", "--version"]
    forced = _run(command, **{ENV: "0"})
    assert forced.returncode == 0, forced.stderr[-2000:]
    assert forced.stdout.endswith(" (snippets: pure-python)\n"), forced.stdout
    default = _run(command)
    assert default.returncode == 0, default.stderr[-2000:]
    path = "native" if _extension_builds() else "pure-python"
    assert default.stdout.startswith("scopegate ") and default.stdout.endswith(f" (snippets: {path})\n")


@pytest.mark.parametrize(
    ("env", "outcome"),
    [({}, "1 skipped"), ({"CI": "true"}, "1 skipped"), ({"CI": "true", "SCOPEGATE_EXPECT_NATIVE": "1"}, "1 failed")],
)
def test_the_c_scan_tests_skip_on_the_pure_path_and_fail_where_ci_expects_the_native_one(
    env: dict[str, str], outcome: str
) -> None:
    test = "tests/unit/test_wordscan.py::test_the_c_scan_is_built_and_used"
    done = _run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs", test], **{ENV: "0"}, **env)
    assert outcome in done.stdout, done.stdout[-3000:] + done.stderr[-3000:]
    if outcome == "1 skipped":
        assert f"the snippet path is pure-python ({ENV}=0)" in done.stdout
    else:
        assert "CI expects the native snippet scanner" in done.stdout
