"""App tools a test config names as ``config_apptools_module:<name>``."""

from __future__ import annotations

from typing import Any

from scopegate.apptools import AppContext, app_tool


@app_tool(read_only=True, credential=True)
async def whoami(ctx: AppContext) -> dict[str, Any]:
    """Who the caller is, and whether a credential arrived."""
    return {"tenant": ctx.scope.tenant_id, "user": ctx.scope.user_id, "credential": ctx.credential is not None}


def not_a_tool() -> str:
    return "plain function"
