"""Hand-written tools of the orders example: workflows over the generated OpenAPI tools.

``cancel_order`` is the workflow a model should see instead of the raw ``cancelOrder``
endpoint: look the order up (``getOrder``, with the caller's scope and its ownership check),
refuse what cannot be cancelled, ask the user with the order's details, then call
``cancelOrder`` with an idempotency key derived from the caller and the order, so a retried or
repeated call cancels once. Bind it to the toolset's tools::

    toolset = OperationToolset(orders_settings(base_url))
    tool = cancel_order.bind(tools=toolset.tools, scope_keys=toolset.settings.scope_keys)

or name it in a config: ``app_tools: [{function: "scopegate.examples.orders.tools:cancel_order",
uses: [getOrder, cancelOrder], hide: [cancelOrder]}]``.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from scopegate.apptools import AppContext, ToolFailure, app_tool

CancelReason = Literal["changed_mind", "found_cheaper", "ordered_by_mistake", "other"]
OrderId = Annotated[str, Field(pattern=r"^ord_[0-9]{1,12}$", description="The order id, e.g. ord_1001.")]


@app_tool(read_only=False, confirm="in_body")
async def cancel_order(ctx: AppContext, order_id: OrderId, reason: CancelReason = "other") -> dict[str, Any]:
    """Cancel one of the signed-in customer's orders that has not shipped yet.

    Args:
        reason: Why the customer cancels.
    """
    order = (await ctx.tools.call("getOrder", orderId=order_id)).raise_for_error().data
    if not isinstance(order, dict) or order.get("customer_id") != ctx.scope.user_id:
        raise ToolFailure("NOT_FOUND", f"no order {order_id} in this account")  # the same answer as "absent"
    if order.get("status") != "processing":
        raise ToolFailure("CONFLICT", f"order {order_id} is {order.get('status')} and can no longer be cancelled")
    items = sum(int(item.get("quantity", 0)) for item in order.get("items") or [])
    total = f"{int(order.get('total_cents', 0)) / 100:.2f} {order.get('currency', '')}".strip()
    await ctx.confirm(f"Cancel order {order_id} ({items} item(s), {total})?", details={"order_id": order_id})
    done = await ctx.tools.call(
        "cancelOrder", {"orderId": order_id, "reason": reason}, idempotency_key=ctx.idempotency_key(order_id)
    )
    cancelled = done.raise_for_error().data
    return {"order_id": order_id, "status": cancelled.get("status"), "reason": reason}
