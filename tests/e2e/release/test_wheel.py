"""Issue 19: a release a team can install.

``python -m build`` makes the sdist and, from it, the wheel; ``twine check --strict`` passes; the wheel is
installed into a fresh venv (no checkout on the path, pip's own cache reused) for Python 3.11, 3.12 and 3.13,
and ``scopegate demo`` runs from it. From the 3.11 install, ``scopegate engine opensearch build`` compiles
the launcher shipped inside the wheel (it used to fail: "launcher sources not found"), in the user cache,
never inside the installed package; and a command needing a missing extra says so in one line.

Takes about 3-6 minutes on a loaded 2-core machine (the build ~1 min, each install 0.5-1.5 min with a warm pip
cache, each demo ~25 s, the Maven build ~1 min with the shared Maven repository); marked ``slow``.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
VERSIONS = ("3.11", "3.12", "3.13")
pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200)]


def _run(cmd: list[str], *, timeout: float = 600, **kw: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)  # type: ignore[call-overload, no-any-return]


def _interpreter(version: str) -> str | None:
    """A working ``python<version>``: this one, one on PATH, or a pyenv install (its shims may not resolve)."""
    if f"{sys.version_info[0]}.{sys.version_info[1]}" == version:
        return sys.executable
    env = os.environ.get(f"SCOPEGATE_PYTHON_{version.replace('.', '_')}")
    pyenv = os.environ.get("PYENV_ROOT", str(Path.home() / ".pyenv"))
    candidates = [
        env,
        shutil.which(f"python{version}"),
        *sorted(glob.glob(f"{pyenv}/versions/{version}.*/bin/python{version}")),
    ]
    for candidate in (c for c in candidates if c):
        done = subprocess.run(
            [candidate, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"], capture_output=True, text=True
        )
        if done.returncode == 0 and done.stdout.strip() == version:
            return candidate
    return None


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("dist")
    done = _run([sys.executable, "-m", "build", "--outdir", str(out), str(REPO)], timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    wheels, sdists = list(out.glob("scopegate-*.whl")), list(out.glob("scopegate-*.tar.gz"))
    assert len(wheels) == len(sdists) == 1
    return {"wheel": wheels[0], "sdist": sdists[0]}


def test_twine_check_and_what_the_dists_contain(dist: dict[str, Path]) -> None:
    checked = _run([sys.executable, "-m", "twine", "check", "--strict", str(dist["wheel"]), str(dist["sdist"])])
    assert checked.returncode == 0, checked.stdout + checked.stderr
    with zipfile.ZipFile(dist["wheel"]) as wheel:
        names = set(wheel.namelist())
        meta_name = next(n for n in names if n.endswith(".dist-info/METADATA"))
        metadata = Parser().parsestr(wheel.read(meta_name).decode())
        license_text = wheel.read(next(n for n in names if n.endswith("/licenses/LICENSE"))).decode()
    launcher = "scopegate/engines/launchers/opensearch/"
    assert {
        f"{launcher}pom.xml",
        f"{launcher}src/main/java/dev/scopegate/engine/OpenSearchTestNode.java",
        "scopegate/engines/launchers/opensearch-knn/pom.xml",
        "scopegate/examples/orders/openapi.json",
        "scopegate/py.typed",
        "scopegate/search/_wordscan.pyi",
    } <= names
    # The C scan is compiled into this interpreter's wheel (a platform wheel: one per Python version).
    assert [n for n in names if n.startswith("scopegate/search/_wordscan.cpython-") and n.endswith(".so")]
    assert not [n for n in names if "/target/" in n or n.endswith(".jar")]
    assert "Apache License" in license_text and "Version 2.0, January 2004" in license_text
    assert metadata["License-Expression"] == "Apache-2.0"
    classifiers = metadata.get_all("Classifier") or []
    assert {f"Programming Language :: Python :: {v}" for v in VERSIONS} <= set(classifiers)
    assert metadata["Requires-Python"] == ">=3.11"
    with tarfile.open(dist["sdist"]) as sdist:
        members = {m.name.split("/", 1)[1] for m in sdist.getmembers() if "/" in m.name}
    assert {
        "LICENSE",
        "CHANGELOG.md",
        "README.md",
        "pyproject.toml",
        f"src/{launcher}pom.xml",
        "src/scopegate/search/_wordscan.c",
        "src/scopegate/search/_word_marks.h",
    } <= members


@pytest.mark.parametrize("version", VERSIONS)
def test_the_wheel_installs_and_runs_in_a_fresh_venv(version: str, dist: dict[str, Path], tmp_path: Path) -> None:
    python = _interpreter(version)
    if python is None:
        message = f"no Python {version} on this machine (PATH, pyenv, SCOPEGATE_PYTHON_{version.replace('.', '_')})"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    venv = tmp_path / "venv"
    assert _run([python, "-m", "venv", str(venv)]).returncode == 0
    vpython = str(venv / "bin" / "python")
    wheel = dist["wheel"]
    if version != f"{sys.version_info[0]}.{sys.version_info[1]}":
        # The wheel holds a C extension built for one Python: other versions get theirs from the sdist,
        # as a release job builds one wheel per version.
        built = _run([vpython, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path / "w"), str(dist["sdist"])])
        assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
        (wheel,) = (tmp_path / "w").glob("scopegate-*.whl")
        assert f"-cp{version.replace('.', '')}-" in wheel.name, wheel.name
    # pip's default cache (~/.cache/pip) is reused: only a first run downloads.
    installed = _run([vpython, "-m", "pip", "install", "-q", str(wheel)], timeout=900)
    assert installed.returncode == 0, installed.stdout[-3000:] + installed.stderr[-3000:]
    scopegate = str(venv / "bin" / "scopegate")
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "SCOPEGATE_CACHE_DIR", "VIRTUAL_ENV"}}
    env.update(TMPDIR=str(scratch), XDG_CACHE_HOME=str(tmp_path / "xdg"))
    run = {"cwd": tmp_path, "env": env}

    shown = _run([scopegate, "--version"], **run)
    # The C scan, not the fallback: the wheel was built with a compiler.
    assert shown.returncode == 0 and shown.stdout.strip() == "scopegate 0.1.0 (snippets: native)", shown.stdout
    where = _run([vpython, "-c", "import scopegate; print(scopegate.__file__)"], **run)
    package = Path(where.stdout.strip()).parent
    assert package.is_relative_to(venv), package  # the installed copy, not the checkout
    native = _run(
        [vpython, "-c", "from scopegate.search import snippet; print(snippet.first_start is not None)"], **run
    )
    assert native.stdout.strip() == "True", native.stdout + native.stderr  # the C scan, not the fallback

    demo = _run([scopegate, "demo"], **run)
    assert demo.returncode == 0, demo.stdout[-3000:] + demo.stderr[-3000:]
    assert "0 of acme or any other tenant" in demo.stdout
    assert list(scratch.iterdir()) == []  # the demo's temporary folder is gone
    if version != VERSIONS[0]:
        return

    # A command needing an extra the plain install lacks: one line, exit 4; `check` works without it.
    config = tmp_path / "scopegate.yaml"
    config.write_text(
        "version: 1\nbackends: {local: {type: embedded, path: ./data}}\nstdio: {tenant: acme}\n"
        "search_tools:\n  - {backend: local, name: search_notes, description: Notes., text_fields: [body]}\n"
    )
    checked = _run([scopegate, "check", str(config)], **run)  # validating needs no extra
    assert checked.returncode == 0, checked.stderr
    assert "serve: needs the 'mcp' extra, not installed here: pip install 'scopegate[mcp]'" in checked.stdout
    served = _run([scopegate, "serve", str(config)], stdin=subprocess.DEVNULL, **run)
    assert served.returncode == 4, served.stderr
    assert served.stderr.strip().splitlines()[-1] == (
        "scopegate serve: error: this needs the 'mcp' extra (module 'mcp' is not installed): "
        "pip install 'scopegate[mcp]'"
    )

    if shutil.which("mvn") is None or shutil.which("java") is None:
        pytest.fail("Maven and Java 17 are needed for `scopegate engine opensearch build` (make test has them)")
    env["SCOPEGATE_MAVEN_REPO"] = os.environ.get("SCOPEGATE_MAVEN_REPO", str(REPO / ".cache" / "m2"))
    built = _run([scopegate, "engine", "opensearch", "build"], timeout=900, **run)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    target = tmp_path / "xdg" / "scopegate" / "engines" / "opensearch" / "target"
    assert (target / "opensearch-test-node.jar").is_file() and any((target / "lib").glob("opensearch-*.jar"))
    assert not list(package.rglob("target"))  # nothing written into the installed package
    again = _run([scopegate, "engine", "opensearch", "build"], **run)
    assert again.returncode == 0 and "up to date" in again.stdout + again.stderr
