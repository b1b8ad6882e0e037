"""Many processes, one index: a randomized writer, guarded readers, and a ground-truth check of every answer.

One **writer** process adds, updates, reassigns (to another tenant) and deletes
documents, one write call at a time, logging when each call began and when it
returned (``time.monotonic()``, which every process on the machine shares).
Several **reader** processes each run the search and fetch tools through their
own :class:`~scopegate.guard.Guard` (with a cache in memory, or in front of a
shared Redis) and log every answer with when it was asked and answered.

:func:`check` then judges each answer against the ground truth. A write takes
effect at some unknown moment between its start and its return, so a state of
a document is *possible* from the start of the write that made it until the
return of the write that replaced it. An answer asked at ``s`` and answered at
``e`` is correct when every document state it shows was possible at some
moment of ``[s - bound, e]``: ``bound`` is the staleness the deployment
promises, the guard's ``generation_ttl_s``. It holds by construction, not by
luck of timing: a generation is trusted for ``generation_ttl_s`` from when it
was *asked for* (:class:`~scopegate.guard.cache.GenerationTracker`), the engine
samples it after that, and a result is labelled with a generation read before
it was computed. So the check has no slack for a slow or descheduled process,
and a loaded machine cannot make it fail. Checked:

* no document of another tenant (a version written to another tenant's document),
* no state staler than the bound (fetch by id, search for a document's own key word),
* totals within what the tenant's documents could have numbered in the window,
* no failed call (anything but ``ok``, or ``NOT_FOUND`` for an absent document); the workers' spec
  gives the engine generous time budgets (:data:`WORKER_CLIENT_TIMEOUT_S`), so only a real failure counts.

Coverage does not depend on timing either: after the writer's last write each reader runs a final
round (every kind of call, each twice, for every tenant), so every run has cache hits and answers
of every kind after the last write.

Documents: id ``D0001``..., subject ``D0001 <tenant> v<version>`` (versions are
globally unique, so a version names the (tenant, id) it was written to), body
with ``key<n>`` (the id's own word) and ``zephyr`` (every document).

Run ``python -m scopegate_lab.consistency writer|reader --help``;
:func:`run_consistency` starts one writer and N readers and checks the logs.
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import dataclasses
import json
import math
import os
import random
import re
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

TENANTS = ("acme", "globex", "initech")
# The workers' time budgets, seconds (engine, client): a slow answer on a loaded machine is still an answer.
WORKER_ENGINE_TIMEOUT_S, WORKER_CLIENT_TIMEOUT_S = 30.0, 60.0
COMMON_WORD = "zephyr"
VERSION = re.compile(r"\bv(\d+)\b")
INF = math.inf


# -- documents and logs ------------------------------------------------------------------------
def doc_id(n: int) -> str:
    return f"D{n:04d}"


def key_word(n: int) -> str:
    return f"key{n}"


def make_document(n: int, tenant: str, version: int) -> dict[str, Any]:
    return {
        "ticket_id": doc_id(n),
        "tenant_id": tenant,
        "product": "payments",
        "status": "open",
        "subject": f"{doc_id(n)} {tenant} v{version}",
        "body": f"{key_word(n)} {COMMON_WORD} refund version v{version} of {doc_id(n)} for {tenant}",
    }


@dataclass(frozen=True)
class Event:
    """One write call: ``version`` None is a delete. ``begin``/``done`` are monotonic seconds."""

    tenant: str
    n: int
    version: int | None
    begin: float
    done: float


@dataclass(frozen=True)
class Item:
    tenant_of_version: str | None
    n: int
    version: int


@dataclass(frozen=True)
class Answer:
    """One tool call as a reader saw it."""

    reader: str
    kind: str  # "fetch" | "key" | "all"
    tenant: str
    n: int | None
    start: float
    end: float
    status: str
    error_code: str | None
    total: int | None
    items: tuple[tuple[str, int], ...]  # (doc id, version) per result
    cache_hit: bool | None = None


def write_jsonl(path: Path, rows: Iterable[Any]) -> None:
    with open(path, "a", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(dataclasses.asdict(row)) + "\n")


def read_events(path: Path) -> list[Event]:
    return [Event(**json.loads(line)) for line in path.read_text("utf-8").splitlines() if line.strip()]


def read_answers(paths: Iterable[Path]) -> list[Answer]:
    out = []
    for path in paths:
        for line in path.read_text("utf-8").splitlines():
            if line.strip():
                data = json.loads(line)
                data["items"] = tuple(tuple(i) for i in data["items"])
                out.append(Answer(**data))
    return out


# -- ground truth ------------------------------------------------------------------------------
@dataclass
class Timeline:
    """The states of one (tenant, id): ``states[k]`` possible from ``starts[k]`` until ``ends[k]``."""

    states: list[int | None] = field(default_factory=lambda: [None])  # None: absent
    starts: list[float] = field(default_factory=lambda: [-INF])
    ends: list[float] = field(default_factory=lambda: [INF])

    def add(self, event: Event) -> None:
        self.ends[-1] = event.done
        self.states.append(event.version)
        self.starts.append(event.begin)
        self.ends.append(INF)

    def possible(self, low: float, high: float) -> list[tuple[int | None, float]]:
        """States possible at some moment of [low, high], each with when it stopped being current."""
        first = max(0, bisect.bisect_left(self.ends, low))
        out = []
        for k in range(first, len(self.states)):
            if self.starts[k] > high:
                break
            if self.ends[k] >= low:
                out.append((self.states[k], self.ends[k]))
        return out

    def superseded_at(self, version: int | None) -> list[float]:
        return [self.ends[k] for k, state in enumerate(self.states) if state == version]


@dataclass
class Report:
    answers: int = 0
    cache_hits: int = 0
    foreign: int = 0
    stale: int = 0
    bad_totals: int = 0
    failed: int = 0
    by_kind: dict[str, int] = field(default_factory=dict)
    staleness_s: list[float] = field(default_factory=list)  # per answer showing a superseded state: its age
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.foreign == self.stale == self.bad_totals == self.failed == 0 and self.answers > 0

    def summary(self) -> dict[str, Any]:
        ages = sorted(self.staleness_s)

        def q(p: float) -> float:
            return round(ages[min(len(ages) - 1, int(p * len(ages)))], 4) if ages else 0.0

        return {
            "answers": self.answers,
            "by_kind": dict(sorted(self.by_kind.items())),
            "cache_hits": self.cache_hits,
            "foreign": self.foreign,
            "stale_beyond_bound": self.stale,
            "bad_totals": self.bad_totals,
            "failed_calls": self.failed,
            "stale_answers_within_bound": len(ages),
            "staleness_max_s": round(ages[-1], 4) if ages else 0.0,
            "staleness_p99_s": q(0.99),
            "staleness_p50_s": q(0.50),
            "staleness_p99_all_answers_s": self._p99_of_all(ages),
        }

    def _p99_of_all(self, ages: list[float]) -> float:
        """p99 age over every answer (an answer that showed only current states counts 0)."""
        zeros = max(0, self.answers - len(ages))
        rank = min(self.answers - 1, int(0.99 * self.answers)) - zeros
        return round(ages[rank], 4) if ages and rank >= 0 else 0.0

    def flag(self, kind: str, message: str) -> None:
        setattr(self, kind, getattr(self, kind) + 1)
        if len(self.problems) < 50:
            self.problems.append(f"{kind}: {message}")


def truth_of(events: Sequence[Event]) -> tuple[dict[tuple[str, int], Timeline], dict[int, tuple[str, int]]]:
    """Timelines per (tenant, n) and the owner (tenant, n) of every version."""
    timelines: dict[tuple[str, int], Timeline] = {}
    owner: dict[int, tuple[str, int]] = {}
    for event in sorted(events, key=lambda e: (e.begin, e.done)):
        timelines.setdefault((event.tenant, event.n), Timeline()).add(event)
        if event.version is not None:
            owner[event.version] = (event.tenant, event.n)
    return timelines, owner


def check(events: Sequence[Event], answers: Sequence[Answer], bound_s: float) -> Report:
    """Judge every answer against the writes (see the module docstring)."""
    timelines, owner = truth_of(events)
    report = Report()
    empty = Timeline()
    for answer in answers:
        report.answers += 1
        report.by_kind[answer.kind] = report.by_kind.get(answer.kind, 0) + 1
        report.cache_hits += bool(answer.cache_hit)
        low, high = answer.start - bound_s, answer.end
        where = f"{answer.reader} {answer.kind} {answer.tenant} {answer.n} at {answer.start:.3f}"
        if answer.status != "ok" and not (answer.kind == "fetch" and answer.error_code == "NOT_FOUND"):
            report.flag("failed", f"{where}: {answer.error_code}")
            continue
        worst_age = 0.0
        for shown_id, version in answer.items:
            n = int(shown_id[1:])
            written_to = owner.get(version)
            if written_to is None or written_to[0] != answer.tenant or written_to[1] != n:
                report.flag("foreign", f"{where}: showed {shown_id} v{version}, written to {written_to}")
                continue
            timeline = timelines.get((answer.tenant, n), empty)
            if version not in [state for state, _end in timeline.possible(low, high)]:
                report.flag("stale", f"{where}: showed {shown_id} v{version}, not current in the window")
            worst_age = max(worst_age, _age(timeline, version, answer.start))
        if answer.kind in ("fetch", "key") and answer.n is not None and not answer.items:
            timeline = timelines.get((answer.tenant, answer.n), empty)
            if None not in [state for state, _end in timeline.possible(low, high)]:
                report.flag("stale", f"{where}: showed nothing, but the document was there all the window")
            worst_age = max(worst_age, _age(timeline, None, answer.start))
        if answer.kind == "key" and answer.total not in (len(answer.items), None):
            report.flag("bad_totals", f"{where}: total {answer.total} for {len(answer.items)} items")
        if answer.kind == "all" and answer.total is not None:
            low_total, high_total = _total_range(timelines, answer.tenant, low, high)
            if not low_total <= answer.total <= high_total:
                report.flag("bad_totals", f"{where}: total {answer.total} outside [{low_total}, {high_total}]")
        if worst_age > 0:
            report.staleness_s.append(worst_age)
    return report


def _age(timeline: Timeline, state: int | None, start: float) -> float:
    """How long before ``start`` the shown state had been replaced (0: it was current, or could have been)."""
    ends = timeline.superseded_at(state)
    if not ends or any(end >= start for end in ends):
        return 0.0
    return start - max(ends)


def _total_range(
    timelines: Mapping[tuple[str, int], Timeline], tenant: str, low: float, high: float
) -> tuple[int, int]:
    least = most = 0
    for (owner, _n), timeline in timelines.items():
        if owner != tenant:
            continue
        states = [state for state, _end in timeline.possible(low, high)]
        most += any(s is not None for s in states)
        least += bool(states) and all(s is not None for s in states)
    return least, most


# -- backends for the workers --------------------------------------------------------------------
@dataclass(frozen=True)
class Target:
    """Where the workers' documents live: an embedded folder, or an engine URL and index name."""

    engine: str  # embedded | opensearch | elasticsearch
    location: str  # folder or URL
    index: str = "tickets"

    def args(self) -> list[str]:
        return ["--engine", self.engine, "--location", self.location, "--index", self.index]


def open_backend(target: Target) -> Any:
    from scopegate.demo.corpus import ticket_spec

    spec = dataclasses.replace(
        ticket_spec(),
        index=target.index,
        engine_timeout_s=WORKER_ENGINE_TIMEOUT_S,
        client_timeout_s=WORKER_CLIENT_TIMEOUT_S,
    )
    if target.engine == "embedded":
        from scopegate.backends.embedded import EmbeddedBackend

        return EmbeddedBackend(spec, target.location)
    if target.engine == "opensearch":
        from scopegate.backends.opensearch import OpenSearchBackend

        return OpenSearchBackend(spec, target.location)
    from scopegate.backends.elasticsearch import ElasticsearchBackend

    return ElasticsearchBackend(spec, target.location, analysis="standard", server_major=8, replicas=0)


# -- the writer ------------------------------------------------------------------------------------
@dataclass
class WriterState:
    rng: random.Random
    next_n: int = 0
    next_version: int = 1
    live: dict[tuple[str, int], int] = field(default_factory=dict)  # (tenant, n) -> version


def seed_documents(count: int, seed: int) -> tuple[WriterState, list[dict[str, Any]], list[Event]]:
    """The starting corpus (some ids in two tenants), as documents and as events at time 0."""
    state = WriterState(random.Random(seed))
    docs, events = [], []
    for i in range(count):
        tenant = TENANTS[i % len(TENANTS)]
        n = state.next_n
        state.next_n += 1
        pairs = [(tenant, n)] + ([(TENANTS[(i + 1) % len(TENANTS)], n)] if i % 7 == 0 else [])
        for owner, m in pairs:  # every seventh id also exists in another tenant: a different document
            version = state.next_version
            state.next_version += 1
            state.live[(owner, m)] = version
            docs.append(make_document(m, owner, version))
            events.append(Event(owner, m, version, 0.0, 0.0))
    return state, docs, events


async def run_writer(target: Target, *, seed_count: int, ops: int, seed: int, out: Path, pause_s: float) -> None:
    """Seed the index, then ``ops`` random writes, each one call, logged with its start and return."""
    backend = open_backend(target)
    state, docs, seed_events = seed_documents(seed_count, seed)
    try:
        report = await backend.ingest(docs)
        if report.failed:
            raise RuntimeError(f"seeding failed: {report.errors[:3]}")
        now = time.monotonic()
        write_jsonl(out, [dataclasses.replace(e, begin=now, done=now) for e in seed_events])
        print("SEEDED", flush=True)
        sys.stdin.readline()  # the readers are up: go
        rng = state.rng
        for _ in range(ops):
            for event in await _one_write(backend, state, rng):
                write_jsonl(out, [event])
            await asyncio.sleep(rng.uniform(0, pause_s))
    finally:
        await backend.close()
    print("DONE", flush=True)


async def _one_write(backend: Any, state: WriterState, rng: random.Random) -> list[Event]:
    live = sorted(state.live)
    roll = rng.random()
    if roll < 0.25 or not live:  # add a new document
        tenant, n = rng.choice(TENANTS), state.next_n
        state.next_n += 1
        return [await _put(backend, state, tenant, n)]
    tenant, n = rng.choice(live)
    if roll < 0.55:  # update
        return [await _put(backend, state, tenant, n)]
    if roll < 0.80:  # reassign to another tenant: put there, then delete here
        others = [t for t in TENANTS if t != tenant and (t, n) not in state.live]
        if not others:
            return [await _put(backend, state, tenant, n)]
        moved = await _put(backend, state, rng.choice(others), n)
        return [moved, await _delete(backend, state, tenant, n)]
    if roll < 0.88:  # the same id in another tenant: a second document, the first one untouched
        others = [t for t in TENANTS if (t, n) not in state.live]
        if others:
            return [await _put(backend, state, rng.choice(others), n)]
    return [await _delete(backend, state, tenant, n)]


async def _put(backend: Any, state: WriterState, tenant: str, n: int) -> Event:
    version = state.next_version
    state.next_version += 1
    begin = time.monotonic()
    report = await backend.ingest([make_document(n, tenant, version)])
    done = time.monotonic()
    if report.failed or report.indexed != 1:
        raise RuntimeError(f"write failed: {report.errors[:3]}")
    state.live[(tenant, n)] = version
    return Event(tenant, n, version, begin, done)


async def _delete(backend: Any, state: WriterState, tenant: str, n: int) -> Event:
    begin = time.monotonic()
    await backend.delete([doc_id(n)], tenant=tenant)
    done = time.monotonic()
    state.live.pop((tenant, n), None)
    return Event(tenant, n, None, begin, done)


# -- a reader ------------------------------------------------------------------------------------
def _versions(items: Iterable[Mapping[str, Any]]) -> tuple[tuple[str, int], ...]:
    out = []
    for item in items:
        match = VERSION.search(str(item.get("subject", "")))
        out.append((str(item.get("ticket_id")), int(match.group(1)) if match else -1))
    return tuple(out)


async def run_reader(
    target: Target,
    *,
    name: str,
    ids: int,
    seed: int,
    out: Path,
    stop: Path,
    generation_ttl_s: float,
    redis_url: str | None,
    pause_s: float,
) -> None:
    """Random fetches and searches through a guarded tool until ``stop`` exists; every answer logged."""
    from scopegate.context import CallContext
    from scopegate.guard import Guard, MemoryStore, RedisStore, TieredStore, ToolCache
    from scopegate.search.tools import FetchTool, SearchTool

    backend = open_backend(target)
    store: Any = MemoryStore()
    if redis_url is not None:
        store = TieredStore(MemoryStore(), RedisStore(url=redis_url, namespace=f"consistency:{target.index}:"))
    cache = ToolCache(store, families=("search",))
    guard = Guard(cap=None, cache=cache, generation_ttl_s=generation_ttl_s)
    search = guard.wrap(SearchTool(backend.spec, backend))
    fetch = guard.wrap(FetchTool(backend.spec, backend))
    rng = random.Random(seed)
    rows: list[Answer] = []

    async def ask(kind: str, tenant: str, n: int) -> None:
        ctx = CallContext(state={"tenant_id": tenant}, invocation_id=f"{name}-{len(rows)}", session_id=name)
        hits_before = cache.stats.hits
        start = time.monotonic()
        if kind == "fetch":
            result = (await fetch.run({"id": doc_id(n)}, ctx)).result
            items = _versions([result["document"]]) if result.get("status") == "ok" else ()
        else:
            result = (await search.run({"query": key_word(n) if kind == "key" else COMMON_WORD}, ctx)).result
            items = _versions(result.get("results", []))
        end = time.monotonic()
        rows.append(
            Answer(
                name,
                kind,
                tenant,
                n if kind != "all" else None,
                start,
                end,
                str(result.get("status")),
                result.get("error_code"),
                result.get("total") if kind != "fetch" else None,
                items,
                cache.stats.hits > hits_before,
            )
        )

    print("READY", flush=True)
    try:
        while not stop.exists():
            tenant, n, roll = rng.choice(TENANTS), rng.randrange(ids), rng.random()
            await ask("fetch" if roll < 0.4 else "key" if roll < 0.85 else "all", tenant, n)
            if len(rows) >= 500:
                write_jsonl(out, rows)
                rows.clear()
            await asyncio.sleep(rng.uniform(0, pause_s))
        # The writer is done (the stop file comes after its last write returned): every kind, twice, per
        # tenant. The second of each pair is a cache hit, whatever the timing of the run before.
        n = rng.randrange(ids)
        for tenant in TENANTS:
            for kind in ("fetch", "key", "all", "fetch", "key", "all"):
                await ask(kind, tenant, n)
    finally:
        write_jsonl(out, rows)
        await guard.aclose()
        await backend.close()


# -- running it all -------------------------------------------------------------------------------
@dataclass
class RunResult:
    report: Report
    events: int
    seconds: float
    bound_s: float
    readers: int

    def summary(self) -> dict[str, Any]:
        return {
            "writes": self.events,
            "readers": self.readers,
            "seconds": round(self.seconds, 2),
            "bound_s": self.bound_s,
            **self.report.summary(),
        }


def worker_command(role: str, *args: str) -> list[str]:
    return [sys.executable, "-m", "scopegate_lab.consistency", role, *args]


def run_consistency(
    target: Target,
    folder: Path,
    *,
    readers: int = 3,
    ops: int = 150,
    seed: int = 7,
    seed_count: int = 30,
    generation_ttl_s: float = 0.25,
    slack_s: float = 0.0,
    redis_url: str | None = None,
    writer_pause_s: float = 0.02,
    reader_pause_s: float = 0.002,
    timeout_s: float = 300.0,
) -> RunResult:
    """One writer and ``readers`` reader processes on ``target``; returns the checked report.

    The bound the answers are held to is ``generation_ttl_s + slack_s``; ``slack_s`` is 0: the bound
    holds by construction (module docstring). ``timeout_s`` only keeps a hung worker from hanging the
    run (it fails it), it decides nothing else.
    """
    folder.mkdir(parents=True, exist_ok=True)
    stop = folder / "stop"
    stop.unlink(missing_ok=True)
    events_path = folder / "events.jsonl"
    events_path.unlink(missing_ok=True)
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    started = time.monotonic()
    writer = subprocess.Popen(
        worker_command(
            "writer", *target.args(), "--ops", str(ops), "--seed", str(seed), "--seed-count", str(seed_count),
            "--out", str(events_path), "--pause", str(writer_pause_s),
        ),
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    procs: list[subprocess.Popen[str]] = []
    answer_paths: list[Path] = []
    try:
        _expect(writer, "SEEDED", timeout_s)
        for r in range(readers):
            path = folder / f"answers-{r}.jsonl"
            path.unlink(missing_ok=True)
            answer_paths.append(path)
            args = [
                *target.args(), "--name", f"reader{r}", "--ids", str(seed_count + ops // 3 + 5),
                "--seed", str(seed * 100 + r), "--out", str(path), "--stop", str(stop),
                "--generation-ttl", str(generation_ttl_s), "--pause", str(reader_pause_s),
            ]  # fmt: skip
            if redis_url:
                args += ["--redis", redis_url]
            procs.append(subprocess.Popen(worker_command("reader", *args), stdout=subprocess.PIPE, text=True, env=env))
        for proc in procs:
            _expect(proc, "READY", timeout_s)
        assert writer.stdin is not None
        writer.stdin.write("go\n")
        writer.stdin.flush()
        _expect(writer, "DONE", timeout_s)
        writer.wait(timeout_s)
        if writer.returncode != 0:
            raise RuntimeError(f"writer exited with {writer.returncode}")
    finally:
        stop.touch()  # after the last write returned: the readers' final rounds see the end state
        for proc in [*procs, writer]:
            try:
                proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    for r, proc in enumerate(procs):
        if proc.returncode != 0:
            raise RuntimeError(f"reader {r} exited with {proc.returncode}")
    events = read_events(events_path)
    answers = read_answers(answer_paths)
    bound = generation_ttl_s + slack_s
    return RunResult(check(events, answers, bound), len(events), time.monotonic() - started, bound, readers)


def _expect(proc: subprocess.Popen[str], word: str, timeout_s: float) -> None:
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError(f"worker exited ({proc.poll()}) before saying {word}")
        if line.strip() == word:
            return
    raise RuntimeError(f"worker did not say {word} in {timeout_s:g} s")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m scopegate_lab.consistency", description=__doc__)
    sub = parser.add_subparsers(dest="role", required=True)
    for role in ("writer", "reader"):
        p = sub.add_parser(role)
        p.add_argument("--engine", choices=["embedded", "opensearch", "elasticsearch"], required=True)
        p.add_argument("--location", required=True, help="Index folder or engine URL.")
        p.add_argument("--index", default="tickets", help="Engine index name.")
        p.add_argument("--seed", type=int, default=7)
        p.add_argument("--out", type=Path, required=True, help="JSON lines log to append to.")
        p.add_argument("--pause", type=float, default=0.0, help="Longest random pause between calls, seconds.")
        if role == "writer":
            p.add_argument("--ops", type=int, default=150)
            p.add_argument("--seed-count", type=int, default=30)
        else:
            p.add_argument("--name", required=True)
            p.add_argument("--ids", type=int, required=True, help="Document numbers to ask about: 0..ids-1.")
            p.add_argument("--stop", type=Path, required=True, help="Stop when this file exists.")
            p.add_argument("--generation-ttl", type=float, default=0.25)
            p.add_argument("--redis", default=None, help="Shared cache (Redis URL) behind the in-memory one.")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    target = Target(args.engine, args.location, args.index)
    if args.role == "writer":
        asyncio.run(
            run_writer(
                target, seed_count=args.seed_count, ops=args.ops, seed=args.seed, out=args.out, pause_s=args.pause
            )
        )
    else:
        asyncio.run(
            run_reader(
                target,
                name=args.name,
                ids=args.ids,
                seed=args.seed,
                out=args.out,
                stop=args.stop,
                generation_ttl_s=args.generation_ttl,
                redis_url=args.redis,
                pause_s=args.pause,
            )
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
