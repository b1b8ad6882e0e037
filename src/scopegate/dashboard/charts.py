"""Charts as inline SVG, drawn on the server (pure functions: numbers in, markup out).

Why SVG from Python rather than a JavaScript chart library: the static report is one self-contained
file that opens anywhere (a CI artifact, an e-mail, a browser with scripts off) and the page can
forbid every script through its Content-Security-Policy; nothing has to be vendored, pinned and
audited; the charts are tested as plain text in unit tests. Every mark carries its number in
``data-value`` (and a ``<title>`` tooltip), so tests and screen readers read the figures the chart
shows, and each chart has the same numbers in a table next to it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from html import escape

WIDTH = 640
HEIGHT = 200
PAD_LEFT = 56
PAD_RIGHT = 12
PAD_TOP = 12
PAD_BOTTOM = 28

Format = Callable[[float], str]


def _attr(value: object) -> str:
    return escape(str(value), quote=True)


def _num(value: float) -> str:
    return f"{value:.2f}".rstrip("0").rstrip(".")


def _nice_top(value: float) -> float:
    """A round axis maximum at or above ``value``: 1, 2, 2.5 or 5 times a power of ten."""
    if value <= 0:
        return 1.0
    magnitude = 10.0 ** math.floor(math.log10(value))
    return next(step * magnitude for step in (1, 2, 2.5, 5, 10) if step * magnitude >= value)


def line_chart(
    chart_id: str,
    points: Sequence[tuple[str, float | None]],
    *,
    label: str,
    fmt: Format,
    top: float | None = None,
) -> str:
    """A line over time buckets; a bucket without a value breaks the line. ``top`` fixes the axis (rates: 1)."""
    values = [v for _, v in points if v is not None]
    axis_top = top if top is not None else _nice_top(max(values, default=0.0))
    inner_w = WIDTH - PAD_LEFT - PAD_RIGHT
    inner_h = HEIGHT - PAD_TOP - PAD_BOTTOM
    n = len(points)

    def x(i: int) -> float:
        return PAD_LEFT + (inner_w * (i + 0.5) / n if n else 0.0)

    def y(v: float) -> float:
        return PAD_TOP + inner_h * (1 - min(v, axis_top) / axis_top)

    parts = [
        f'<svg id="{_attr(chart_id)}" class="chart line" role="img" aria-label="{_attr(label)}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" height="{HEIGHT}" xmlns="http://www.w3.org/2000/svg">',
        f'<line class="axis" x1="{PAD_LEFT}" y1="{PAD_TOP + inner_h}" x2="{WIDTH - PAD_RIGHT}" '
        f'y2="{PAD_TOP + inner_h}"/>',
    ]
    for frac in (0.0, 0.5, 1.0):
        gy = PAD_TOP + inner_h * (1 - frac)
        parts.append(
            f'<text class="tick" x="{PAD_LEFT - 6}" y="{_num(gy + 4)}" text-anchor="end">'
            f"{escape(fmt(axis_top * frac))}</text>"
        )
        if frac:
            parts.append(
                f'<line class="grid" x1="{PAD_LEFT}" y1="{_num(gy)}" x2="{WIDTH - PAD_RIGHT}" y2="{_num(gy)}"/>'
            )
    runs: list[list[str]] = [[]]
    for i, (_, v) in enumerate(points):
        if v is None:
            runs.append([])
        else:
            runs[-1].append(f"{_num(x(i))},{_num(y(v))}")
    for run in runs:
        if len(run) > 1:
            parts.append(f'<polyline class="series" points="{" ".join(run)}"/>')
    for i, (when, v) in enumerate(points):
        if v is None:
            continue
        parts.append(
            f'<circle class="point" cx="{_num(x(i))}" cy="{_num(y(v))}" r="3" data-index="{i}" '
            f'data-value="{_attr(repr(float(v)))}"><title>{escape(when)}: {escape(fmt(v))}</title></circle>'
        )
    if points:
        for i in sorted({0, n - 1}):
            anchor = "start" if i == 0 and n > 1 else "end"
            parts.append(
                f'<text class="tick" x="{_num(x(i))}" y="{HEIGHT - 8}" text-anchor="{anchor}">'
                f"{escape(points[i][0])}</text>"
            )
    else:
        parts.append(f'<text class="empty" x="{WIDTH / 2}" y="{HEIGHT / 2}" text-anchor="middle">no data</text>')
    parts.append("</svg>")
    return "".join(parts)


def bar_chart(chart_id: str, bars: Sequence[tuple[str, float]], *, label: str, fmt: Format) -> str:
    """Horizontal bars, one row each (error codes, histogram buckets)."""
    row = 22
    label_w = 150
    height = max(row, row * len(bars)) + 8
    inner_w = WIDTH - label_w - 70
    top = max((v for _, v in bars), default=0.0)
    parts = [
        f'<svg id="{_attr(chart_id)}" class="chart bars" role="img" aria-label="{_attr(label)}" '
        f'viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" height="{height}" xmlns="http://www.w3.org/2000/svg">'
    ]
    if not bars:
        parts.append(f'<text class="empty" x="{WIDTH / 2}" y="{row - 6}" text-anchor="middle">none</text>')
    for i, (name, v) in enumerate(bars):
        y = 4 + i * row
        w = inner_w * v / top if top > 0 else 0.0
        parts.append(
            f'<text class="tick" x="{label_w - 6}" y="{y + 14}" text-anchor="end">{escape(name)}</text>'
            f'<rect class="bar" x="{label_w}" y="{y + 2}" width="{_num(w)}" height="{row - 6}" '
            f'data-label="{_attr(name)}" data-value="{_attr(repr(float(v)))}"><title>{escape(name)}: '
            f"{escape(fmt(v))}</title></rect>"
            f'<text class="value" x="{_num(label_w + w + 6)}" y="{y + 14}">{escape(fmt(v))}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)
