"""Zero-downtime reindex: build the next index version, verify it against the live one, swap, roll back.

::

    report = await reindex_verified(backend, calls=calls)   # backend: the NEW layout (analysis, shards, routing)
    print(report.render())
    if report.swapped: ...                                   # every alias moved in one atomic call
    await rollback(backend)                                  # aliases back to the previous version

Steps of :func:`reindex_verified`:

1. ``<index>-v<N+1>`` is created from the backend's template (its analysis,
   shards, replicas, routing) and filled: a server-side ``_reindex`` copy of the
   live index, or the given documents. The aliases do not move, so searches go
   on hitting ``v<N>`` untouched.
2. Verify: documents per tenant in both indices (every tenant present in
   either, exact counts over every shard) must be equal; then the logged calls
   are replayed against ``v<N>`` and against ``v<N+1>``, and the second replay
   is diffed against the first (Jaccard@5, rank moves, totals, zero-result
   flips, with :class:`~scopegate.guard.replay.Thresholds`).
3. Passed: the read alias and every agent alias move to ``v<N+1>`` in one
   ``_aliases`` call (filters kept). Failed: nothing moves and the new index
   is deleted (``keep_failed=True`` keeps it for inspection).

Writes made to the live index while the copy runs are not in the copy; the
per-tenant counts then differ and the swap is refused: pause ingest, or re-run.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from scopegate.backends import layout
from scopegate.backends.engine_common import EngineBackend
from scopegate.errors import BackendError, ConfigError, MissingIndexError
from scopegate.guard.replay import LoggedSearch, ReplayReport, Thresholds, render_table, replay
from scopegate.search.spec import SearchSpec
from scopegate.search.tools import SearchTool

# The first replay only records what the live index answers: nothing to check yet.
_RECORD_ONLY = Thresholds(max_jaccard_drop=None, max_to_zero=None, max_errors=None, min_calls=0)


@dataclass
class ReindexReport:
    """What a verified reindex built, what it compared and whether it swapped."""

    old_index: str
    new_index: str
    old_counts: dict[str, int]
    new_counts: dict[str, int]
    replay: ReplayReport | None
    new_health: str = "unknown"  # health of the new index when it was verified
    swapped: bool = False
    kept_new: bool = True
    baseline_errors: int = 0  # logged calls that failed on the live index (not comparable)

    @property
    def count_differences(self) -> dict[str, tuple[int, int]]:
        return layout.count_differences(self.old_counts, self.new_counts)

    def problems(self) -> list[str]:
        out = [
            f"tenant {t!r}: {old} documents in {self.old_index}, {new} in {self.new_index}"
            for t, (old, new) in self.count_differences.items()
        ]
        if layout.health_rank(self.new_health) < layout.health_rank("yellow"):
            out.append(f"{self.new_index} is {self.new_health}: some shards have no started copy")
        if self.replay is not None:
            out += [f"replay: {v}" for v in self.replay.violations()]
        return out

    def passed(self) -> bool:
        return not self.problems()

    def as_dict(self) -> dict[str, Any]:
        return {
            "old_index": self.old_index,
            "new_index": self.new_index,
            "passed": self.passed(),
            "new_health": self.new_health,
            "swapped": self.swapped,
            "kept_new": self.kept_new,
            "problems": self.problems(),
            "tenants": len(set(self.old_counts) | set(self.new_counts)),
            "documents": {"old": sum(self.old_counts.values()), "new": sum(self.new_counts.values())},
            "count_differences": {t: list(v) for t, v in self.count_differences.items()},
            "baseline_errors": self.baseline_errors,
            "replay": self.replay.as_dict() if self.replay is not None else None,
        }

    def render(self, *, show: int = 30) -> str:
        lines = [
            f"reindex {self.old_index} -> {self.new_index}",
            f"documents per tenant: {len(set(self.old_counts) | set(self.new_counts))} tenants, "
            f"{sum(self.old_counts.values())} -> {sum(self.new_counts.values())} documents, "
            f"{len(self.count_differences)} tenant(s) differ; {self.new_index} is {self.new_health}",
        ]
        for tenant, (old, new) in list(self.count_differences.items())[:show]:
            lines.append(f"  {tenant}: {old} -> {new}")
        if self.replay is not None:
            lines += ["", f"replay of the call log, {self.old_index} (before) vs {self.new_index} (after):"]
            lines.append(render_table(self.replay, show=show))
        if self.baseline_errors:
            lines.append(f"({self.baseline_errors} logged call(s) failed on {self.old_index} and were not compared)")
        verdict = "swapped: the read aliases now point at " + self.new_index if self.swapped else "not swapped"
        lines += ["", "verification passed" if self.passed() else "verification FAILED", verdict]
        lines += [f"  - {p}" for p in self.problems()[:show]]
        return "\n".join(lines)


async def replay_between(
    backend: EngineBackend[Any],
    old_index: str,
    new_index: str,
    calls: Sequence[LoggedSearch],
    *,
    thresholds: Thresholds | None = None,
    concurrency: int = 4,
) -> tuple[ReplayReport, int]:
    """Replay ``calls`` on ``old_index`` and then on ``new_index``; the report diffs the second against the first.

    Returns the report and how many calls failed on the old index (left out of the comparison).
    """
    spec = backend.spec
    before = await replay(
        SearchTool(spec, backend.pinned(old_index)), calls, concurrency=concurrency, thresholds=_RECORD_ONLY
    )
    baseline = [
        dataclasses.replace(d.call, ids=d.new_ids, total=d.new_total, total_relation=d.new_relation)
        for d in before.diffs
        if d.error_code is None
    ]
    failed = len(before.diffs) - len(baseline)
    after = await replay(
        SearchTool(spec, backend.pinned(new_index)),
        baseline,
        concurrency=concurrency,
        thresholds=thresholds or Thresholds(),
        logged=len(calls),
        skipped=before.skipped + failed,
    )
    return after, failed


async def reindex_verified(
    backend: EngineBackend[Any],
    *,
    calls: Sequence[LoggedSearch] = (),
    documents: Iterable[Mapping[str, Any]] | None = None,
    thresholds: Thresholds | None = None,
    swap: bool = True,
    delete_old: bool = False,
    keep_failed: bool = False,
    concurrency: int = 4,
    health_timeout_s: float = 60.0,
) -> ReindexReport:
    """Build, verify and (when it passes and ``swap``) swap to the next version; see the module docstring.

    Before verifying, waits up to ``health_timeout_s`` for every copy of the new
    index to start (green); yellow (replicas still unassigned) is accepted, red is not.
    ``delete_old`` deletes the previous index after a swap (no rollback then).
    """
    old, new = await backend.build_next_version(documents)
    health = await backend.wait_for_health(new, status="green", timeout_s=health_timeout_s)
    report = ReindexReport(old, new, await backend.tenant_counts(old), await backend.tenant_counts(new), None)
    report.new_health = health
    if calls:
        report.replay, report.baseline_errors = await replay_between(
            backend, old, new, calls, thresholds=thresholds, concurrency=concurrency
        )
    if report.passed() and swap:
        await backend.swap_to(new)
        report.swapped = True
        if delete_old:
            await backend.drop_index(old)
    elif not report.passed() and not keep_failed:
        await backend.drop_index(new)
        report.kept_new = False
    return report


async def rollback(backend: EngineBackend[Any]) -> tuple[str, str]:
    """Point every alias back at the version the last swap left (``<index>-previous``); returns ``(from, to)``.

    The swap back records the version it leaves in turn, so a second rollback rolls forward again.
    """
    state = await backend.alias_state()
    live = state.aliases.get(backend.names.read_alias)
    if live is None:
        raise MissingIndexError(backend.names.read_alias)
    previous = await backend.alias_targets(backend.previous_alias)
    if not previous:
        raise BackendError(
            f"no previous version recorded ({backend.previous_alias} does not exist): nothing to roll back to",
            retryable=False,
        )
    await backend.swap_to(previous[0])
    return live[0], previous[0]


# -- building the backend with the new layout (``scopegate reindex``) ---------------------------
def backend_from_config(path: str, tool_name: str | None = None) -> EngineBackend[Any]:
    """The engine backend of search tool ``tool_name`` (default: the first) in a config file: its
    ``backends`` entry is the NEW layout (analysis, shards, replicas, routing)."""
    from scopegate.config.builder import build_remote_backend
    from scopegate.config.loader import load_config
    from scopegate.config.model import RemoteBackendConfig

    cfg = load_config(path)
    tools = {t.spec.name: t for t in cfg.search_tools}
    if not tools:
        raise ConfigError(f"{path} defines no search tool")
    name = tool_name or next(iter(tools))
    if name not in tools:
        raise ConfigError(f"{path} has no search tool named {name!r}; known: {', '.join(tools)}")
    backend_cfg = cfg.backends[tools[name].backend]
    if not isinstance(backend_cfg, RemoteBackendConfig):
        raise ConfigError(f"search tool {name!r} is on an embedded backend: reindex is for OpenSearch/Elasticsearch")
    return _engine(build_remote_backend(backend_cfg, tools[name].spec))


def backend_from_options(spec: SearchSpec, urls: Sequence[str], **options: Any) -> EngineBackend[Any]:
    """An engine backend from ``type``, layout and client options given as the config keys of a
    ``backends`` entry (``type="opensearch"``, ``shards=3``, ``routing="tenant"``, ...)."""
    from scopegate.config.builder import build_remote_backend
    from scopegate.config.model import RemoteBackendConfig

    return _engine(build_remote_backend(RemoteBackendConfig(url=tuple(urls), **options), spec))


def _engine(backend: object) -> EngineBackend[Any]:
    if not isinstance(backend, EngineBackend):
        raise ConfigError("reindex needs an OpenSearch or Elasticsearch backend")
    return backend
