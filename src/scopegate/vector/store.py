"""A persistent vector index beside an embedded (tantivy) index, with scope applied inside the search.

Layout under ``<index>/vectors/``::

    manifest.json        committed state: model id, dim, segment files, dead-row file, tantivy opstamp
    pending.json         the next state, written before tantivy commits (see below)
    seg-<n>.npz          immutable: vectors (float32), ids, tenant, groups, filter values, one row each
    dead-<n>.npy         sorted row numbers that were deleted or replaced by a later upsert
    hnsw-<tenant digest>.faiss (+ .json)   derived HNSW graph of one large tenant; rebuilt or extended

**Crash safety, in lockstep with tantivy.** A batch writes its segment and
dead-row files, then ``pending.json`` (written to a temporary file, fsynced,
renamed) naming the tantivy opstamp it was based on, then tantivy commits,
then ``pending.json`` becomes ``manifest.json`` (rename). The visible state
is ``pending`` if tantivy's opstamp has moved past its base (the commit
happened; the process died before the rename) and ``manifest`` otherwise. A
writer settles a leftover ``pending`` the same way and deletes unreferenced
files. So after ``kill -9`` at any point, every committed document has
exactly its vector and no uncommitted one is visible.

**Scope inside the search.** Rows carry tenant, groups and filter values.
A query first takes the in-scope rows (tenant's row list, alive, filters,
groups), then searches only those: exactly (a matrix product over those
rows) when there are at most ``exact_limit``, else in an HNSW graph (faiss)
whose search is restricted to them by a bitmap (``IDSelectorBitmap``), so
the graph walk itself skips out-of-scope rows. Nothing is dropped after the
search; the number of in-scope rows is known exactly.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scopegate.errors import ConfigError
from scopegate.scope import Scope, document_key

MANIFEST = "manifest.json"
PENDING = "pending.json"
FORMAT = 1
GROUP_SEP = "\x1f"


@dataclass(frozen=True)
class VectorRow:
    doc_id: str
    tenant: str
    groups: tuple[str, ...]
    filters: Mapping[str, str]

    @property
    def key(self) -> str:
        """The document is (tenant, id): the same id in another tenant is another row."""
        return document_key(self.tenant, self.doc_id)


def _fsync_write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
    _fsync_dir(path.parent)


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms without directory fds
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@dataclass
class _Graph:
    """An HNSW graph over the first ``covered`` rows of one tenant (label = position in its row list)."""

    index: Any
    covered: int


class _Codes:
    """String values as small ints (-1: absent), with the rows of each value."""

    def __init__(self) -> None:
        self.code_of: dict[str, int] = {}
        self.rows_of: list[list[int]] = []
        self._arrays: dict[int, Any] = {}

    def code(self, value: str) -> int:
        found = self.code_of.get(value)
        if found is None:
            found = self.code_of[value] = len(self.rows_of)
            self.rows_of.append([])
        return found

    def add(self, value: str, row: int) -> None:
        code = self.code(value)
        self.rows_of[code].append(row)
        self._arrays.pop(code, None)

    def rows(self, code: int) -> Any:
        """The rows of a value as an int64 array (cached until rows are added to it)."""
        import numpy as np

        found = self._arrays.get(code)
        if found is None:
            found = self._arrays[code] = np.asarray(self.rows_of[code], dtype=np.int64)
        return found


class VectorStore:
    """Vectors of one index (see module docstring). Thread-safe: one writer, many readers."""

    def __init__(
        self,
        directory: str | Path | None,
        *,
        dim: int,
        model_id: str,
        filter_fields: Sequence[str] = (),
        exact_limit: int = 20_000,
        hnsw_m: int = 16,
        ef_search: int = 256,
    ) -> None:
        import numpy as np

        self.directory = Path(directory) if directory is not None else None
        self.dim = dim
        self.model_id = model_id
        self.filter_fields = tuple(filter_fields)
        self.exact_limit = exact_limit
        self.hnsw_m = hnsw_m
        self.ef_search = ef_search
        self._lock = threading.RLock()
        self._vectors = np.zeros((0, dim), dtype=np.float32)
        self._size = 0
        self._ids: list[str] = []
        self._keys: list[str] = []  # document_key(tenant, id) per row
        self._row_of: dict[str, int] = {}  # live row of each document key
        self._alive = np.zeros(0, dtype=bool)
        self._tenants = _Codes()
        self._groups = _Codes()
        self._filters = {name: _Codes() for name in self.filter_fields}
        self._filter_codes = {name: np.zeros(0, dtype=np.int32) for name in self.filter_fields}
        self._segments: list[dict[str, Any]] = []
        self._dead_file: str | None = None
        self._generation = 0
        self._state_key: tuple[Any, ...] | None = None
        self._graphs: dict[str, _Graph] = {}
        self.stored_model_id: str | None = None
        self._pending_state: dict[str, Any] = {}
        self._pending_arrays: dict[str, Any] | None = None
        self._pending_dead: Any = None
        if self.directory is not None:
            self.directory.mkdir(parents=True, exist_ok=True)

    # -- state on disk ------------------------------------------------------------------------
    def _read_json(self, name: str) -> dict[str, Any] | None:
        assert self.directory is not None
        try:
            data: dict[str, Any] = json.loads((self.directory / name).read_text("utf-8"))
        except FileNotFoundError:
            return None
        except ValueError as exc:
            raise ConfigError(f"vector index file {self.directory / name} is corrupt: {exc}") from exc
        return data

    def visible_state(self, tantivy_opstamp: int) -> dict[str, Any] | None:
        """The committed vector state for the given tantivy opstamp (see module docstring)."""
        pending = self._read_json(PENDING)
        if pending is not None and tantivy_opstamp > int(pending.get("base_opstamp", -1)):
            return pending
        return self._read_json(MANIFEST)

    def sync(self, tantivy_opstamp: int) -> None:
        """Load whatever is visible at ``tantivy_opstamp`` (no-op when nothing changed)."""
        if self.directory is None:
            return
        with self._lock:
            state = self.visible_state(tantivy_opstamp)
            key = (None,) if state is None else (state.get("generation"), state.get("base_opstamp"))
            if key == self._state_key:
                return
            self._load_state(state)
            self._state_key = key

    def settle(self, tantivy_opstamp: int) -> None:
        """Writer only (holding the index lock): resolve a leftover pending state and drop stray files."""
        if self.directory is None:
            return
        with self._lock:
            pending = self._read_json(PENDING)
            if pending is not None:
                if tantivy_opstamp > int(pending.get("base_opstamp", -1)):
                    os.replace(self.directory / PENDING, self.directory / MANIFEST)
                else:
                    (self.directory / PENDING).unlink()
                _fsync_dir(self.directory)
            self._state_key = None
            self.sync(tantivy_opstamp)
            referenced = {s["file"] for s in self._segments}
            referenced.add(self._dead_file or "")
            for path in self.directory.iterdir():
                if path.name not in referenced and (path.name.startswith(("seg-", "dead-")) or path.suffix == ".tmp"):
                    path.unlink(missing_ok=True)

    def _load_state(self, state: dict[str, Any] | None) -> None:
        import numpy as np

        if state is None:
            self._reset()
            self.stored_model_id = None
            return
        if int(state.get("format", 0)) != FORMAT or int(state.get("dim", -1)) != self.dim:
            self.stored_model_id = str(state.get("model_id"))
            if int(state.get("dim", -1)) != self.dim:
                self._reset()
                return
        self.stored_model_id = str(state.get("model_id"))
        segments = list(state.get("segments", []))
        prefix = len(self._segments) <= len(segments) and segments[: len(self._segments)] == self._segments
        if not prefix:
            self._reset()
        assert self.directory is not None
        for seg in segments[len(self._segments) :]:
            with np.load(self.directory / seg["file"], allow_pickle=False) as data:
                self._append_arrays(data)
            self._segments.append(seg)
        self._alive[: self._size] = True
        dead_file = state.get("dead")
        if dead_file:
            dead = np.load(self.directory / dead_file, allow_pickle=False)
            self._alive[dead] = False
        self._dead_file = dead_file
        self._generation = int(state.get("generation", 0))
        self._row_of = {key: row for row, key in enumerate(self._keys) if self._alive[row]}
        self._load_graphs()

    def _reset(self) -> None:
        import numpy as np

        self._vectors = np.zeros((0, self.dim), dtype=np.float32)
        self._size = 0
        self._ids = []
        self._keys = []
        self._row_of = {}
        self._alive = np.zeros(0, dtype=bool)
        self._tenants = _Codes()
        self._groups = _Codes()
        self._filters = {name: _Codes() for name in self.filter_fields}
        self._filter_codes = {name: np.zeros(0, dtype=np.int32) for name in self.filter_fields}
        self._segments = []
        self._dead_file = None
        self._graphs = {}

    # -- rows in memory ------------------------------------------------------------------------
    def _grow(self, extra: int) -> None:
        import numpy as np

        need = self._size + extra
        if need > len(self._vectors):
            capacity = max(need, 2 * len(self._vectors), 1024)
            vectors = np.zeros((capacity, self.dim), dtype=np.float32)
            vectors[: self._size] = self._vectors[: self._size]
            self._vectors = vectors
            alive = np.zeros(capacity, dtype=bool)
            alive[: self._size] = self._alive[: self._size]
            self._alive = alive
            for name in self.filter_fields:
                codes = np.full(capacity, -1, dtype=np.int32)
                codes[: self._size] = self._filter_codes[name][: self._size]
                self._filter_codes[name] = codes

    def _append_arrays(self, data: Any) -> None:
        vectors = data["vectors"]
        count = len(vectors)
        self._grow(count)
        start = self._size
        self._vectors[start : start + count] = vectors
        ids = [str(x) for x in data["ids"]]
        tenants = [str(x) for x in data["tenant"]]
        groups = [str(x) for x in data["groups"]]
        for offset in range(count):
            row = start + offset
            self._tenants.add(tenants[offset], row)
            for group in groups[offset].split(GROUP_SEP) if groups[offset] else ():
                self._groups.add(group, row)
        for name in self.filter_fields:
            values = [str(x) for x in data[f"f_{name}"]] if f"f_{name}" in data else [""] * count
            codes = self._filter_codes[name]
            for offset, value in enumerate(values):
                if value:
                    codes[start + offset] = self._filters[name].code(value)
        self._ids.extend(ids)
        self._keys.extend(document_key(tenant, doc) for tenant, doc in zip(tenants, ids, strict=True))
        self._size += count

    # -- writes (the caller holds the index writer) -------------------------------------------
    def stage(
        self,
        rows: Sequence[VectorRow],
        vectors: Any,
        deleted_keys: Iterable[str],
        base_opstamp: int,
        *,
        replace_all: bool = False,
    ) -> None:
        """Write a batch (new rows, and document keys whose old rows die) as ``pending``; visible after
        :meth:`promote`. A row replaces the live row of its own (tenant, id) only.

        ``replace_all`` starts from an empty state (re-embedding with another model).
        """
        import numpy as np

        with self._lock:
            if replace_all:
                generation = self._generation
                self._reset()
                self._generation = generation
            generation = self._generation + 1
            dead_rows = sorted(
                {self._row_of[d] for d in deleted_keys if d in self._row_of}
                | {self._row_of[r.key] for r in rows if r.key in self._row_of}
            )
            # Two versions of one document inside a batch: the last one wins.
            last: dict[str, int] = {}
            for position, row in enumerate(rows):
                last[row.key] = position
            keep = sorted(last.values())
            state = self._state_dict(generation)
            files: list[str] = []
            if keep:
                name = f"seg-{generation:08d}.npz"
                arrays: dict[str, Any] = {
                    "vectors": np.asarray(vectors, dtype=np.float32)[keep].reshape(len(keep), self.dim),
                    "ids": np.array([rows[i].doc_id for i in keep], dtype=str),
                    "tenant": np.array([rows[i].tenant for i in keep], dtype=str),
                    "groups": np.array([GROUP_SEP.join(rows[i].groups) for i in keep], dtype=str),
                }
                for field_name in self.filter_fields:
                    arrays[f"f_{field_name}"] = np.array([rows[i].filters.get(field_name, "") for i in keep], dtype=str)
                state["segments"].append({"file": name, "rows": len(keep)})
                files.append(name)
                self._pending_arrays = arrays
            else:
                self._pending_arrays = None
            if dead_rows:
                current_dead = np.flatnonzero(~self._alive[: self._size])
                merged = np.union1d(current_dead, np.asarray(dead_rows, dtype=np.int64)).astype(np.int64)
                state["dead"] = f"dead-{generation:08d}.npy"
                self._pending_dead = merged
                files.append(state["dead"])
            else:
                self._pending_dead = None
            state["base_opstamp"] = base_opstamp
            self._pending_state = state
            if self.directory is not None:
                if self._pending_arrays is not None:
                    path = self.directory / files[0]
                    with path.open("wb") as handle:
                        np.savez(handle, **self._pending_arrays)
                        handle.flush()
                        os.fsync(handle.fileno())
                if self._pending_dead is not None:
                    with (self.directory / state["dead"]).open("wb") as handle:
                        np.save(handle, self._pending_dead)
                        handle.flush()
                        os.fsync(handle.fileno())
                _fsync_write(self.directory / PENDING, json.dumps(state))

    def promote(self, opstamp: int) -> None:
        """Tantivy committed: the pending batch becomes the manifest and is applied in memory."""
        with self._lock:
            state = self._pending_state
            state["opstamp"] = opstamp
            if self.directory is not None:
                os.replace(self.directory / PENDING, self.directory / MANIFEST)
                _fsync_dir(self.directory)
            if self._pending_dead is not None:
                newly_dead = self._pending_dead[self._alive[self._pending_dead]]
                self._alive[self._pending_dead] = False
                for row in newly_dead.tolist():
                    if self._row_of.get(self._keys[row]) == row:
                        del self._row_of[self._keys[row]]
            if self._pending_arrays is not None:
                before = self._size
                self._append_arrays(self._pending_arrays)
                self._alive[before : self._size] = True
                for row in range(before, self._size):
                    self._row_of[self._keys[row]] = row
            self._segments = list(state["segments"])
            self._dead_file = state.get("dead")
            self._generation = int(state["generation"])
            self._state_key = (state.get("generation"), state.get("base_opstamp"))
            self.stored_model_id = self.model_id
            self._pending_arrays = None
            self._pending_dead = None

    def discard(self) -> None:
        """Tantivy did not commit: forget the pending batch (its files are removed by the next settle)."""
        with self._lock:
            if self.directory is not None:
                (self.directory / PENDING).unlink(missing_ok=True)
            self._pending_arrays = None
            self._pending_dead = None

    def _state_dict(self, generation: int) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "model_id": self.model_id,
            "dim": self.dim,
            "generation": generation,
            "segments": list(self._segments),
            "dead": self._dead_file,
        }

    # -- reads ----------------------------------------------------------------------------------
    @property
    def live_count(self) -> int:
        return len(self._row_of)

    def in_scope_rows(self, scope: Scope, filters: Iterable[tuple[str, str]], group_field: bool) -> Any:
        """Row numbers inside ``scope`` and ``filters`` (alive only), ascending."""
        import numpy as np

        code = self._tenants.code_of.get(scope.tenant_id)
        if code is None:
            return np.zeros(0, dtype=np.int64)
        rows = self._tenants.rows(code)
        rows = rows[self._alive[rows]]
        for name, value in filters:
            codes = self._filter_codes.get(name)
            wanted = self._filters[name].code_of.get(value) if name in self._filters else None
            if codes is None or wanted is None:
                return np.zeros(0, dtype=np.int64)
            rows = rows[codes[rows] == wanted]
        if group_field:
            member = np.zeros(self._size, dtype=bool)
            for group in set(scope.group_ids):
                gcode = self._groups.code_of.get(group)
                if gcode is not None:
                    member[self._groups.rows(gcode)] = True
            rows = rows[member[rows]]
        return rows

    def search(
        self, vector: Any, scope: Scope, filters: Iterable[tuple[str, str]], k: int, *, group_field: bool = False
    ) -> tuple[list[tuple[str, float]], int]:
        """The ``k`` in-scope rows most similar to ``vector`` (inner product of unit vectors) and the scope's size."""
        import numpy as np

        query = np.asarray(vector, dtype=np.float32).reshape(self.dim)
        with self._lock:
            rows = self.in_scope_rows(scope, filters, group_field)
            count = len(rows)
            if count == 0 or k <= 0:
                return [], count
            graph = self._graphs.get(scope.tenant_id)
            if count <= self.exact_limit or graph is None:
                chosen, scores = self._exact(rows, query, k)
            else:
                tenant_rows = self._tenants.rows(self._tenants.code_of[scope.tenant_id])
                chosen, scores = self._graph_search(graph, tenant_rows, rows, query, k)
            return [(self._ids[r], float(s)) for r, s in zip(chosen, scores, strict=True)], count

    def _exact(self, rows: Any, query: Any, k: int) -> tuple[Any, Any]:
        import numpy as np

        # einsum, not BLAS: OpenBLAS's threaded GEMV was 100x slower on a busy 2-core machine.
        scores = np.einsum("ij,j->i", self._vectors[rows], query)
        top = np.argpartition(-scores, k - 1)[:k] if len(rows) > k else np.arange(len(rows))
        order = top[np.lexsort((rows[top], -scores[top]))]
        return rows[order], scores[order]

    # -- the derived HNSW graphs, one per large tenant -------------------------------------------
    def ensure_graph(self, *, persist: bool = True) -> None:
        """Build or extend the HNSW graph of every tenant with more than ``exact_limit`` live rows.

        Called after each ingest; cheap when up to date. Small tenants never pay for a graph.
        """
        with self._lock:
            for tenant, code in self._tenants.code_of.items():
                rows = self._tenants.rows(code)
                if int(self._alive[rows].sum()) <= self.exact_limit:
                    continue
                graph = self._graphs.get(tenant)
                if graph is None:
                    graph = self._graphs[tenant] = _Graph(self._new_graph(), 0)
                if graph.covered < len(rows):
                    graph.index.add(self._vectors[rows[graph.covered :]])
                    graph.covered = len(rows)
                    if persist and self.directory is not None:
                        self._save_graph(tenant, graph)

    def _new_graph(self) -> Any:
        import faiss

        index = faiss.IndexHNSWFlat(self.dim, self.hnsw_m, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = 64
        return index

    def _graph_search(self, graph: _Graph, tenant_rows: Any, rows: Any, query: Any, k: int) -> tuple[Any, Any]:
        """HNSW over the tenant's rows, the walk restricted to the in-scope ones by a bitmap; the rest exactly."""
        import faiss
        import numpy as np

        positions = np.searchsorted(tenant_rows, rows)  # tenant rows ascend: a row's label in the graph
        inside = positions < graph.covered
        ef = max(self.ef_search, 2 * k)
        if int(inside.sum()) == graph.covered:  # every graph row is in scope: no bitmap needed
            params = faiss.SearchParametersHNSW(efSearch=ef)  # type: ignore[attr-defined]
        else:
            mask = np.zeros(graph.covered, dtype=bool)
            mask[positions[inside]] = True
            bits = np.packbits(mask, bitorder="little")
            selector = faiss.IDSelectorBitmap(graph.covered, faiss.swig_ptr(bits))
            params = faiss.SearchParametersHNSW(sel=selector, efSearch=ef)  # type: ignore[attr-defined]
        distances, labels = graph.index.search(query.reshape(1, -1), k, params=params)
        valid = labels[0] >= 0
        found = tenant_rows[labels[0][valid]]
        found_scores = distances[0][valid]
        tail = rows[~inside]
        if len(tail):  # rows added since the graph was last extended
            tail_rows, tail_scores = self._exact(tail, query, k)
            found = np.concatenate([found, tail_rows])
            found_scores = np.concatenate([found_scores, tail_scores])
        order = np.lexsort((found, -found_scores))[:k]
        return found[order], found_scores[order]

    def _graph_files(self, tenant: str) -> tuple[Path, Path]:
        assert self.directory is not None
        digest = hashlib.sha256(tenant.encode()).hexdigest()[:20]
        return self.directory / f"hnsw-{digest}.faiss", self.directory / f"hnsw-{digest}.json"

    def _save_graph(self, tenant: str, graph: _Graph) -> None:
        import faiss

        data, meta = self._graph_files(tenant)
        tmp = data.with_name(data.name + ".tmp")
        faiss.write_index(graph.index, str(tmp))
        os.replace(tmp, data)
        segments = [s["file"] for s in self._segments]
        _fsync_write(meta, json.dumps({"tenant": tenant, "covered": graph.covered, "segments": segments}))

    def _load_graphs(self) -> None:
        """Graphs saved by a writer, if they were built over a prefix of the current rows."""
        import faiss

        if self.directory is None:
            return
        segments = [s["file"] for s in self._segments]
        for meta_path in sorted(self.directory.glob("hnsw-*.json")):
            try:
                meta = json.loads(meta_path.read_text("utf-8"))
            except (OSError, ValueError):
                continue
            tenant, covered = str(meta.get("tenant")), int(meta.get("covered", 0))
            built_over = list(meta.get("segments", []))
            code = self._tenants.code_of.get(tenant)
            if code is None or built_over != segments[: len(built_over)] or covered > len(self._tenants.rows_of[code]):
                continue  # built over other rows (e.g. before a re-embed): rebuilt by the next ensure_graph
            current = self._graphs.get(tenant)
            if current is not None and current.covered >= covered:
                continue
            data = meta_path.with_suffix(".faiss")
            if data.exists():
                self._graphs[tenant] = _Graph(faiss.read_index(str(data)), covered)
