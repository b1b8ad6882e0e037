"""Rank the operations of a catalog for a few words: BM25 over an in-memory tantivy index.

Why tantivy: it is already scopegate's embedded search engine (a core dependency), so the
ranking is the well-tested BM25 with English stemming that the search tools use, field by
field (a name match weighs more than one in a long description), with no second ranking
implementation to keep correct. An index of 1,449 operations builds in well under a second,
once, at start-up; a query takes about a millisecond.

The query never reaches tantivy's query language: the words are cut out of the text (camel
case and snake case split, lowercased, at most :data:`MAX_QUERY_WORDS`) and joined again, so
``tag:x``, quotes, ``AND`` or ``-`` from a model are plain words or nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import tantivy

MAX_QUERY_CHARS = 300
MAX_QUERY_WORDS = 24
# Per-field weights: what an operation is called says most, then its summary, its tags and
# argument names, then the long description.
FIELD_BOOSTS = {"name": 3.0, "summary": 2.0, "tags": 1.5, "params": 1.0, "description": 0.7}
_WORD = re.compile(r"[A-Za-z0-9]+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def words(text: str) -> list[str]:
    """``"listOrders by customer_id"`` -> ``["list", "orders", "by", "customer", "id"]``."""
    out: list[str] = []
    for raw in _WORD.findall(text):
        out.extend(part.lower() for part in _CAMEL.split(raw) if part)
    return out


@dataclass(frozen=True)
class IndexedOperation:
    """The text of one operation the ranking reads."""

    name: str
    summary: str = ""
    description: str = ""
    tags: tuple[str, ...] = ()
    params: tuple[str, ...] = ()


class CatalogIndex:
    """Operations ranked by BM25 for a query; ``search`` answers positions into ``operations``."""

    def __init__(self, operations: Sequence[IndexedOperation]) -> None:
        self.operations = tuple(operations)
        builder = tantivy.SchemaBuilder()
        for field in FIELD_BOOSTS:
            builder.add_text_field(field, tokenizer_name="en_stem")
        builder.add_unsigned_field("position", stored=True, indexed=True)
        self._index = tantivy.Index(builder.build())
        writer = self._index.writer(15_000_000, 1)
        for position, op in enumerate(self.operations):
            doc = tantivy.Document()
            doc.add_text("name", " ".join([op.name, *words(op.name)]))
            doc.add_text("summary", " ".join(words(op.summary)))
            doc.add_text("description", " ".join(words(op.description)))
            doc.add_text("tags", " ".join(w for tag in op.tags for w in [tag.lower(), *words(tag)]))
            doc.add_text("params", " ".join(w for p in op.params for w in words(p)))
            doc.add_unsigned("position", position)
            writer.add_document(doc)
        writer.commit()
        writer.wait_merging_threads()
        self._index.reload()

    @staticmethod
    def query_words(query: str) -> list[str]:
        """The words a query is searched by (the order kept, duplicates dropped)."""
        return list(dict.fromkeys(words(query[:MAX_QUERY_CHARS])))[:MAX_QUERY_WORDS]

    def search(self, query: str, *, among: Iterable[int] | None = None) -> list[tuple[int, float]]:
        """(position, score) of every operation matching a word of ``query``, best first, ties in spec order.

        ``among`` keeps only those positions (the caller's permitted operations, a tag).
        """
        terms = self.query_words(query)
        if not terms or not self.operations:
            return []
        parsed = self._index.parse_query(" ".join(terms), list(FIELD_BOOSTS), field_boosts=FIELD_BOOSTS)
        searcher = self._index.searcher()
        hits = searcher.search(parsed, len(self.operations)).hits
        keep = set(among) if among is not None else None
        found: list[tuple[int, float]] = []
        for score, address in hits:
            position = int(searcher.doc(address)["position"][0])
            if keep is None or position in keep:
                found.append((position, float(score)))
        found.sort(key=lambda hit: (-hit[1], hit[0]))
        return found
