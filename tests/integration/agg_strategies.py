"""Hypothesis strategies for the aggregation property tests on every backend (imported by module name)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from hypothesis import strategies as st

from scopegate.scope import Scope
from scopegate_lab.agg_oracle import DAYS, FIRST_DAY, GROUPS, TENANTS

TODAY = FIRST_DAY + dt.timedelta(days=DAYS - 1)
days = st.integers(-5, DAYS + 5).map(lambda n: (FIRST_DAY + dt.timedelta(days=n)).isoformat())


@st.composite
def count_args(draw: st.DrawFn) -> dict[str, Any]:
    """Arguments a model could send: a field or a date interval, filters, a range (some invalid)."""
    args: dict[str, Any] = {"group_by": draw(st.sampled_from(["status", "product", "created_at"]))}
    if args["group_by"] == "created_at":
        args["interval"] = draw(st.sampled_from(["day", "week", "month"]))
    for name, values in (("status", ["open", "pending", "solved", "closed"]), ("product", ["payments", "billing"])):
        if draw(st.booleans()):
            args[name] = draw(st.sampled_from(values))
    shape = draw(st.sampled_from(["none", "last_days", "since_until", "since", "until"]))
    if shape == "last_days":
        args["last_days"] = draw(st.integers(1, 140))
    elif shape == "since_until":
        args["since"], args["until"] = sorted([draw(days), draw(days)])
    elif shape == "since":
        args["since"] = draw(days)
    elif shape == "until":
        args["until"] = draw(days)
    return args


@st.composite
def scopes(draw: st.DrawFn, *, groups: bool = True) -> Scope:
    tenant = draw(st.sampled_from([*TENANTS, "nobody"]))
    chosen = tuple(sorted(draw(st.sets(st.sampled_from(GROUPS), max_size=3)))) if groups else ()
    return Scope(tenant, chosen, "u1")
