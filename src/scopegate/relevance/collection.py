"""Test collections with relevance judgments: BEIR layout or TREC files.

A BEIR folder holds ``corpus.jsonl`` (or ``corpus.part1ofN.jsonl`` ... read in
part order), ``queries.jsonl`` and ``qrels/test.tsv``. TREC files are a
topics file (``qid<TAB>text``) and a qrels file (``qid 0 docid rel``); the
corpus is JSONL with ``_id``/``id``/``docno`` and ``title``/``text``/``contents``.
Only judged queries are kept. :func:`load_collection` takes a folder and finds
either layout (the shared SciFact copy mixes them: split corpus, TREC qrels and topics).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scopegate.errors import ConfigError

Qrels = dict[str, dict[str, int]]
_PART = re.compile(r"corpus\.part(\d+)of(\d+)\.jsonl$")
ID_KEYS = ("_id", "id", "docno", "doc_id")
TITLE_KEYS = ("title",)
TEXT_KEYS = ("text", "contents", "body", "abstract")


@dataclass(frozen=True)
class Collection:
    name: str
    corpus_files: tuple[Path, ...]
    queries: dict[str, str]
    qrels: Qrels

    def documents(self) -> Iterator[dict[str, str]]:
        """``{"id", "title", "text"}`` per document, streamed in file order."""
        for path in self.corpus_files:
            with path.open(encoding="utf-8") as handle:
                for number, line in enumerate(handle, start=1):
                    if not line.strip():
                        continue
                    try:
                        raw = json.loads(line)
                    except ValueError as exc:
                        raise ConfigError(f"{path}:{number}: invalid JSON ({exc})") from exc
                    yield _document(raw, f"{path}:{number}")

    def judged_queries(self) -> list[tuple[str, str]]:
        return [(qid, self.queries[qid]) for qid in sorted(self.qrels, key=_natural) if qid in self.queries]


def _natural(key: str) -> tuple[int, str]:
    return (int(key), key) if key.isdigit() else (1 << 62, key)


def _first(raw: dict[str, Any], keys: tuple[str, ...]) -> str:
    for key in keys:
        value = raw.get(key)
        if value is not None:
            return str(value)
    return ""


def _document(raw: dict[str, Any], where: str) -> dict[str, str]:
    doc_id = _first(raw, ID_KEYS)
    if not doc_id:
        raise ConfigError(f"{where}: a corpus record needs one of {', '.join(ID_KEYS)}")
    return {"id": doc_id, "title": _first(raw, TITLE_KEYS), "text": _first(raw, TEXT_KEYS)}


def corpus_files(folder: Path) -> tuple[Path, ...]:
    whole = folder / "corpus.jsonl"
    if whole.is_file():
        return (whole,)
    parts = sorted((int(m.group(1)), int(m.group(2)), p) for p in folder.iterdir() if (m := _PART.search(p.name)))
    if not parts:
        raise ConfigError(f"{folder} has no corpus.jsonl or corpus.partNofM.jsonl")
    count = parts[0][1]
    if [p[0] for p in parts] != list(range(1, count + 1)) or any(p[1] != count for p in parts):
        raise ConfigError(f"{folder}: corpus parts are incomplete: {[p[2].name for p in parts]}")
    return tuple(p[2] for p in parts)


def read_queries(path: Path) -> dict[str, str]:
    """queries.jsonl (``_id``, ``text``) or a TREC/Anserini topics TSV (``qid<TAB>text``)."""
    out: dict[str, str] = {}
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if not line.strip():
                continue
            if path.suffix in (".jsonl", ".json"):
                raw = json.loads(line)
                out[str(raw.get("_id", raw.get("id")))] = str(raw.get("text", raw.get("query", "")))
            else:
                qid, _, text = line.rstrip("\n").partition("\t")
                out[qid.strip()] = text.strip()
    return out


def read_qrels(path: Path) -> Qrels:
    """TREC qrels (``qid iter docid rel``) or BEIR TSV (``query-id corpus-id score`` with a header)."""
    out: Qrels = {}
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            cols = line.split()
            if not cols or cols[0] in ("query-id", "query_id", "qid"):
                continue
            if len(cols) == 4:
                qid, _, doc, rel = cols
            elif len(cols) == 3:
                qid, doc, rel = cols
            else:
                raise ConfigError(f"{path}: cannot read qrels line {line.strip()!r}")
            out.setdefault(qid, {})[doc] = int(float(rel))
    return out


def _pick(folder: Path, patterns: tuple[str, ...]) -> Path | None:
    for pattern in patterns:
        found = sorted(folder.glob(pattern))
        if found:
            return found[0]
    return None


def load_collection(
    folder: str | Path, *, queries: str | Path | None = None, qrels: str | Path | None = None, split: str = "test"
) -> Collection:
    """A BEIR or TREC collection from ``folder`` (explicit ``queries``/``qrels`` files win)."""
    root = Path(folder)
    if not root.is_dir():
        raise ConfigError(f"collection folder {root} does not exist")
    qrels_path = Path(qrels) if qrels else _pick(root, (f"qrels/{split}.tsv", f"qrels*{split}*.txt", "qrels*.txt"))
    # Topics of the split first: BEIR's queries.jsonl may hold other splits' queries under the same ids.
    queries_path = Path(queries) if queries else _pick(root, (f"topics*{split}*.tsv", "queries.jsonl", "topics*.tsv"))
    if qrels_path is None or not qrels_path.is_file():
        raise ConfigError(f"{root}: no qrels file for split {split!r}")
    if queries_path is None or not queries_path.is_file():
        raise ConfigError(f"{root}: no queries.jsonl or topics TSV")
    judged = read_qrels(qrels_path)
    texts = read_queries(queries_path)
    missing = sorted(set(judged) - set(texts))
    if missing:
        raise ConfigError(f"{len(missing)} judged queries have no text in {queries_path} (e.g. {missing[:3]})")
    return Collection(name=root.name, corpus_files=corpus_files(root), queries=texts, qrels=judged)
