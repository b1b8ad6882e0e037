"""Replay logged search calls against the current index and diff the results.

For each logged call (same tool, same scope, same normalised query, filters
and page) the tool is run again, bypassing any cache, and compared with what
the log recorded: Jaccard@5 of the returned ids, rank changes, total changes
and zero-result flips in both directions. Aggregates are checked against
thresholds so a mapping, analyzer or boost change can be gated in CI.

The core takes any :class:`~scopegate.tools.ScopedTool`, so it works for the
embedded engine, OpenSearch and Elasticsearch alike.
"""

from __future__ import annotations

import asyncio
import functools
import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from scopegate.context import CallContext
from scopegate.guard.logfile import record_time
from scopegate.scope import Scope, ScopeKeys, state_for
from scopegate.tools import ScopedTool

TOP_K = 5
REFUSALS = frozenset({"CALL_LIMIT", "RATE_LIMITED"})


@dataclass(frozen=True)
class LoggedSearch:
    """One logged, successful search call: what to re-run and what it returned."""

    tool: str
    scope: Scope
    query: str
    filters: tuple[tuple[str, str], ...]
    page: int
    ids: tuple[str, ...]
    total: int | None
    total_relation: str | None
    ts: datetime | None = None

    def args(self) -> dict[str, Any]:
        out: dict[str, Any] = {"query": self.query}
        out.update(dict(self.filters))
        out["page"] = self.page
        return out

    def key(self) -> tuple[Any, ...]:
        return (self.tool, self.scope.cache_key(), self.query, self.filters, self.page)


def _str_list(value: Any) -> list[str] | None:
    if not isinstance(value, list):
        return None
    return [str(v) for v in value if v is not None]


def logged_search_from_record(record: Mapping[str, Any]) -> LoggedSearch | None:
    """A replayable search from a call-log record, or ``None`` (not a search, failed, refused)."""
    if record.get("event", "call") != "call" or record.get("outcome") != "ok":
        return None
    tool, tenant, query = record.get("tool"), record.get("tenant_id"), record.get("query")
    page = record.get("page")
    ids = _str_list(record.get("ids"))
    if not (isinstance(tool, str) and isinstance(tenant, str) and tenant and isinstance(query, str) and query):
        return None
    if not isinstance(page, int) or isinstance(page, bool) or page < 1 or ids is None:
        return None
    raw_filters = record.get("filters") or {}
    if not isinstance(raw_filters, Mapping):
        return None
    filters = tuple(sorted((str(k), str(v)) for k, v in raw_filters.items() if v is not None))
    groups = _str_list(record.get("group_ids")) or []
    user = record.get("user_id")
    total = record.get("total")
    relation = record.get("total_relation")
    return LoggedSearch(
        tool=tool,
        scope=Scope(tenant_id=tenant, group_ids=tuple(groups), user_id=user if isinstance(user, str) else None),
        query=query,
        filters=filters,
        page=page,
        ids=tuple(ids),
        total=total if isinstance(total, int) and not isinstance(total, bool) else None,
        total_relation=relation if isinstance(relation, str) else None,
        ts=record_time(dict(record)),
    )


def collect_searches(
    records: Iterable[Mapping[str, Any]], *, tool: str | None = None
) -> tuple[list[LoggedSearch], int]:
    """Distinct replayable searches (the latest logged result of each), and how many records were skipped."""
    latest: dict[tuple[Any, ...], LoggedSearch] = {}
    skipped = 0
    for record in records:
        call = logged_search_from_record(record)
        if call is None or (tool is not None and call.tool != tool):
            skipped += 1
            continue
        key = call.key()
        latest.pop(key, None)
        latest[key] = call
    return list(latest.values()), skipped


def sample_searches(calls: Sequence[LoggedSearch], n: int | None, *, seed: int = 0) -> list[LoggedSearch]:
    """A reproducible sample of ``n`` calls (all when ``n`` is None or larger than the log)."""
    if n is None or n >= len(calls):
        return list(calls)
    return random.Random(seed).sample(list(calls), n)


# -- comparing ------------------------------------------------------------------
def jaccard_at(old: Sequence[str], new: Sequence[str], k: int = TOP_K) -> float:
    a, b = set(old[:k]), set(new[:k])
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


@dataclass(frozen=True)
class RankChange:
    doc_id: str
    old_rank: int | None  # 1-based; None: entered the top k
    new_rank: int | None  # None: left the top k


def rank_changes(old: Sequence[str], new: Sequence[str], k: int = TOP_K) -> list[RankChange]:
    old_k, new_k = list(old[:k]), list(new[:k])
    out: list[RankChange] = []
    for i, doc in enumerate(old_k, start=1):
        j = new_k.index(doc) + 1 if doc in new_k else None
        if j != i:
            out.append(RankChange(doc, i, j))
    for j, doc in enumerate(new_k, start=1):
        if doc not in old_k:
            out.append(RankChange(doc, None, j))
    return out


@dataclass
class CallDiff:
    call: LoggedSearch
    new_ids: tuple[str, ...] = ()
    new_total: int | None = None
    new_relation: str | None = None
    error_code: str | None = None
    jaccard5: float | None = None
    changes: list[RankChange] = field(default_factory=list)

    @property
    def old_count(self) -> int:
        return self.call.total if self.call.total is not None else len(self.call.ids)

    @property
    def new_count(self) -> int:
        return self.new_total if self.new_total is not None else len(self.new_ids)

    @property
    def top_changed(self) -> bool:
        return self.error_code is None and tuple(self.call.ids[:TOP_K]) != tuple(self.new_ids[:TOP_K])

    @property
    def total_delta(self) -> int | None:
        if self.error_code is not None:
            return None
        return self.new_count - self.old_count

    @property
    def zero_flip(self) -> str | None:
        """``"to_zero"`` (had results, now none) or ``"from_zero"`` (had none, now some)."""
        if self.error_code is not None:
            return None
        if self.old_count > 0 and self.new_count == 0:
            return "to_zero"
        if self.old_count == 0 and self.new_count > 0:
            return "from_zero"
        return None

    def as_dict(self) -> dict[str, Any]:
        c = self.call
        return {
            "tool": c.tool,
            "tenant_id": c.scope.tenant_id,
            "group_ids": list(c.scope.group_ids),
            "user_id": c.scope.user_id,
            "query": c.query,
            "filters": dict(c.filters),
            "page": c.page,
            "logged_ts": c.ts.isoformat() if c.ts else None,
            "old_ids": list(c.ids),
            "new_ids": list(self.new_ids),
            "old_total": c.total,
            "old_total_relation": c.total_relation,
            "new_total": self.new_total,
            "new_total_relation": self.new_relation,
            "total_delta": self.total_delta,
            "jaccard_at_5": self.jaccard5,
            "top5_changed": self.top_changed,
            "rank_changes": [{"id": r.doc_id, "old": r.old_rank, "new": r.new_rank} for r in self.changes],
            "zero_flip": self.zero_flip,
            "error_code": self.error_code,
        }


@dataclass(frozen=True)
class Thresholds:
    """Limits for a passing replay; ``None`` means "not checked"."""

    max_jaccard_drop: float | None = 0.05  # 1 - mean Jaccard@5
    max_changed_share: float | None = None  # share of calls whose top 5 (ids or order) changed
    max_total_changed_share: float | None = None  # share of calls whose total changed
    max_to_zero: int | None = 0  # calls that had results and now have none
    max_from_zero: int | None = None  # calls that had none and now have some
    max_errors: int | None = 0  # calls that now fail
    min_calls: int = 1


@dataclass
class ReplayReport:
    diffs: list[CallDiff]
    logged: int = 0
    skipped: int = 0
    thresholds: Thresholds = field(default_factory=Thresholds)

    def summary(self) -> dict[str, Any]:
        ok = [d for d in self.diffs if d.error_code is None]
        n = len(self.diffs)
        js = [d.jaccard5 for d in ok if d.jaccard5 is not None]
        mean_j = sum(js) / len(js) if js else None
        moved = [r for d in ok for r in d.changes if r.old_rank is not None and r.new_rank is not None]
        return {
            "replayed": n,
            "logged_searches": self.logged,
            "skipped_records": self.skipped,
            "errors": n - len(ok),
            "mean_jaccard_at_5": mean_j,
            "min_jaccard_at_5": min(js) if js else None,
            "jaccard_drop": (1.0 - mean_j) if mean_j is not None else None,
            "top5_changed": sum(d.top_changed for d in ok),
            "changed_share": (sum(d.top_changed for d in ok) / len(ok)) if ok else None,
            "rank_moves": len(moved),
            "mean_abs_rank_move": (
                sum(abs((r.new_rank or 0) - (r.old_rank or 0)) for r in moved) / len(moved) if moved else 0.0
            ),
            "entered_top5": sum(1 for d in ok for r in d.changes if r.old_rank is None),
            "left_top5": sum(1 for d in ok for r in d.changes if r.new_rank is None),
            "total_changed": sum(1 for d in ok if d.total_delta),
            "total_changed_share": (sum(1 for d in ok if d.total_delta) / len(ok)) if ok else None,
            "to_zero": sum(1 for d in ok if d.zero_flip == "to_zero"),
            "from_zero": sum(1 for d in ok if d.zero_flip == "from_zero"),
        }

    def violations(self) -> list[str]:
        t = self.thresholds
        s = self.summary()
        out: list[str] = []
        if s["replayed"] < t.min_calls:
            out.append(f"only {s['replayed']} call(s) replayed, at least {t.min_calls} required")
        checks: list[tuple[str, float | None, float | None]] = [
            ("mean Jaccard@5 drop", s["jaccard_drop"], t.max_jaccard_drop),
            ("share of calls with a changed top 5", s["changed_share"], t.max_changed_share),
            ("share of calls with a changed total", s["total_changed_share"], t.max_total_changed_share),
            ("calls that lost all results", s["to_zero"], t.max_to_zero),
            ("calls that gained results from none", s["from_zero"], t.max_from_zero),
            ("calls that now fail", s["errors"], t.max_errors),
        ]
        for label, value, limit in checks:
            if limit is not None and value is not None and value > limit + 1e-12:
                out.append(f"{label}: {_fmt(value)} > {_fmt(limit)}")
        return out

    def passed(self) -> bool:
        return not self.violations()

    def as_dict(self) -> dict[str, Any]:
        return {
            "passed": self.passed(),
            "violations": self.violations(),
            "summary": self.summary(),
            "thresholds": dict(self.thresholds.__dict__),
            "calls": [d.as_dict() for d in self.diffs],
        }


def _fmt(value: float) -> str:
    return f"{value:.3f}" if isinstance(value, float) and not value.is_integer() else f"{value:g}"


# -- running ----------------------------------------------------------------------
def scope_state(keys: ScopeKeys) -> Callable[[Scope], dict[str, Any]]:
    """Session state that a tool reading ``keys`` turns back into the same scope."""

    return functools.partial(state_for, keys=keys)


def default_state_for(tool: ScopedTool) -> Callable[[Scope], dict[str, Any]]:
    return scope_state(tool.scope_keys)


async def replay_call(
    tool: ScopedTool, call: LoggedSearch, state_for: Callable[[Scope], Mapping[str, Any]]
) -> CallDiff:
    ctx = CallContext(state=state_for(call.scope), invocation_id="scopegate-replay", session_id="scopegate-replay")
    args = call.args()
    try:
        outcome = await tool.run(args, ctx)
    except Exception:  # tools should never raise; count it as a failure
        return CallDiff(call, error_code="INTERNAL")
    if not outcome.ok:
        return CallDiff(call, error_code=outcome.error_code or "INTERNAL")
    fields = outcome.log
    ids = tuple(_str_list(fields.get("ids")) or [])
    total = fields.get("total")
    relation = fields.get("total_relation")
    return CallDiff(
        call,
        new_ids=ids,
        new_total=total if isinstance(total, int) and not isinstance(total, bool) else None,
        new_relation=relation if isinstance(relation, str) else None,
        jaccard5=jaccard_at(call.ids, ids),
        changes=rank_changes(call.ids, ids),
    )


async def replay(
    tool: ScopedTool,
    calls: Sequence[LoggedSearch],
    *,
    state_for: Callable[[Scope], Mapping[str, Any]] | None = None,
    concurrency: int = 1,
    thresholds: Thresholds | None = None,
    logged: int | None = None,
    skipped: int = 0,
) -> ReplayReport:
    """Re-run ``calls`` (those of ``tool.name``) with their own scope and diff them."""
    build_state = state_for or default_state_for(tool)
    mine = [c for c in calls if c.tool == tool.name]
    gate = asyncio.Semaphore(max(1, concurrency))

    async def one(call: LoggedSearch) -> CallDiff:
        async with gate:
            return await replay_call(tool, call, build_state)

    diffs = list(await asyncio.gather(*(one(c) for c in mine)))
    return ReplayReport(
        diffs=diffs,
        logged=len(calls) if logged is None else logged,
        skipped=skipped + (len(calls) - len(mine)),
        thresholds=thresholds or Thresholds(),
    )


# -- rendering ---------------------------------------------------------------------
def _clip(text: str, width: int) -> str:
    text = text.replace("\n", " ")
    return text if len(text) <= width else text[: width - 1] + "…"


def render_table(report: ReplayReport, *, show: int = 50) -> str:
    """A readable table: the calls that changed first, then the aggregate and the verdict."""
    rows = sorted(
        report.diffs,
        key=lambda d: (d.error_code is None, d.jaccard5 if d.jaccard5 is not None else 0.0, -abs(d.total_delta or 0)),
    )
    header = f"{'#':>3}  {'tenant':<12} {'query':<32} {'pg':>2} {'J@5':>5} {'total':>15} {'flip':<9} moves"
    lines = [header, "-" * len(header)]
    for i, d in enumerate(rows[:show], start=1):
        c = d.call
        if d.error_code is not None:
            lines.append(
                f"{i:>3}  {_clip(c.scope.tenant_id, 12):<12} {_clip(c.query, 32):<32} {c.page:>2} error {d.error_code}"
            )
            continue
        total = f"{c.total if c.total is not None else '?'}->{d.new_total if d.new_total is not None else '?'}"
        moves = ", ".join(f"{r.doc_id}:{r.old_rank or '-'}->{r.new_rank or '-'}" for r in d.changes[:4]) + (
            " …" if len(d.changes) > 4 else ""
        )
        lines.append(
            f"{i:>3}  {_clip(c.scope.tenant_id, 12):<12} {_clip(c.query, 32):<32} {c.page:>2} "
            f"{(d.jaccard5 or 0.0):>5.2f} {total:>15} {(d.zero_flip or ''):<9} {moves}"
        )
    if len(rows) > show:
        lines.append(f"... {len(rows) - show} more call(s) not shown")
    s = report.summary()
    lines.append("")
    lines.append(
        f"replayed {s['replayed']} of {s['logged_searches']} logged search(es); skipped records: {s['skipped_records']}"
    )
    if s["mean_jaccard_at_5"] is not None:
        lines.append(
            f"mean Jaccard@5 {s['mean_jaccard_at_5']:.3f} (drop {s['jaccard_drop']:.3f}), "
            f"min {s['min_jaccard_at_5']:.3f}; "
            f"top 5 changed in {s['top5_changed']} call(s); {s['rank_moves']} rank move(s), "
            f"{s['entered_top5']} entered / {s['left_top5']} left the top 5"
        )
    lines.append(
        f"totals changed in {s['total_changed']} call(s); zero-result flips: {s['to_zero']} to zero, "
        f"{s['from_zero']} from zero; errors: {s['errors']}"
    )
    violations = report.violations()
    lines.append("PASS" if not violations else "FAIL: " + "; ".join(violations))
    return "\n".join(lines)
