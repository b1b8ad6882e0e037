"""Shaped results pinned by snapshots: the bounded shaper must keep today's output exactly.

The snapshots were recorded with the shaper as it was before issue 13 (which
cleaned every body whole); they must not change when the shaping work is bounded.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from syrupy.extensions.json import JSONSnapshotExtension

from scopegate.search.analysis import analyze, unique_terms
from scopegate.search.model import RawHit, RawResult, SearchRequest
from scopegate.search.shaper import shape_document, shape_search
from scopegate.search.spec import SearchSpec

_VOCABULARY = (
    "the block report from datanode was rejected because namenode lease expired while the client retried "
    "write pipeline recovery failed on volume and we restarted the service but the job still hangs "
    "please advise thanks regards team cluster upgrade yesterday config changed heap size"
)
WORDS = tuple(_VOCABULARY.split())

TRACE = (
    'java.lang.NullPointerException: Cannot invoke "String.length()" because "name" is null\n'
    "\tat org.apache.hadoop.hdfs.server.namenode.FSNamesystem.getBlockLocations(FSNamesystem.java:2043)\n"
    "\tat org.apache.hadoop.hdfs.server.namenode.NameNodeRpcServer.getBlockLocations(NameNodeRpcServer.java:767)\n"
    "\tat org.apache.hadoop.ipc.ProtobufRpcEngine2$Server$ProtoBufRpcInvoker.call(ProtobufRpcEngine2.java:621)\n"
)


def _prose(rng: random.Random, chars: int) -> str:
    out: list[str] = []
    size = 0
    while size < chars:
        sentence = " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 18))).capitalize() + ". "
        if rng.random() < 0.2:
            sentence += "\n\n"
        out.append(sentence)
        size += len(sentence)
    return "".join(out)


def _thread(rng: random.Random, chars: int) -> str:
    """An email-like thread: a reply on top, the earlier message quoted below it."""
    first = _prose(rng, chars // 2) + "\n" + TRACE
    quoted = "\n".join("> " + line for line in first.splitlines())
    return _prose(rng, chars // 3) + "\n\nOn Mon, 3 Jun 2024 at 10:12, Dana <dana@example.com> wrote:\n" + quoted


def _bodies() -> list[str]:
    rng = random.Random(13)
    return [
        _thread(rng, 6_000),  # NullPointerException deep inside the quoted part
        "NullPointerException on startup. " + _prose(rng, 3_000),  # match at the very start
        _prose(rng, 40) + " NullPointerException " + _prose(rng, 2_000),  # match inside the first fifth
        _prose(rng, 9_000),  # no body match: the subject matched
        "Short body: NullPointerException.",
        "  \n\t  " + "Ünïcödé 日本語 🙂 " * 40 + "\x00\x07 NullPointerException\r\n" + "\u00a0" * 30 + _prose(rng, 800),
    ]


def _hit(i: int, body: str) -> RawHit:
    fields = {"ticket_id": f"T-{i}", "subject": f"Datanode failure number {i}", "status": "open", "body": body}
    return RawHit(f"T-{i}", 1.0, fields)


@pytest.fixture
def snap(snapshot: Any) -> Any:
    return snapshot.use_extension(JSONSnapshotExtension)


@pytest.mark.parametrize("query", ["NullPointerException", "block report lease", "zebra", "datanode"])
def test_shaped_search_is_pinned(spec: SearchSpec, snap: Any, query: str) -> None:
    bodies = _bodies()
    hits = tuple(_hit(i, b) for i, b in enumerate(bodies[:5]))
    raw = RawResult(hits, 123)
    out = shape_search(spec, SearchRequest(query), raw, unique_terms(query), analyze)
    assert out == snap


def test_single_hits_are_pinned(spec: SearchSpec, snap: Any) -> None:
    outs = []
    for i, body in enumerate(_bodies()):
        raw = RawResult((_hit(i, body),), 1)
        terms = unique_terms("nullpointerexception")
        outs.append(shape_search(spec, SearchRequest("NullPointerException"), raw, terms, analyze))
    assert outs == snap


def test_fetched_document_is_pinned(spec: SearchSpec, snap: Any) -> None:
    body = _thread(random.Random(5), 30_000)
    doc = {"ticket_id": "T-9", "tenant_id": "acme", "subject": "s " * 600, "status": "open", "body": body}
    assert shape_document(spec, doc) == snap
