"""Write a generated corpus to disk as JSONL shards (in parallel, niced), and read it back.

A corpus folder (under ``.cache/``, never in the repository) holds
``docs-00000.jsonl`` ... (``shard_docs`` tickets each, in ticket order),
``queries.json``, ``spec.json`` (the :func:`workload_spec`) and
``manifest.json``. Shards that exist with the recorded size are kept, so a
second ``generate`` with the same settings does nothing, and a 1M corpus is the
first ten shards of the 2M one.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass
from itertools import islice
from pathlib import Path
from typing import Any

from scopegate.search.spec import KeywordFilter, SearchSpec, TextField, spec_to_dict
from scopegate_lab.workload.queries import WorkloadQuery, make_queries
from scopegate_lab.workload.sources import PRODUCTS, SourceProfile
from scopegate_lab.workload.tickets import PRIORITIES, STATUSES, TicketFactory

MANIFEST = "manifest.json"
FORMAT_VERSION = 1


def workload_spec() -> SearchSpec:
    """The search surface over the generated tickets (names passed explicitly, no library defaults)."""
    return SearchSpec(
        name="search_tickets",
        description="Search this customer's support tickets by keywords, error messages or error codes.",
        text_fields=(TextField("subject", 3.0), TextField("body")),
        filters=(
            KeywordFilter("product", PRODUCTS, "Only tickets about this product."),
            KeywordFilter("status", tuple(s for s, _ in STATUSES), "Only tickets in this status."),
            KeywordFilter("priority", tuple(p for p, _ in PRIORITIES), "Only tickets of this priority."),
        ),
        index="tickets",
        id_field="ticket_id",
        tenant_field="tenant_id",
        result_fields=("subject", "status"),
        snippet_field="body",
        fetch_name="get_ticket",
        fetch_description="Fetch one support ticket by its ticket_id, as shown in search results.",
    )


@dataclass(frozen=True)
class CorpusSettings:
    docs: int = 2_000_000
    seed: int = 13
    tenants: int = 40
    shard_docs: int = 100_000
    queries: int = 2400

    def shard_ranges(self) -> list[tuple[int, int]]:
        return [(start, min(self.docs, start + self.shard_docs)) for start in range(0, self.docs, self.shard_docs)]


def shard_name(number: int) -> str:
    return f"docs-{number:05d}.jsonl"


# -- generation in worker processes ---------------------------------------------------
_FACTORY: TicketFactory | None = None


def _init_worker(niceness: int, seed: int, tenant_count: int, data_root: str | None) -> None:
    global _FACTORY
    if niceness:
        os.nice(niceness)
    _FACTORY = TicketFactory(SourceProfile.load(data_root), seed=seed, tenant_count=tenant_count)


def _write_shard(path: str, start: int, stop: int) -> tuple[str, int, int]:
    assert _FACTORY is not None
    tmp = Path(path + ".tmp")
    count = 0
    with tmp.open("w", encoding="utf-8") as out:
        for ticket in _FACTORY.tickets(start, stop):
            out.write(json.dumps(ticket, ensure_ascii=False))
            out.write("\n")
            count += 1
    tmp.replace(path)
    return path, count, Path(path).stat().st_size


def generate_corpus(
    out_dir: str | Path,
    settings: CorpusSettings,
    *,
    workers: int = 2,
    niceness: int = 10,
    data_root: str | None = None,
    profile: SourceProfile | None = None,
    log: Any = None,
) -> dict[str, Any]:
    """Generate (or complete) the corpus in ``out_dir``; returns the manifest.

    ``workers=0`` generates in this process (with ``profile`` if given), for tests.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    manifest_path = out / MANIFEST
    old = json.loads(manifest_path.read_text("utf-8")) if manifest_path.exists() else {}
    same = old.get("settings", {}) | {"docs": settings.docs} == asdict(settings) | {"docs": settings.docs}
    known = {s["file"]: s for s in old.get("shards", [])} if same and old.get("version") == FORMAT_VERSION else {}
    started = time.perf_counter()
    todo = []
    shards: dict[str, dict[str, Any]] = {}
    for number, (start, stop) in enumerate(settings.shard_ranges()):
        name = shard_name(number)
        entry = known.get(name)
        path = out / name
        if entry and entry["docs"] == stop - start and path.exists() and path.stat().st_size == entry["bytes"]:
            shards[name] = entry
        else:
            todo.append((str(path), start, stop))
    profile = profile or SourceProfile.load(data_root)
    if todo and workers <= 0:
        global _FACTORY
        _FACTORY = TicketFactory(profile, seed=settings.seed, tenant_count=settings.tenants)
        for args in todo:
            written, count, size = _write_shard(*args)
            shards[Path(written).name] = {"file": Path(written).name, "docs": count, "bytes": size}
    elif todo:
        with ProcessPoolExecutor(
            max_workers=max(1, workers),
            initializer=_init_worker,
            initargs=(niceness, settings.seed, settings.tenants, data_root),
        ) as pool:
            for written, count, size in pool.map(_write_shard, *zip(*todo, strict=True)):
                name = Path(written).name
                shards[name] = {"file": name, "docs": count, "bytes": size}
                if log:
                    log(f"wrote {name}: {count:,} tickets, {size / 1e6:,.0f} MB")
    queries = make_queries(profile, settings.queries, seed=settings.seed, tenant_count=settings.tenants)
    (out / "queries.json").write_text(json.dumps([q.to_dict() for q in queries], ensure_ascii=False, indent=0), "utf-8")
    (out / "spec.json").write_text(json.dumps(spec_to_dict(workload_spec()), indent=2), "utf-8")
    manifest = {
        "version": FORMAT_VERSION,
        "settings": asdict(settings),
        "shards": [shards[shard_name(n)] for n in range(len(settings.shard_ranges()))],
        "bytes": sum(s["bytes"] for s in shards.values()),
        "generated_seconds": round(time.perf_counter() - started, 1),
        "held_out_source_tickets": len(profile.held_out),
    }
    tmp = manifest_path.with_suffix(".tmp")
    tmp.write_text(json.dumps(manifest, indent=2), "utf-8")
    tmp.replace(manifest_path)
    return manifest


# -- reading back --------------------------------------------------------------------
def corpus_files(corpus_dir: str | Path, docs: int | None = None) -> list[Path]:
    """The shard files holding the first ``docs`` tickets (all when None)."""
    manifest = json.loads((Path(corpus_dir) / MANIFEST).read_text("utf-8"))
    files: list[Path] = []
    total = 0
    for shard in manifest["shards"]:
        if docs is not None and total >= docs:
            break
        files.append(Path(corpus_dir) / shard["file"])
        total += shard["docs"]
    if docs is not None and total < docs:
        raise ValueError(f"{corpus_dir} holds {total:,} tickets, fewer than {docs:,}")
    return files


def read_corpus(corpus_dir: str | Path, docs: int | None = None) -> Iterator[dict[str, Any]]:
    """The first ``docs`` tickets of a corpus folder, in order."""

    def lines() -> Iterator[dict[str, Any]]:
        for path in corpus_files(corpus_dir, docs):
            with path.open(encoding="utf-8") as handle:
                for line in handle:
                    yield json.loads(line)

    return lines() if docs is None else islice(lines(), docs)


def read_queries(corpus_dir: str | Path) -> list[WorkloadQuery]:
    data = json.loads((Path(corpus_dir) / "queries.json").read_text("utf-8"))
    return [WorkloadQuery(d["query"], d["tenant"], d["kind"], dict(d["filters"]), int(d["page"])) for d in data]
