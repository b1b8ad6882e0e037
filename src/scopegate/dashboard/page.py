"""The dashboard as one self-contained HTML page (pure: a :class:`Dashboard` in, a string out).

No script at all: the charts are inline SVG (:mod:`scopegate.dashboard.charts`) and the page's
Content-Security-Policy forbids scripts, so a logged query carrying markup can only ever show as
text (it is escaped as well). The served page refreshes itself with a ``<meta http-equiv=refresh>``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from html import escape
from typing import Any

from scopegate.dashboard.charts import bar_chart, line_chart
from scopegate.dashboard.data import Dashboard
from scopegate.guard.stats import ms_text as ms
from scopegate.guard.stats import pct_text as pct

CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"

STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#1d2330;background:#fafbfc}
h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:28px 0 8px}h3{font-size:14px;margin:16px 0 4px}
.meta{color:#5b6475;margin:0 0 16px}
.cards{display:flex;flex-wrap:wrap;gap:12px}
.card{background:#fff;border:1px solid #dde1e8;border-radius:6px;padding:10px 14px;min-width:150px}
.card .v{font-size:22px;font-weight:600}.card .k{color:#5b6475;font-size:12px}
.chart{background:#fff;border:1px solid #dde1e8;border-radius:6px;max-width:100%;height:auto}
.chart .axis{stroke:#8a93a6}.chart .grid{stroke:#eceff4}
.chart .series{fill:none;stroke:#2f6fdb;stroke-width:2}.chart .point{fill:#2f6fdb}
.chart .bar{fill:#2f6fdb}.chart .tick,.chart .value,.chart .empty{font-size:11px;fill:#5b6475}
table{border-collapse:collapse;background:#fff;margin:6px 0}
td,th{border:1px solid #dde1e8;padding:3px 8px;text-align:left;font-size:12px}
td.n{text-align:right;font-variant-numeric:tabular-nums}
.grid2{display:grid;grid-template-columns:repeat(auto-fit,minmax(360px,1fr));gap:16px}
details{margin:4px 0}
"""


def num(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def count(value: float) -> str:
    return f"{value:g}"


def _time_label(iso: str, fine: bool) -> str:
    t = datetime.fromisoformat(iso)
    return t.strftime("%H:%M:%S.%f")[:-3] if fine else t.strftime("%m-%d %H:%M")


def _card(key: str, value: str, test_id: str) -> str:
    return (
        f'<div class="card" data-figure="{test_id}"><div class="v">{escape(value)}</div>'
        f'<div class="k">{escape(key)}</div></div>'
    )


def _table(head: Sequence[str], rows: Sequence[Sequence[str]], *, numeric_from: int = 1, table_id: str = "") -> str:
    ident = f' id="{escape(table_id)}"' if table_id else ""
    out = [f"<table{ident}><tr>", *(f"<th>{escape(h)}</th>" for h in head), "</tr>"]
    for row in rows:
        cells = (
            f'<td class="n">{escape(c)}</td>' if i >= numeric_from else f"<td>{escape(c)}</td>"
            for i, c in enumerate(row)
        )
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</table>")
    return "".join(out)


def _cards(f: Mapping[str, Any]) -> str:
    lat = f["latency_ms"]
    spa = f["searches_per_answered_question"]
    return (
        '<div class="cards">'
        + "".join(
            [
                _card(
                    f"zero-result rate ({f['result_lists']} result lists)",
                    pct(f["zero_result_rate"]),
                    "zero_result_rate",
                ),
                _card(
                    f"searches per answered question ({f['answered_questions']} answers)",
                    num(spa),
                    "searches_per_answered_question",
                ),
                _card("p95 tool latency", ms(lat["p95"]), "p95"),
                _card("p50 tool latency", ms(lat["p50"]), "p50"),
                _card(f"calls ({f['errors']} errors)", str(f["calls"]), "calls"),
                _card("error rate", pct(f["error_rate"]), "error_rate"),
                _card(f"cache hit rate ({f['cache_lookups']} lookups)", pct(f["cache_hit_rate"]), "cache_hit_rate"),
            ]
        )
        + "</div>"
    )


def _over_time(series: Sequence[Mapping[str, Any]]) -> str:
    fine = False
    if series:
        first = datetime.fromisoformat(series[0]["from"])
        fine = (datetime.fromisoformat(series[0]["until"]) - first).total_seconds() < 60
    labels = [_time_label(b["from"], fine) for b in series]
    charts = [
        ("chart-zero-rate", "zero-result rate", "zero_result_rate", pct, 1.0),
        ("chart-searches", "searches per answered question", "searches_per_answered_question", num, None),
        ("chart-p95", "p95 tool latency", "p95_latency_ms", ms, None),
    ]
    out = ['<div class="grid2">']
    for chart_id, title, key, fmt, top in charts:
        points = [(label, b[key]) for label, b in zip(labels, series, strict=True)]
        out.append(f"<div><h3>{escape(title)}</h3>{line_chart(chart_id, points, label=title, fmt=fmt, top=top)}</div>")
    out.append("</div>")
    rows = [
        [
            label,
            str(b["calls"]),
            pct(b["zero_result_rate"]),
            num(b["searches_per_answered_question"]),
            ms(b["p95_latency_ms"]),
        ]
        for label, b in zip(labels, series, strict=True)
    ]
    out.append(
        "<details><summary>the numbers</summary>"
        + _table(["from (UTC)", "calls", "zero-result rate", "searches/answer", "p95 latency"], rows, table_id="series")
        + "</details>"
    )
    return "".join(out)


def _zero_queries(d: Dashboard) -> str:
    if not d.top_zero_queries:
        return "<p>No search found nothing in this window.</p>"
    rows = [[q.query, str(q.count), ", ".join(q.tools), q.last_seen or "-"] for q in d.top_zero_queries]
    return _table(["query (as logged, normalised)", "times", "tools", "last seen"], rows, table_id="zero-queries")


def _errors(f: Mapping[str, Any]) -> str:
    by_code: Mapping[str, int] = f["errors_by_code"]
    bars = sorted(((code, float(n)) for code, n in by_code.items()), key=lambda b: (-b[1], b[0]))
    chart = bar_chart("chart-errors", bars, label="errors by code", fmt=count)
    rows = [[code, str(int(n)), pct(f["error_rate_by_code"][code])] for code, n in bars]
    table = _table(["code", "calls", "share of executed calls"], rows, table_id="errors") if rows else ""
    not_run = {**f.get("refused_by_code", {}), **f.get("confirmations_by_code", {})}
    note = ", ".join(f"{code} {n}" for code, n in sorted(not_run.items())) or "none"
    return (
        chart
        + table
        + f'<p data-figure="not-run">Not run (refused by the guard, or waiting for the user\'s confirmation; not '
        f"errors, not in the latencies): {escape(note)}</p>"
    )


def _tools(d: Dashboard) -> str:
    out = []
    for i, t in enumerate(d.tools):
        f = t.figures
        lat = f["latency_ms"]
        bounds = [le for le, _ in t.histogram]
        labels = [f"≤ {le} ms" for le in bounds[:-1]] + [f"> {bounds[-2]} ms"]
        bars = [(label, float(n)) for label, (_, n) in zip(labels, t.histogram, strict=True)]
        first = next((i for i, (_, n) in enumerate(bars) if n), 0)
        last = max((i for i, (_, n) in enumerate(bars) if n), default=-1)
        shown = bars[first : last + 1]
        out.append(
            f'<div class="tool" data-tool="{escape(t.tool, quote=True)}"><h3>{escape(t.tool)}</h3>'
            f"<p>{f['calls']} calls, {f['errors']} errors, p50 {escape(ms(lat['p50']))}, "
            f"p95 {escape(ms(lat['p95']))}, p99 {escape(ms(lat['p99']))}</p>"
            + bar_chart(f"chart-latency-{i}", shown, label=f"latency histogram of {t.tool}", fmt=count)
            + "</div>"
        )
    return '<div class="grid2">' + "".join(out) + "</div>" if out else "<p>No calls in this window.</p>"


def render_page(
    d: Dashboard, *, title: str = "scopegate dashboard", source: str = "", refresh_s: int | None = None
) -> str:
    """The whole page. ``refresh_s``: reload every so many seconds (the served page)."""
    w = d.window
    meta = f"{w.get('records', 0)} record(s) from {w.get('from') or '-'} to {w.get('until') or '-'} (UTC)"
    if source:
        meta = f"{source}: {meta}"
    if d.notes:
        meta += "; " + "; ".join(d.notes)
    refresh = f'<meta http-equiv="refresh" content="{int(refresh_s)}">' if refresh_s else ""
    f = d.figures
    body = [
        f"<h1>{escape(title)}</h1>",
        f'<p class="meta">{escape(meta)}</p>',
        _cards(f),
        "<h2>Over time</h2>",
        _over_time(d.series),
        "<h2>Top zero-result queries</h2>",
        _zero_queries(d),
        "<h2>Errors by code</h2>",
        _errors(f),
        "<h2>Cache</h2>",
        f'<p data-figure="cache">cache hit rate {escape(pct(f["cache_hit_rate"]))}: {f["cache_hits"]} hit(s) of '
        f"{f['cache_lookups']} lookup(s)</p>",
        "<h2>Latency by tool</h2>",
        _tools(d),
    ]
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        f'<meta name="viewport" content="width=device-width, initial-scale=1">{refresh}'
        f"<title>{escape(title)}</title><style>{STYLE}</style></head><body>" + "".join(body) + "</body></html>\n"
    )
