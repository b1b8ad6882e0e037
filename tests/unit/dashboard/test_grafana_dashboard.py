"""The shipped Grafana dashboard queries only series that scopegate really exports, with their real labels."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from scopegate.cli import main
from scopegate.dashboard import grafana_dashboard
from scopegate.guard.metrics import CallObservation, GuardMetrics
from scopegate.server.metrics import ServerMetrics, exposition

METRIC = re.compile(r"\b(scopegate_[a-z_]+)\b")
SELECTOR = re.compile(r"\b(scopegate_[a-z_]+)\{([^}]*)\}")
GROUPING = re.compile(r"\b(?:by|without)\s*\(([^)]*)\)")
MATCHER = re.compile(r"([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)")
PROMQL_LABELS = {"le"}  # histogram_quantile's bucket label, present on every _bucket series


class _Guard:
    def __init__(self, metrics: GuardMetrics) -> None:
        self.metrics = metrics


def exported() -> dict[str, set[str]]:
    """Every series name /metrics serves once each kind of event happened, with its label names."""
    guard = GuardMetrics()
    calls = (("ok", None, False, 3), ("ok", None, True, 0), ("error", "CALL_LIMIT", None, None))
    for outcome, code, hit, total in calls:
        guard.observe(
            CallObservation(
                tool="search_tickets", family="search", turn_key="i:1", outcome=outcome, error_code=code,
                latency_s=0.004, cache_hit=hit, total=total, result_list=total is not None, counted_as_search=True,
            )
        )  # fmt: skip
    guard.invocation_answered("i:1")
    guard.call_log_failure("dropped")
    server = ServerMetrics()
    server.auth_failure("unknown_token")
    server.confirmation("approved")
    text = exposition(server, _Guard(guard)).decode()
    out: dict[str, set[str]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out.setdefault(sample.name, set()).update(sample.labels)
    return out


def queries(node: Any) -> list[str]:
    """Every PromQL text in the dashboard: panel targets and template variable queries."""
    found: list[str] = []
    if isinstance(node, dict):
        for key, value in node.items():
            promql = key in ("expr", "definition") or (key == "query" and "scopegate_" in str(value))
            if promql and isinstance(value, str):
                found.append(value)
            else:
                found.extend(queries(value))
    elif isinstance(node, list):
        for item in node:
            found.extend(queries(item))
    return found


def test_every_query_names_an_exported_series_and_its_labels() -> None:
    series = exported()
    dash = grafana_dashboard()
    exprs = queries(dash)
    assert len(exprs) >= len(dash["panels"])
    named: set[str] = set()
    for expr in exprs:
        names = METRIC.findall(expr)
        assert names, f"no scopegate metric in {expr!r}"
        named.update(names)
        for name in names:
            assert name in series, f"{name} (in {expr!r}) is not exported; exported: {sorted(series)}"
        for name, matchers in SELECTOR.findall(expr):
            for label in MATCHER.findall(matchers):
                assert label in series[name], f"{name} has no label {label!r}"
        labels_used = {lbl.strip() for group in GROUPING.findall(expr) for lbl in group.split(",") if lbl.strip()}
        available = set().union(*(series[n] for n in names)) | PROMQL_LABELS
        assert labels_used <= available, f"{expr!r} groups by {labels_used - available}"
    # the seeds' three numbers, errors, cache and latency are all on the board
    for needed in (
        "scopegate_zero_results_total",
        "scopegate_answer_searches_sum",
        "scopegate_tool_latency_seconds_bucket",
        "scopegate_tool_errors_total",
        "scopegate_cache_lookups_total",
    ):
        assert needed in named


def test_a_misspelt_metric_is_caught() -> None:
    series = exported()
    assert "scopegate_tool_calls_total" in series
    assert "scopegate_tool_call_total" not in series  # the check above would fail on this spelling
    assert {"tool", "le"} <= series["scopegate_tool_latency_seconds_bucket"]


def test_panels_are_well_formed() -> None:
    dash = grafana_dashboard()
    ids = [p["id"] for p in dash["panels"]]
    assert len(ids) == len(set(ids))
    refs = {v["name"] for v in dash["templating"]["list"]}
    for panel in dash["panels"]:
        assert panel["targets"] and panel["title"]
        for target in panel["targets"]:
            assert target["datasource"]["uid"] == "${datasource}"
            for var in re.findall(r"\$(\w+)", target["expr"]):
                assert var in refs or var.startswith("__"), var


def test_cli_prints_it(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["dashboard", "--grafana"]) == 0
    assert json.loads(capsys.readouterr().out) == grafana_dashboard()
