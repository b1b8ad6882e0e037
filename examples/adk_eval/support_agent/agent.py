"""A scopegate support agent for ``adk eval``: offline scripted model, scope bound by the server.

    pip install "google-adk[eval]==2.13.0"       # the eval extra (~600-760 MB: pandas, aiplatform, ...)
    adk eval examples/adk_eval/support_agent examples/adk_eval/support_agent/support.evalset.json \\
        --config_file_path examples/adk_eval/support_agent/test_config.json --print_detailed_results

Each eval case names its user in ``session_input.user_id``; the scope binding
looks that user up (it never reads a tenant from the case's state), so the
cases also check that the tools only ever see the bound tenant. The index is
built on first use under ``$SCOPEGATE_EVAL_INDEX`` (default: the system temp
folder). Swap ``ScriptedLlm`` for a real model to evaluate a real agent.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from google.adk.agents import LlmAgent
from google.adk.apps import App

from scopegate.adapters.adk import adk_search_tools
from scopegate.adapters.adk_scope import ScopeBindingPlugin, ScopePolicy
from scopegate.backends.embedded import EmbeddedBackend
from scopegate.demo.corpus import TENANTS, generate_tickets, ticket_spec
from scopegate.identity import Identity
from scopegate.testing import ScriptedLlm, Turn, call, final_text

INDEX = Path(os.environ.get("SCOPEGATE_EVAL_INDEX") or Path(tempfile.gettempdir()) / "scopegate-adk-eval-index")
DIRECTORY = {f"user-{tenant}": Identity(tenant, f"user-{tenant}") for tenant in TENANTS}


def backend() -> EmbeddedBackend:
    done = INDEX / ".ingested"
    engine = EmbeddedBackend(ticket_spec(), INDEX)
    if not done.exists():
        engine.ingest_sync(generate_tickets(per_tenant=60), batch_size=500)
        done.write_text("ok", encoding="utf-8")
    return engine


def answer(responses: list[tuple[str, dict[str, Any]]]) -> Turn:
    results = responses[0][1].get("results", []) if responses else []
    ids = ", ".join(str(hit["ticket_id"]) for hit in results[:3])
    return final_text(f"Apple Pay refunds fail for several customers; see tickets {ids}." if ids else "No tickets.")


engine = backend()
root_agent = LlmAgent(
    name="support_agent",
    model=ScriptedLlm(
        [call("search_tickets", query="apple pay refund failed", product="payments"), answer], per_invocation=True
    ),
    instruction="Answer support questions with the ticket tools. Cite ticket ids.",
    tools=adk_search_tools(engine.spec, engine, scope_policy=ScopePolicy.binding()),
)
app = App(name="support_agent", root_agent=root_agent, plugins=[ScopeBindingPlugin(DIRECTORY)])
