"""The files of an embedded index folder, read and written without surprises.

* ``scopegate-spec.json`` (the spec the index was built with) is written only
  when an index is created or ingested into, always atomically: a unique
  temporary file, fsync, then ``link`` (create, refusing to replace) or
  ``rename`` (replace). Opening an index for search reads it and writes nothing.
* ``meta.json`` is tantivy's commit point. Its bytes say exactly which commit
  a reader serves, so their digest is the index generation (:func:`read_meta`).
* A folder this process cannot write (a read-only mount, another user's
  files) is opened through a :class:`ReadOnlyView`: a private folder of
  symbolic links to the index files, where tantivy can take the lock it wants
  for every reader open. Nothing is ever written into the index folder.
* :func:`shape_problems` names each field that differs between the spec an
  index was built with (or its on-disk schema) and the spec it is opened with.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scopegate.documents import parse_json, read_bytes
from scopegate.errors import ConfigError
from scopegate.search.spec import COMBINED_FIELD, SPEC_FILE_LIMITS, SearchSpec, from_stored, to_stored

SPEC_FILE = "scopegate-spec.json"
META_FILE = "meta.json"
# The tenant-qualified document key (scopegate.scope.document_key): upserts and deletes go by it.
KEY_FIELD = "_scopegate_key"
META_LIMIT_BYTES = 64_000_000


@dataclass(frozen=True)
class Meta:
    """One read of ``meta.json``: its digest (the generation) and the schema's field entries by name."""

    digest: str
    schema: Mapping[str, Mapping[str, Any]]
    opstamp: int

    @property
    def fields(self) -> frozenset[str]:
        return frozenset(self.schema)

    @property
    def date_field(self) -> str | None:
        """The index's date field (scopegate writes at most one), or None."""
        dates = sorted(name for name, entry in self.schema.items() if entry.get("type") == "date")
        return dates[0] if dates else None


def read_meta(folder: Path) -> Meta | None:
    """The current commit point of the index in ``folder``, or None when there is none."""
    try:
        with open(folder / META_FILE, "rb") as handle:
            raw = handle.read(META_LIMIT_BYTES + 1)
    except FileNotFoundError:
        return None
    if len(raw) > META_LIMIT_BYTES:
        raise ConfigError(f"{folder / META_FILE} is larger than {META_LIMIT_BYTES} bytes")
    digest = hashlib.blake2b(raw, digest_size=16).hexdigest()
    try:
        data = json.loads(raw)
        schema = {str(f["name"]): dict(f) for f in data.get("schema", [])}
        opstamp = int(data.get("opstamp", 0))
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise ConfigError(f"{folder / META_FILE} is not a tantivy commit point: {exc}") from exc
    return Meta(digest, schema, opstamp)


def writable(folder: Path) -> bool:
    """Whether this process may create files in ``folder`` (False on a read-only mount)."""
    return os.access(folder, os.W_OK | os.X_OK)


# -- the stored spec ---------------------------------------------------------------------------
# Below this many free bytes a failed write is blamed on the disk: tantivy's own
# error often says only that "an index writer was killed" when a thread hit ENOSPC.
LOW_SPACE_BYTES = 8 * 1024 * 1024
PROBE_BYTES = 64 * 1024


def storage_problem(folder: Path) -> str | None:
    """Why writes into ``folder`` fail, when the file system can say: full or read-only.

    Called after an engine write failed, so the error names the cause instead of
    a writer thread's panic. A small probe file tells ENOSPC and EROFS apart from
    anything else; the free-space figure catches a disk that is nearly full.
    """
    try:
        stats = os.statvfs(folder)
    except OSError as exc:
        return f"cannot inspect the disk holding {folder}: {exc.strerror or exc}"
    free = stats.f_bavail * stats.f_frsize
    total = stats.f_blocks * stats.f_frsize
    probe = folder / f".scopegate-probe-{uuid.uuid4().hex}"
    try:
        with open(probe, "xb") as handle:
            handle.write(b"\0" * PROBE_BYTES)
            handle.flush()
            os.fsync(handle.fileno())
    except OSError as exc:
        if exc.errno is not None:
            return f"{os.strerror(exc.errno)}: the disk holding {folder} has {free} of {total} bytes free"
        return f"cannot write into {folder}: {exc}"
    finally:
        with contextlib.suppress(OSError):
            probe.unlink()
    if free < min(LOW_SPACE_BYTES, total // 50):  # nearly full, relative to the disk's size on small ones
        return f"{os.strerror(28)} (nearly): the disk holding {folder} has {free} of {total} bytes free"
    return None


def read_spec_file(folder: Path) -> SearchSpec | None:
    """The spec stored beside the index in ``folder``, or None when there is none."""
    path = folder / SPEC_FILE
    return read_stored_spec(path) if path.is_file() else None


def read_stored_spec(path: Path) -> SearchSpec:
    """The spec in a ``scopegate-spec.json`` file."""
    raw = read_bytes(path, SPEC_FILE_LIMITS, what="stored spec")
    data = parse_json(raw, str(path), SPEC_FILE_LIMITS).data
    if not isinstance(data, Mapping):
        raise ConfigError(f"{path}: a stored spec must be a JSON object")
    return from_stored(data, source=str(path))


def _temp_file(folder: Path, text: str) -> Path:
    tmp = folder / f".{SPEC_FILE}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    return tmp


def _sync_folder(folder: Path) -> None:
    with contextlib.suppress(OSError):  # not every file system lets a folder be opened
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def write_spec_file(folder: Path, spec: SearchSpec, *, replace: bool) -> bool:
    """Store ``spec`` atomically; ``replace=False`` only creates (returns False when a file was there)."""
    text = json.dumps(to_stored(spec), indent=2, sort_keys=True)
    tmp = _temp_file(folder, text)
    target = folder / SPEC_FILE
    try:
        if replace:
            os.replace(tmp, target)
        else:
            try:
                os.link(tmp, target)
            except FileExistsError:
                return False
        _sync_folder(folder)
        return True
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


# -- compatibility ----------------------------------------------------------------------------
_SHAPE_PARTS = (
    "id_field",
    "tenant_field",
    "group_field",
    "text_fields",
    "filters",
    "keyword_fields",
    "combined_fields weights",
)


def _index_shape(spec: SearchSpec) -> tuple[Any, ...]:
    """The parts of a spec that decide the on-disk schema (named by ``_SHAPE_PARTS``)."""
    return (
        spec.id_field,
        spec.tenant_field,
        spec.group_field,
        spec.text_field_names(),
        tuple(sorted(f.name for f in spec.filters)),
        tuple(sorted(spec.keyword_fields)),
        # The combined field's recipe is on disk: changing a weight under combined_fields needs a re-ingest.
        spec.combined_weights() if spec.field_combination == "combined_fields" else None,
    )


def _shown(value: Any) -> str:
    if isinstance(value, tuple):
        return ", ".join(map(str, value)) or "none"
    return str(value)


def mapping_drift(stored: SearchSpec, spec: SearchSpec) -> list[str]:
    """How ``spec`` differs from the spec an index was built with: schema parts (a re-ingest into a new folder
    is needed), the date field, and filters whose allowed values changed (stored values may match no more)."""
    out = [
        f"{part}: index has {_shown(have)}, spec has {_shown(want)}"
        for part, have, want in zip(_SHAPE_PARTS, _index_shape(stored), _index_shape(spec), strict=True)
        if have != want
    ]
    if stored.date_field != spec.date_field:
        out.append(f"date_field: index has {stored.date_field}, spec has {spec.date_field}")
    before = {f.name: f.allowed for f in stored.filters}
    for fil in spec.filters:
        if fil.name in before and set(before[fil.name]) != set(fil.allowed):
            out.append(f"filter {fil.name} allowed values: index has {_shown(before[fil.name])}, spec has "
                       f"{_shown(fil.allowed)}")  # fmt: skip
    return out


def _date_problem(have: str | None, want: str | None) -> list[str]:
    """An index without a date field opens with a spec that has one (dates are not stored) and a dated
    index with a spec that omits it; another date field is a different mapping."""
    if have is not None and want is not None and have != want:
        return [f"date_field: index has {have}, spec has {want}"]
    return []


def shape_problems(stored: SearchSpec, wanted: SearchSpec) -> list[str]:
    """The drift that makes an index unusable with ``wanted`` (:func:`mapping_drift` less what is not on disk:
    allowed filter values, a date field only one side has), each naming the spec key."""
    problems = [d for d in mapping_drift(stored, wanted) if not d.startswith(("filter ", "date_field"))]
    return problems + _date_problem(stored.date_field, wanted.date_field)


def schema_problems(meta: Meta, wanted: SearchSpec) -> list[str]:
    """Fields the spec needs that the index lacks, and fields the index has that the spec does not know."""
    problems = _date_problem(meta.date_field, wanted.date_field)
    fields_on_disk = meta.fields - {meta.date_field} if meta.date_field and not problems else meta.fields
    expected = {*wanted.stored_fields(), KEY_FIELD} - {wanted.date_field}
    if wanted.field_combination == "combined_fields":
        expected.add(COMBINED_FIELD)
    missing = sorted(expected - fields_on_disk - {KEY_FIELD})
    extra = sorted(fields_on_disk - expected)
    if missing:
        problems.append(f"fields the spec has and the index lacks: {', '.join(missing)}")
    if extra:
        problems.append(f"fields the index has and the spec lacks: {', '.join(extra)}")
    return problems


def index_problems(folder: Path, wanted: SearchSpec) -> list[str]:
    """Why the index in ``folder`` cannot be opened with ``wanted``, read-only (``[]``: it can, or no index)."""
    problems: list[str] = []
    stored = read_spec_file(folder)
    if stored is not None:
        problems += shape_problems(stored, wanted)
    meta = read_meta(folder)
    if meta is not None and not problems:
        problems += schema_problems(meta, wanted)
    return problems


def legacy_keys(meta: Meta) -> bool:
    """True for an index written before documents were keyed by (tenant, id) (no key field)."""
    return KEY_FIELD not in meta.fields


# -- read-only folders -------------------------------------------------------------------------
class ReadOnlyView:
    """A private folder of symlinks to the files of a read-only index folder.

    tantivy takes a lock file in the index folder for every reader open and
    reload; here it takes it in the view. :meth:`sync` links files that
    appeared since (new segments written by a writer elsewhere); ``meta.json``
    is a link by name, so it always reads the source's current commit point.
    """

    def __init__(self, source: Path) -> None:
        # Absolute: a link's relative target is read from the view's folder, not from the caller's.
        self.source = Path(os.path.abspath(source))
        self.folder = Path(tempfile.mkdtemp(prefix="scopegate-ro-view-"))
        self.sync()

    def sync(self) -> None:
        for entry in os.scandir(self.source):
            if entry.name.startswith(".tantivy-") or not entry.is_file():
                continue  # lock files are the view's own
            link = self.folder / entry.name
            if not os.path.lexists(link):
                os.symlink(os.path.join(self.source, entry.name), link)

    def close(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


@contextlib.contextmanager
def reading_folder(folder: Path) -> Iterator[Path]:
    """The folder to hand tantivy for reading ``folder``: itself when writable, else a
    :class:`ReadOnlyView` of it (tantivy's reader lock file cannot be made on a read-only mount)."""
    if writable(folder):
        yield folder
        return
    view = ReadOnlyView(folder)
    try:
        yield view.folder
    finally:
        view.close()
