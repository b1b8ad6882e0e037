"""The ground-truth check of the multi-process runs: it must catch what it claims to catch."""

from __future__ import annotations

from scopegate_lab.consistency import Answer, Event, check

BOUND = 0.5
# D0001 of acme: v1 from the start, v2 written during [10.0, 10.1], moved to globex (v3) during
# [20.0, 20.1] and deleted from acme during [20.1, 20.2].
EVENTS = [
    Event("acme", 1, 1, 0.0, 0.0),
    Event("acme", 1, 2, 10.0, 10.1),
    Event("globex", 1, 3, 20.0, 20.1),
    Event("acme", 1, None, 20.1, 20.2),
]


def fetch(tenant: str, start: float, items: tuple[tuple[str, int], ...], **kw: object) -> Answer:
    status = "ok" if items else "error"
    code = None if items else "NOT_FOUND"
    return Answer("r", "fetch", tenant, 1, start, start + 0.01, str(kw.get("status", status)), code, None, items)


def test_fresh_answers_pass() -> None:
    answers = [
        fetch("acme", 5.0, (("D0001", 1),)),
        fetch("acme", 10.05, (("D0001", 1),)),  # during the write: either version is right
        fetch("acme", 10.05, (("D0001", 2),)),
        fetch("acme", 15.0, (("D0001", 2),)),
        fetch("globex", 25.0, (("D0001", 3),)),
        fetch("acme", 25.0, ()),
        fetch("globex", 5.0, ()),
    ]
    report = check(EVENTS, answers, BOUND)
    assert report.ok, report.problems
    assert report.summary()["staleness_max_s"] == 0.0


def test_a_state_older_than_the_bound_is_stale() -> None:
    within = check(EVENTS, [fetch("acme", 10.4, (("D0001", 1),))], BOUND)
    assert within.ok and abs(within.staleness_s[0] - 0.3) < 1e-9  # served 0.3 s after v2 returned
    beyond = check(EVENTS, [fetch("acme", 11.0, (("D0001", 1),))], BOUND)
    assert beyond.stale == 1 and not beyond.ok


def test_a_document_after_it_moved_to_another_tenant_is_caught() -> None:
    report = check(EVENTS, [fetch("acme", 30.0, (("D0001", 2),))], BOUND)
    assert report.stale == 1
    report = check(EVENTS, [fetch("acme", 30.0, (("D0001", 3),))], BOUND)  # globex's version shown to acme
    assert report.foreign == 1


def test_absent_when_present_all_along_is_stale() -> None:
    report = check(EVENTS, [fetch("acme", 5.0, ())], BOUND)
    assert report.stale == 1


def test_failed_calls_and_impossible_totals_are_counted() -> None:
    failed = Answer("r", "key", "acme", 1, 5.0, 5.01, "error", "SEARCH_UNAVAILABLE", None, ())
    too_many = Answer("r", "all", "acme", None, 15.0, 15.01, "ok", None, 2, (("D0001", 2),))
    report = check(EVENTS, [failed, too_many], BOUND)
    assert report.failed == 1 and report.bad_totals == 1


def test_the_p99_over_every_answer_counts_fresh_answers_as_zero() -> None:
    fresh = [fetch("acme", 5.0 + i / 1000, (("D0001", 1),)) for i in range(98)]
    stale = [fetch("acme", 10.4, (("D0001", 1),)), fetch("acme", 10.3, (("D0001", 1),))]  # 0.3 s and 0.2 s old
    summary = check(EVENTS, fresh + stale, BOUND).summary()
    assert summary["staleness_max_s"] == summary["staleness_p99_s"] == 0.3
    assert summary["staleness_p99_all_answers_s"] == 0.3  # rank 99 of 100: the oldest
    one_in_200 = check(EVENTS, fresh + fresh + stale[:1], BOUND).summary()
    assert one_in_200["staleness_p99_all_answers_s"] == 0.0
