"""``scopegate dashboard``: the call log's health figures as a web page (served on loopback, or a static file).

:mod:`~scopegate.dashboard.data` computes (pure), :mod:`~scopegate.dashboard.charts` draws SVG (pure),
:mod:`~scopegate.dashboard.page` assembles the HTML (pure), :mod:`~scopegate.dashboard.server` serves it.
``grafana.json`` beside this file is a Grafana dashboard of the same figures from the Prometheus metrics.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

from scopegate.dashboard.data import Dashboard, build_dashboard, dashboard_from_log
from scopegate.dashboard.page import render_page

__all__ = ["Dashboard", "build_dashboard", "dashboard_from_log", "grafana_dashboard", "render_page"]


def grafana_dashboard() -> dict[str, Any]:
    """The shipped Grafana dashboard (JSON model) over scopegate's Prometheus metrics."""
    text = resources.files(__package__).joinpath("grafana.json").read_text("utf-8")
    loaded: dict[str, Any] = json.loads(text)
    return loaded
