"""A team's own ADK agent (``--agent tests.e2e.evals.team.agent:root_agent``): plain function tools that
read the tenant from session state, over the team's CSV (path in TEAM_BUGS_CSV)."""

from __future__ import annotations

import csv
import os
from typing import Any

from google.adk.agents import LlmAgent
from google.adk.tools.tool_context import ToolContext


def _rows(tool_context: ToolContext) -> list[dict[str, str]]:
    tenant = tool_context.state.get("tenant_id")
    with open(os.environ["TEAM_BUGS_CSV"], encoding="utf-8") as handle:
        return [r for r in csv.DictReader(handle) if r["team"] == tenant]


def search_bugs(query: str, tool_context: ToolContext) -> dict[str, Any]:
    """Search this team's bug reports by keywords.

    Args:
      query: Keywords.
    """
    words = [w for w in query.lower().split() if len(w) > 2]
    hits = [r for r in _rows(tool_context) if any(w in (r["title"] + " " + r["body"]).lower() for w in words)]
    return {"status": "ok", "results": [{"bug_id": r["bug_id"], "title": r["title"]} for r in hits[:5]]}


def get_bug(id: str, tool_context: ToolContext) -> dict[str, Any]:
    """Fetch one bug report by its bug_id.

    Args:
      id: The bug_id.
    """
    found = next((r for r in _rows(tool_context) if r["bug_id"] == id), None)
    if found is None:
        return {"status": "error", "error_code": "NOT_FOUND", "message": f"no bug {id!r}"}
    return {"status": "ok", "document": found}


root_agent = LlmAgent(
    name="bug_helper",
    model="gemini-2.5-flash",  # replaced by --model in evals
    instruction="You help a team with its bug reports. Use the tools for questions about bugs; cite bug ids. "
    "Otherwise answer briefly without tools.",
    tools=[search_bugs, get_bug],
)
