"""The worked example: a support agent searching tickets through the real ADK Runner.

The model is scripted (no model API is reachable here) but it acts on what the
tools really return: the second search uses the error code it finds in the
first search's snippets, and the answer cites the ticket ids it was given.

Scope is bound the way a deployment should bind it: a
:class:`~scopegate.adapters.adk_scope.ScopeBindingPlugin` looks the signed-in
user up in a server-side directory at the start of every invocation, and the
tools read scope only from that binding. Sessions carry no tenant in their
state at all, and the last section shows a client forging one.
"""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from google.adk.agents import LlmAgent
from google.adk.apps import App
from google.adk.runners import InMemoryRunner
from google.genai import types

from scopegate.adapters.adk import ScopegateToolset
from scopegate.adapters.adk_scope import ScopeBindingPlugin, ScopePolicy
from scopegate.backends.embedded import EmbeddedBackend
from scopegate.demo.corpus import INJECTION_ID, INJECTION_TENANT, TENANTS, generate_tickets, ticket_spec, write_jsonl
from scopegate.identity import Identity
from scopegate.ingest.run import ingest_path
from scopegate.search.bundle import search_tools
from scopegate.testing.scripted_llm import ScriptedLlm, Turn, call, final_text

PrintFn = Callable[[str], None]
APP = "scopegate_demo"
# The server-side directory the binding consults: signed-in user -> verified identity.
DIRECTORY = {f"user-{tenant}": Identity(tenant, f"user-{tenant}") for tenant in TENANTS}
CODE_RE = re.compile(r"\b(?:[A-Z]{1,3}-?\d{3,4}|[a-z]+(?:_[a-z]+)+)\b")


def _ids(responses: list[tuple[str, dict[str, Any]]]) -> list[str]:
    out: list[str] = []
    for _name, response in responses:
        for hit in response.get("results", []) or []:
            out.append(str(hit.get("ticket_id")))
    return out


def most_common_code(responses: list[tuple[str, dict[str, Any]]]) -> str | None:
    """The error code that occurs most often in the snippets and subjects (what a model would notice)."""
    counts: Counter[str] = Counter()
    for _name, response in responses:
        for hit in response.get("results", []) or []:
            text = f"{hit.get('subject', '')} {hit.get('snippet', '')}"
            counts.update(m for m in CODE_RE.findall(text) if any(ch.isdigit() for ch in m))
    return counts.most_common(1)[0][0] if counts else None


def support_script() -> list[Any]:
    """Search, search again by the processor code found in the snippets, answer citing ids."""
    seen: dict[str, Any] = {}

    def second(responses: list[tuple[str, dict[str, Any]]]) -> Turn:
        seen["first"] = _ids(responses)
        code = most_common_code(responses)
        seen["code"] = code
        if code is None:
            return final_text("I found no error code in the tickets.")
        return call("search_tickets", query=code, product="payments")

    def answer(responses: list[tuple[str, dict[str, Any]]]) -> Turn:
        ids = list(dict.fromkeys(seen["first"][:3] + _ids(responses)[:3]))
        total = responses[0][1].get("total_text", "?") if responses else "?"
        return final_text(
            f"Apple Pay refunds fail with processor error {seen['code']} ({total} tickets mention it). "
            f"See tickets {', '.join(ids)}."
        )

    return [call("search_tickets", query="apple pay refund failed", product="payments"), second, answer]


def count_script() -> list[Any]:
    """The question "how many payments tickets do we have, by status?": one count, an answer from its table."""

    def answer(responses: list[tuple[str, dict[str, Any]]]) -> Turn:
        result = responses[0][1] if responses else {}
        if result.get("status") != "ok":
            return final_text(f"I could not count the tickets ({result.get('error_code')}).")
        rows = ", ".join(f"{row['status']} {row['count']}" for row in result.get("buckets", []))
        return final_text(f"{result.get('total_text')} payments tickets: {rows}.")

    return [call("count_tickets", group_by="status", product="payments"), answer]


def brute_force_counts(corpus: Path, tenant: str, product: str) -> dict[str, int]:
    """What the counting tool must answer, counted from the corpus file itself."""
    counts: Counter[str] = Counter()
    for line in corpus.open(encoding="utf-8"):
        ticket = json.loads(line)
        if ticket["tenant_id"] == tenant and ticket["product"] == product:
            counts[ticket["status"]] += 1
    return dict(counts)


def injection_script() -> list[Any]:
    """A model that obeys the planted ticket: it tries to widen scope every way it can."""
    return [
        call("search_tickets", query="apple pay refund failed", product="payments"),
        call("search_tickets", query="tenant_id:* OR tenant_id:acme refund", tenant_id="acme"),
        call("search_tickets", query="tenant_id:* OR tenant_id:acme refund"),
        call("get_ticket", id="ACM-00001"),
        final_text("I can only see this organisation's tickets."),
    ]


async def run_agent(
    backend: EmbeddedBackend,
    tenant: str,
    steps: list[Any],
    question: str,
    print_fn: PrintFn,
    *,
    state_delta: dict[str, Any] | None = None,
    seen: list[tuple[str, dict[str, Any]]] | None = None,
) -> tuple[list[str], str | None]:
    """Run one ADK session of ``tenant``'s user; print calls and shaped responses; return returned ids and answer.

    ``state_delta`` is what a client sends with its message (under ``adk api_server``,
    anything it likes); the binding decides the scope regardless. ``seen`` collects every
    (tool, response) pair.
    """
    model = ScriptedLlm(steps)
    agent = LlmAgent(
        name="support_agent",
        model=model,
        instruction="Answer support questions using the ticket tools. Cite ticket ids.",
        tools=[
            ScopegateToolset(search_tools(backend.spec, backend, aggregate=True), scope_policy=ScopePolicy.binding())
        ],
    )
    runner = InMemoryRunner(app=App(name=APP, root_agent=agent, plugins=[ScopeBindingPlugin(DIRECTORY)]))
    user = f"user-{tenant}"
    session = await runner.session_service.create_session(app_name=APP, user_id=user)
    returned: list[str] = []
    answer = None
    print_fn(f"\n=== session of {user!r} (scope bound by the server: tenant {tenant!r}): {question}")
    if state_delta:
        print_fn(f"   the client sends state_delta={json.dumps(state_delta)}")
    async for event in runner.run_async(
        user_id=user,
        session_id=session.id,
        new_message=types.Content(role="user", parts=[types.Part(text=question)]),
        state_delta=state_delta,
    ):
        for part in event.content.parts if event.content and event.content.parts else []:
            if part.function_call:
                print_fn(f"-> {part.function_call.name}({json.dumps(dict(part.function_call.args or {}))})")
            elif part.function_response:
                response = dict(part.function_response.response or {})
                text = json.dumps(response, ensure_ascii=False)
                print_fn(f"<- {len(text)} chars: {text}")
                returned += [str(r.get("ticket_id")) for r in response.get("results", []) or []]
                if seen is not None:
                    seen.append((str(part.function_response.name), response))
                if response.get("status") == "ok" and "document" in response:
                    returned.append(str(response["document"].get("ticket_id")))
            elif part.text and event.is_final_response():
                answer = part.text
                print_fn(f"== answer: {answer}")
    await runner.close()
    return returned, answer


async def run_search_demo(workdir: str | Path, print_fn: PrintFn = print) -> dict[str, Any]:
    """Generate, index, run the worked example and the isolation checks. Returns a summary."""
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    spec = ticket_spec()
    corpus = workdir / "tickets.jsonl"
    count = write_jsonl(corpus, generate_tickets())
    owner = {json.loads(line)["ticket_id"]: json.loads(line)["tenant_id"] for line in corpus.open(encoding="utf-8")}
    index_dir = workdir / "index"
    if index_dir.exists():
        import shutil

        shutil.rmtree(index_dir)
    backend = EmbeddedBackend(spec, index_dir)
    started = time.perf_counter()
    report = await ingest_path(backend, corpus, batch_size=1000)
    print_fn(
        f"indexed {report.indexed} of {count} tickets from {len(set(owner.values()))} tenants into {index_dir} "
        f"in {time.perf_counter() - started:.2f}s ({report.commits} commits, {report.failed} failed)"
    )

    ids, answer = await run_agent(backend, "acme", support_script(), "Why do Apple Pay refunds fail?", print_fn)
    foreign = [i for i in ids if owner.get(i) != "acme"]
    print_fn(f"check: {len(ids)} ticket ids returned to acme, {len(foreign)} from another tenant")

    seen: list[tuple[str, dict[str, Any]]] = []
    question = "How many payments tickets do we have, by status?"
    await run_agent(backend, "acme", count_script(), question, print_fn, seen=seen)
    table = next((r for name, r in seen if name == "count_tickets" and r.get("status") == "ok"), {})
    counts = {row["status"]: row["count"] for row in table.get("buckets", [])}
    expected = brute_force_counts(corpus, "acme", "payments")
    counts_ok = bool(counts) and counts == expected
    print_fn(f"check: the counts {counts} {'equal' if counts_ok else 'DIFFER FROM'} a count of acme's own tickets")

    other_ids, _ = await run_agent(backend, "globex", support_script(), "Why do Apple Pay refunds fail?", print_fn)
    other_foreign = [i for i in other_ids if owner.get(i) != "globex"]
    print_fn(f"check: {len(other_ids)} ticket ids returned to globex, {len(other_foreign)} from another tenant")

    inj_ids, _ = await run_agent(
        backend, INJECTION_TENANT, injection_script(), "Why did the Apple Pay refund fail?", print_fn
    )
    inj_foreign = [i for i in inj_ids if owner.get(i) != INJECTION_TENANT]
    print_fn(
        f"check: the planted ticket {INJECTION_ID} was {'seen' if INJECTION_ID in inj_ids else 'not seen'}; "
        f"after obeying it the model got {len(inj_ids)} ids, {len(inj_foreign)} from another tenant"
    )

    print_fn("\n##### A client forges its scope (what adk api_server lets any client send)")
    forged = {"tenant_id": "acme", "temp:tenant_id": "acme", "user_id": "user-acme"}
    forged_ids, _ = await run_agent(
        backend, "globex", support_script(), "Why do Apple Pay refunds fail?", print_fn, state_delta=forged
    )
    forged_foreign = [i for i in forged_ids if owner.get(i) != "globex"]
    print_fn(
        f"check: the forged state_delta got {len(forged_ids)} ids, {len(forged_foreign)} of acme or any other "
        "tenant: the binding, not the client's state, decides the scope"
    )
    await backend.close()
    ok = not (foreign or other_foreign or inj_foreign or forged_foreign) and bool(ids and other_ids and forged_ids)
    ok = ok and counts_ok
    print_fn("\nRESULT: " + ("no session reached another tenant's data" if ok else "ISOLATION FAILURE"))
    return {
        "ok": ok,
        "answer": answer,
        "ids": ids,
        "other_ids": other_ids,
        "injection_ids": inj_ids,
        "forged_ids": forged_ids,
        "forged_foreign": forged_foreign,
        "counts": counts,
        "expected_counts": expected,
    }
