"""The dashboard page and its SVG charts (pure)."""

from __future__ import annotations

import re
from datetime import timedelta
from html.parser import HTMLParser
from pathlib import Path

from test_dashboard_data import T0, answer, call

from scopegate.cli import main
from scopegate.dashboard.charts import _nice_top, bar_chart, line_chart
from scopegate.dashboard.data import build_dashboard
from scopegate.dashboard.page import CSP, render_page

HOSTILE = '<script>alert(1)</script> "quoted" & <img src=x onerror=alert(2)>'


class Collect(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parsed(html: str) -> Collect:
    p = Collect()
    p.feed(html)
    return p


def sample() -> str:
    records = [
        call(1, latency_ms=1.0),
        call(2, latency_ms=3.0, total=0, query=HOSTILE),
        call(3, latency_ms=0.02, outcome="error", error_code="CALL_LIMIT", total=None),
        call(40, latency_ms=10.0, invocation_id="i2", cache_hit=True),
        answer(41, "i2"),
    ]
    d = build_dashboard(records, start=T0, end=T0 + timedelta(minutes=60), buckets=4)
    return render_page(d, source="calls.jsonl")


def test_markup_from_the_log_is_text_only() -> None:
    html = sample()
    p = parsed(html)
    assert not [t for t, _ in p.tags if t in ("script", "img", "iframe", "object")]
    assert not [a for _, attrs in p.tags for a in attrs if a.startswith("on")]
    assert HOSTILE in "".join(p.text)  # shown as the text it is
    csp = [a for t, a in p.tags if t == "meta" and a.get("http-equiv") == "Content-Security-Policy"]
    assert csp and csp[0]["content"] == CSP and "script-src" not in CSP and "default-src 'none'" in CSP


def test_charts_carry_the_numbers() -> None:
    by_chart: dict[str, list[float]] = {}
    current = ""
    for tag, attrs in parsed(sample()).tags:
        if tag == "svg":
            current = attrs["id"] or ""
        elif tag in ("circle", "rect") and attrs.get("data-value") is not None:
            by_chart.setdefault(current, []).append(float(attrs["data-value"] or "nan"))
    assert by_chart["chart-zero-rate"] == [0.5, 0.0]  # buckets without a result list have no point
    assert by_chart["chart-p95"] == [1.0 + 0.95 * (3.0 - 1.0), 10.0]  # p95 of 1, 3 ms (not the refusal); 10 ms
    assert by_chart["chart-searches"] == [1.0]  # i2 answered after one search; i1 never answered
    assert "chart-errors" not in by_chart  # a CALL_LIMIT refusal is not an error of the tool...
    assert sum(by_chart["chart-latency-0"]) == 3  # the CALL_LIMIT refusal is not in the histogram


def test_calls_that_did_not_run_are_listed_apart() -> None:
    p = parsed(sample())
    text = "".join(p.text)
    assert "Not run (refused by the guard, or waiting for the user's confirmation" in text
    assert "CALL_LIMIT 1" in text  # ...it is listed with what did not run


def test_refresh_only_when_served() -> None:
    assert 'http-equiv="refresh"' not in sample()
    d = build_dashboard([], start=None, end=T0)
    html = render_page(d, refresh_s=15)
    assert '<meta http-equiv="refresh" content="15">' in html
    assert "no data" in html and "No calls in this window." in html


def test_line_chart_breaks_at_missing_values_and_scales() -> None:
    svg = line_chart("c", [("a", 1.0), ("b", 2.0), ("c", None), ("d", 3.0), ("e", 4.0)], label="x", fmt=str)
    assert len(re.findall("<polyline", svg)) == 2
    assert re.findall(r'data-value="([^"]+)"', svg) == ["1.0", "2.0", "3.0", "4.0"]
    assert _nice_top(4.0) == 5.0 and _nice_top(0.3) == 0.5 and _nice_top(1000.0) == 1000.0 and _nice_top(0) == 1.0
    assert _nice_top(0.07) == 0.1 and _nice_top(12_345.0) == 20_000.0


def test_bar_chart() -> None:
    svg = bar_chart("b", [("A<", 2.0), ("B", 1.0)], label="bars", fmt=lambda v: f"{v:g}")
    widths = [float(w) for w in re.findall(r'<rect class="bar" x="\d+" y="[\d.]+" width="([\d.]+)"', svg)]
    assert widths[0] == 2 * widths[1] and "A&lt;" in svg
    assert "none" in bar_chart("e", [], label="empty", fmt=str)


def test_cli_writes_the_report(tmp_path: Path) -> None:
    log = tmp_path / "calls.jsonl"
    log.write_text('{"event":"call","ts":"2025-03-01T10:00:00+00:00","tool":"t","latency_ms":1,"outcome":"ok"}\n')
    out = tmp_path / "report.html"
    assert main(["dashboard", str(log), "--html", str(out)]) == 0
    assert out.read_text("utf-8").startswith("<!doctype html>") and "calls.jsonl" in out.read_text("utf-8")
    assert main(["dashboard"]) == 2  # no log
    assert main(["dashboard", str(tmp_path / "missing.jsonl"), "--html", str(out)]) == 2
    assert main(["dashboard", str(log), "--html", str(tmp_path / "no" / "such" / "dir" / "r.html")]) == 1
