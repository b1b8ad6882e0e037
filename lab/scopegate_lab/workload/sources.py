"""The real ticket corpora the workload's distributions come from, read at run time (never copied).

``../shared/data/tickets`` holds 2,503 Hadoop Jira bugs (gitbugs) and 3,000 GitHub
issues of five projects (NLBSE'24). Each record becomes a :class:`RealTicket`
(product, title, body). A stable hash holds out a fifth of them: generated
bodies are built from the other four fifths only, and queries are drawn from
the held-out fifth, so a query is never a copy of a generated document's text.

:class:`SourceProfile` is what the generator samples from: per product, the
paragraph blocks of the real bodies (prose, stack traces, logs, code, in their
real proportions), the real body lengths and the real titles; plus the error
codes and exception names found in them.
"""

from __future__ import annotations

import csv
import os
import re
import sys
import zlib
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from scopegate.errors import ConfigError

DATA_ENV = "SCOPEGATE_SHARED_DATA"
HELD_OUT_PERCENT = 20
REPO_PRODUCTS = {
    "facebook/react": "react",
    "tensorflow/tensorflow": "tensorflow",
    "microsoft/vscode": "vscode",
    "bitcoin/bitcoin": "bitcoin",
    "opencv/opencv": "opencv",
}
PRODUCTS = ("hadoop", *REPO_PRODUCTS.values())

_BLANK_LINE = re.compile(r"\n[ \t]*\n")
_TRACE_LINE = re.compile(r"^\s*(?:at [\w$.<>/\\]+|File \".*\", line \d+|Traceback \(most recent call last\)|#\d+ 0x)")
_LOG_LINE = re.compile(
    r"^\s*\[?(?:\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}|\d{2}/\d{2}/\d{2} \d{2}:\d{2}|\d{2}:\d{2}:\d{2})"
    r"|\b(?:INFO|WARN|ERROR|DEBUG)\b"
)
_CODE_START = re.compile(r"^\s*(?:```|\{code|\{noformat|<\?xml|<configuration)")
# Error codes and exception names, as support engineers search for them.
ERROR_CODE_RE = re.compile(
    r"\b(?:[A-Z][A-Za-z0-9]*(?:Exception|Error)"  # NullPointerException, OSError
    r"|[A-Z]{2,10}-\d{2,6}"  # HDFS-1234, HADOOP-17853
    r"|(?:E|ERR|ERROR)[-_]?\d{2,5}"  # E4012, ERR_123
    r"|0x[0-9A-Fa-f]{6,8}"  # 0x80070005
    r"|[A-Z][A-Z0-9]+(?:_[A-Z0-9]+){1,4}"  # CUDA_ERROR_OUT_OF_MEMORY, ERR_CONNECTION_REFUSED
    r")\b"
)


@dataclass(frozen=True)
class RealTicket:
    product: str
    title: str
    body: str


def find_ticket_data(root: str | Path | None = None) -> Path:
    """The ``tickets`` folder of the shared data: ``root``, ``$SCOPEGATE_SHARED_DATA``, or ``../shared/data``.

    ``../shared/data`` is looked up beside the source checkout and beside the
    current directory (a worktree or a clean CI clone both have it there).
    """
    candidates: list[Path] = []
    if root is not None:
        candidates.append(Path(root))
    if os.environ.get(DATA_ENV):
        candidates.append(Path(os.environ[DATA_ENV]))
    here = Path(__file__).resolve()
    candidates += [p.parent / "shared" / "data" for p in here.parents[3:6]]
    candidates.append(Path.cwd().resolve().parent / "shared" / "data")
    for candidate in candidates:
        tickets = candidate if candidate.name == "tickets" else candidate / "tickets"
        if (tickets / "gitbugs" / "hadoop_bugs.csv").exists():
            return tickets
    raise ConfigError(
        f"real ticket data not found (looked in {', '.join(str(c) for c in candidates)}); "
        f"set {DATA_ENV} to the shared data folder"
    )


def _rows(path: Path) -> Iterator[dict[str, str]]:
    csv.field_size_limit(min(sys.maxsize, 2**31 - 1))
    with path.open(newline="", encoding="utf-8") as handle:
        yield from csv.DictReader(handle)


def read_real_tickets(tickets_dir: Path) -> list[RealTicket]:
    """Every record of both corpora, in file order; ``\\r\\n`` normalised to ``\\n``."""
    out: list[RealTicket] = []
    for row in _rows(tickets_dir / "gitbugs" / "hadoop_bugs.csv"):
        out.append(RealTicket("hadoop", row["Summary"].strip(), row["Description"].replace("\r\n", "\n")))
    for name in ("issues_train.csv", "issues_test.csv"):
        for row in _rows(tickets_dir / "nlbse24-github-issues" / name):
            product = REPO_PRODUCTS.get(row["repo"])
            if product:
                out.append(RealTicket(product, row["title"].strip(), row["body"].replace("\r\n", "\n")))
    return out


def is_held_out(index: int, ticket: RealTicket) -> bool:
    """A stable fifth of the records, the same on every machine (CRC of position and title)."""
    return zlib.crc32(f"{index}:{ticket.title}".encode()) % 100 < HELD_OUT_PERCENT


def block_kind(block: str) -> str:
    """``trace``, ``log``, ``code`` or ``prose``, from the block's lines."""
    lines = [line for line in block.split("\n") if line.strip()]
    if not lines:
        return "prose"
    if _CODE_START.match(lines[0]):
        return "code"
    traces = sum(1 for line in lines if _TRACE_LINE.match(line))
    if traces >= 2 or (traces and len(lines) <= 2):
        return "trace"
    logs = sum(1 for line in lines if _LOG_LINE.search(line))
    if logs >= max(2, len(lines) // 2):
        return "log"
    return "prose"


@dataclass
class ProductProfile:
    """What one product's generated tickets are made of."""

    blocks: list[tuple[str, bool]] = field(default_factory=list)  # (text, numbers may be varied)
    lengths: list[int] = field(default_factory=list)  # real body lengths, sorted
    titles: list[str] = field(default_factory=list)


@dataclass
class SourceProfile:
    """Distributions from the non-held-out real tickets, and the held-out tickets for queries."""

    products: dict[str, ProductProfile]
    held_out: list[RealTicket]
    error_codes: Counter[str]
    kinds: Counter[str]

    @classmethod
    def load(cls, root: str | Path | None = None) -> SourceProfile:
        tickets = read_real_tickets(find_ticket_data(root))
        products = {p: ProductProfile() for p in PRODUCTS}
        held_out: list[RealTicket] = []
        codes: Counter[str] = Counter()
        kinds: Counter[str] = Counter()
        for index, ticket in enumerate(tickets):
            if is_held_out(index, ticket):
                held_out.append(ticket)
                continue
            profile = products[ticket.product]
            if ticket.title:
                profile.titles.append(ticket.title)
            profile.lengths.append(len(ticket.body))
            codes.update(ERROR_CODE_RE.findall(ticket.body))
            for raw in _BLANK_LINE.split(ticket.body):
                block = raw.strip("\n")
                if len(block.strip()) < 3:
                    continue
                kind = block_kind(block)
                kinds[kind] += len(block)
                profile.blocks.append((block, kind in ("trace", "log")))
        for profile in products.values():
            profile.lengths.sort()
            if not profile.blocks or not profile.titles:
                raise ConfigError("the real ticket data is incomplete: a product has no records")
        return cls(products, held_out, codes, kinds)
