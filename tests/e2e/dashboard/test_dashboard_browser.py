"""``scopegate dashboard`` in a real headless browser: Debian's chromium driven by Playwright.

A real call log (real guard, real tools over an embedded index) is served by a real
``scopegate dashboard`` process on 127.0.0.1; the page must load without a console error or a
failed request, every chart must render with the log's numbers, markup in a logged query must stay
text, and a screenshot is taken (into bench/results/dashboard.png with SCOPEGATE_WRITE_SCREENSHOT=1,
the one the README shows; else into the test's temporary folder). The static ``--html`` report is
checked the same way from a file:// URL. Playwright's own browser download is not used (nor
reachable): the browser is ``chromium`` from apt (``.ci/run`` installs it), or SCOPEGATE_CHROMIUM.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from calllog_session import HOSTILE_QUERY, write_call_log

from scopegate.dashboard.data import Dashboard, dashboard_from_log
from scopegate.guard.stats import ms_text, pct_text

REPO = Path(__file__).resolve().parents[3]
COMMITTED_SCREENSHOT = REPO / "bench" / "results" / "dashboard.png"


def _unavailable(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason} (CI installs it: see .ci/run)")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def chromium() -> str:
    path = os.environ.get("SCOPEGATE_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if not path:
        _unavailable("no chromium on PATH (apt-get install -y chromium)")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        _unavailable("playwright is not installed (the dev extra has it)")
    return str(path)


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def call_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return await write_call_log(tmp_path_factory.mktemp("dashboard"))


@pytest.fixture(scope="module")
def served(call_log: Path) -> Iterator[str]:
    """A real ``scopegate dashboard`` process; yields its URL."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "scopegate.cli", "dashboard", str(call_log), "--port", "0", "--refresh", "0"],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        match = re.search(r"(http://127\.0\.0\.1:\d+/)", line)
        assert match, f"no URL in {line!r}"
        yield match.group(1)
    finally:
        proc.terminate()
        proc.wait(timeout=10)


class PageErrors:
    def __init__(self, page: Any) -> None:
        self.items: list[str] = []
        page.on("console", lambda m: self.items.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
        page.on("pageerror", lambda e: self.items.append(f"page error: {e}"))
        page.on("requestfailed", lambda r: self.items.append(f"request failed: {r.url}"))
        page.on("dialog", lambda d: (self.items.append(f"dialog: {d.message}"), d.dismiss()))


def check_page(page: Any, d: Dashboard) -> None:
    """The page shows ``d``'s numbers: cards, chart marks, tables."""
    f = d.figures
    card = {k: page.locator(f'[data-figure="{k}"] .v').inner_text() for k in ("zero_result_rate", "p95", "calls")}
    assert card == {"zero_result_rate": pct_text(f["zero_result_rate"]), "p95": ms_text(f["latency_ms"]["p95"]),
                    "calls": str(f["calls"])}  # fmt: skip
    spa = page.locator('[data-figure="searches_per_answered_question"] .v').inner_text()
    assert spa == f"{f['searches_per_answered_question']:.2f}"
    assert pct_text(f["cache_hit_rate"]) in page.locator('[data-figure="cache"]').inner_text()

    charts = page.locator("svg.chart")
    assert charts.count() == 4 + len(d.tools)  # three over time, errors, one histogram per tool
    for i in range(charts.count()):
        box = charts.nth(i).bounding_box()
        assert box is not None and box["width"] > 100 and box["height"] > 20, charts.nth(i).get_attribute("id")

    def values(chart: str, mark: str) -> list[float]:
        return [float(v) for v in page.locator(f"#{chart} {mark}").evaluate_all("els => els.map(e => e.dataset.value)")]

    for chart, key in (
        ("chart-zero-rate", "zero_result_rate"),
        ("chart-searches", "searches_per_answered_question"),
        ("chart-p95", "p95_latency_ms"),
    ):
        expected = [b[key] for b in d.series if b[key] is not None]
        assert values(chart, "circle.point") == expected, chart
        assert expected, f"{chart}: the log should give this chart points"
    for circle in page.locator("#chart-p95 circle.point").all():
        box = circle.bounding_box()
        assert box is not None and box["width"] > 0  # drawn, not just present in the markup

    labels = page.locator("#chart-errors rect.bar").evaluate_all("els => els.map(e => e.dataset.label)")
    assert dict(zip(labels, values("chart-errors", "rect.bar"), strict=True)) == {
        code: float(n) for code, n in f["errors_by_code"].items()
    }
    for i, tool in enumerate(d.tools):
        assert sum(values(f"chart-latency-{i}", "rect.bar")) == sum(n for _, n in tool.histogram)

    rows = page.locator("#zero-queries tr").all_inner_texts()[1:]
    assert [r.split("\t")[:2] for r in rows] == [[q.query, str(q.count)] for q in d.top_zero_queries]
    assert HOSTILE_QUERY in [q.query for q in d.top_zero_queries]
    assert page.locator("script").count() == 0


def test_served_page_in_chromium(chromium: str, served: str, call_log: Path, tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    screenshot = COMMITTED_SCREENSHOT if os.environ.get("SCOPEGATE_WRITE_SCREENSHOT") == "1" else tmp_path / "d.png"

    d = dashboard_from_log([call_log])
    assert d.figures["errors_by_code"] and d.figures["cache_hits"] and d.top_zero_queries
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu"])
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            errors = PageErrors(page)
            response = page.goto(served, wait_until="load")
            assert response is not None and response.status == 200
            assert page.title() == "scopegate dashboard"
            check_page(page, d)
            screenshot.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(screenshot), full_page=True)
            data = page.goto(served + "data.json")
            assert data is not None and data.json()["figures"] == d.figures
            assert errors.items == []
        finally:
            browser.close()
    assert screenshot.stat().st_size > 10_000


def test_static_report_in_chromium(chromium: str, call_log: Path, tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    report = tmp_path / "report.html"
    done = subprocess.run(
        [sys.executable, "-m", "scopegate.cli", "dashboard", str(call_log), "--html", str(report)],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu"])
        try:
            page = browser.new_page()
            errors = PageErrors(page)
            page.goto(report.as_uri())
            check_page(page, dashboard_from_log([call_log]))
            assert errors.items == []
        finally:
            browser.close()
