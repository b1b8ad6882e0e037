"""Tool descriptions a model reads (issue 38): summary and description stay two sentences when a prompt
folds line breaks, and a bound argument says the operation only sees the caller's own data."""

from __future__ import annotations

from scopegate.demo.orders_demo import orders_settings
from scopegate.openapi.runtime import OperationToolset


async def test_summary_and_description_do_not_run_together_and_bound_arguments_are_explained() -> None:
    toolset = OperationToolset(orders_settings("http://127.0.0.1:9"))
    try:
        tools = {t.name: t for t in toolset.tools}
        folded = " ".join(tools["listOrders"].description.split())  # what a one-line tool list shows
        assert "List orders List" not in folded
        assert folded.startswith("List orders. List the orders visible to the caller")
        assert "Only the signed-in user's own data" in folded and "customer_id" in folded
        # Operations without a bound argument say nothing of the kind.
        assert "own data" not in tools["getOrder"].description
    finally:
        await toolset.aclose()
