"""The Python API and the config file build the same tools: same declarations, same results."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from scopegate.adapters.adk import AdkTool
from scopegate.backends.embedded import EmbeddedBackend
from scopegate.config import build_app, declarations, load_config
from scopegate.context import CallContext
from scopegate.demo.corpus import INJECTION_ID, INJECTION_TENANT, generate_tickets, ticket_spec
from scopegate.guard import CallCap, CapPolicy, Guard, GuardMetrics, MemoryStore, ToolCache
from scopegate.scope import ScopeKeys
from scopegate.search.spec import SearchSpec, spec_to_dict
from scopegate.search.tools import FetchTool, SearchTool
from scopegate.tools import ScopedTool

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "scopegate.yaml"

CALLS: list[tuple[str, dict[str, Any]]] = [
    ("search_tickets", {"query": "apple pay refund failed", "product": "payments"}),
    ("search_tickets", {"query": "E4012", "page": 2}),
    ("search_tickets", {"query": "payout", "status": "open", "product": "payouts"}),
    ("search_tickets", {"query": "tenant_id:* OR tenant_id:acme refund"}),
    ("search_tickets", {"query": "refund", "product": "crypto"}),
    ("search_tickets", {"query": "refund", "tenant_id": "globex"}),
    ("search_tickets", {"query": ""}),
    ("search_tickets", {"query": "refund", "page": 99}),
    ("get_ticket", {"id": "ACM-00001"}),
    ("get_ticket", {"id": "GLO-00001"}),
    ("get_ticket", {"id": INJECTION_ID}),
    ("get_ticket", {"id": "../../etc/passwd"}),
]


def spec_config(spec: SearchSpec, backend: str = "local") -> dict[str, Any]:
    """The search_tools entry that describes ``spec`` (what a user would write)."""
    data = spec_to_dict(spec)
    data.pop("scope_keys")
    data["group_field"] = data["group_field"] or None
    return {"backend": backend, **{k: v for k, v in data.items() if v is not None}}


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("parity") / "data"
    backend = EmbeddedBackend(ticket_spec(), folder / "tickets")
    backend.ingest_sync(generate_tickets(per_tenant=60), batch_size=500)
    return folder


@pytest.fixture
def config_path(data_dir: Path, tmp_path: Path) -> Callable[..., Path]:
    def make(**extra: Any) -> Path:
        data = {
            "version": 1,
            "backends": {"local": {"type": "embedded", "path": str(data_dir)}},
            "search_tools": [spec_config(ticket_spec())],
            **extra,
        }
        path = tmp_path / "scopegate.yaml"
        path.write_text(yaml.safe_dump(data, sort_keys=False), "utf-8")
        return path

    return make


def python_tools(data_dir: Path) -> tuple[list[ScopedTool], EmbeddedBackend]:
    backend = EmbeddedBackend(ticket_spec(), data_dir / "tickets")
    return [SearchTool(backend.spec, backend), FetchTool(backend.spec, backend)], backend


def adk_declarations(tools: list[Any]) -> list[dict[str, Any]]:
    """What ADK sends the model for each tool (AdkTool objects are used as they are)."""
    adk = [t if isinstance(t, AdkTool) else AdkTool(t) for t in tools]
    return [t._get_declaration().model_dump(exclude_none=True) for t in adk]


async def run_all(tools: list[ScopedTool], tenant: str, invocation: str | None = None) -> list[dict[str, Any]]:
    by_name = {t.name: t for t in tools}
    ctx = CallContext(state={"tenant_id": tenant}, invocation_id=invocation)
    return [(await by_name[name].run(args, ctx)).result for name, args in CALLS]


def test_config_spec_equals_python_spec(config_path: Callable[..., Path]) -> None:
    config = load_config(config_path(), environ={})
    assert config.search_tools[0].spec == ticket_spec()


def test_example_config_is_the_demo_spec() -> None:
    config = load_config(EXAMPLE, environ={})
    assert config.search_tools[0].spec == dataclasses.replace(
        ticket_spec(), scope_keys=ScopeKeys(tenant="tenant_id", user="user_id")
    )


async def test_same_declarations_and_results(config_path: Callable[..., Path], data_dir: Path) -> None:
    app = await build_app(load_config(config_path(guards={"enabled": False}), environ={}))
    py_tools, py_backend = python_tools(data_dir)
    try:
        assert adk_declarations(app.raw_tools) == adk_declarations(py_tools)
        assert adk_declarations(app.adk_tools()) == adk_declarations([AdkTool(t) for t in py_tools])
        assert declarations(app.tools) == declarations(py_tools)
        for tenant in ("acme", INJECTION_TENANT):
            from_config = await run_all(app.tools, tenant)
            from_python = await run_all(py_tools, tenant)
            assert from_config == from_python
            assert any(r["status"] == "ok" for r in from_config)
            assert any(r["status"] == "error" for r in from_config)
    finally:
        await app.aclose()
        await py_backend.close()


async def test_same_results_through_guards(config_path: Callable[..., Path], data_dir: Path) -> None:
    guards = {"cap": {"families": {"search": 5}}, "cache": {"ttl_s": 60, "max_entries": 100}, "call_timeout_s": 5}
    app = await build_app(load_config(config_path(guards=guards), environ={}))
    py_raw, py_backend = python_tools(data_dir)
    guard = Guard(
        cap=CallCap(CapPolicy(family_limits={"search": 5})),
        cache=ToolCache(MemoryStore(max_entries=100), ttl_s=60),
        metrics=GuardMetrics(),
        call_timeout_s=5,
    )
    py_tools: list[ScopedTool] = [guard.wrap(t) for t in py_raw]
    try:
        assert declarations(app.tools) == declarations(py_tools)
        from_config = await run_all(app.tools, "acme", invocation="turn-1")
        from_python = await run_all(py_tools, "acme", invocation="turn-1")
        assert from_config == from_python
        # The cap of 5 search-family calls per invocation applies identically; fetches are another family.
        searches = [r for (name, _), r in zip(CALLS, from_config, strict=True) if name == "search_tickets"]
        fetches = [r for (name, _), r in zip(CALLS, from_config, strict=True) if name == "get_ticket"]
        assert [r.get("error_code") for r in searches[5:]] == ["CALL_LIMIT"] * (len(searches) - 5)
        assert fetches and all(r.get("error_code") != "CALL_LIMIT" for r in fetches)
    finally:
        await app.aclose()
        await guard.aclose()
        await py_backend.close()


async def test_offline_build_opens_nothing(tmp_path: Path) -> None:
    data = {
        "version": 1,
        "backends": {"local": {"type": "embedded", "path": str(tmp_path / "nowhere")}},
        "search_tools": [spec_config(ticket_spec())],
    }
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(data), "utf-8")
    app = await build_app(load_config(path, environ={}), offline=True)
    try:
        assert [d["name"] for d in declarations(app.tools)] == ["search_tickets", "get_ticket"]
        assert not (tmp_path / "nowhere").exists()
    finally:
        await app.aclose()


async def test_fetch_can_be_switched_off(config_path: Callable[..., Path], tmp_path: Path) -> None:
    path = config_path()
    data = yaml.safe_load(path.read_text("utf-8"))
    data["search_tools"][0]["fetch"] = False
    path.write_text(yaml.safe_dump(data), "utf-8")
    app = await build_app(load_config(path, environ={}), offline=True)
    try:
        assert app.names() == ["search_tickets"]
    finally:
        await app.aclose()


@pytest.mark.parametrize(
    ("backend", "cls_path"),
    [
        (
            {"type": "opensearch", "url": "https://127.0.0.1:9", "username": "u", "password": "p"},
            "scopegate.backends.opensearch.OpenSearchBackend",
        ),
        (
            {"type": "elasticsearch", "url": ["http://127.0.0.1:9", "http://127.0.0.1:10"], "api_key": "k"},
            "scopegate.backends.elasticsearch.ElasticsearchBackend",
        ),
    ],
)
async def test_remote_backends_build_the_engine_classes(tmp_path: Path, backend: dict[str, Any], cls_path: str) -> None:
    """Nothing is contacted at build time; the tools are the same as over the embedded engine."""
    import importlib

    module_name, _, cls_name = cls_path.rpartition(".")
    cls = getattr(importlib.import_module(module_name), cls_name)
    data = {"version": 1, "backends": {"remote": backend}, "search_tools": [spec_config(ticket_spec(), "remote")]}
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(data), "utf-8")
    app = await build_app(load_config(path, environ={}), guard=None)
    try:
        assert isinstance(app.backends[0], cls)
        assert app.backends[0].spec == ticket_spec()
        offline = await build_app(load_config(path, environ={}), offline=True, guard=None)
        assert declarations(app.tools) == declarations(offline.tools)
        await offline.aclose()
    finally:
        await app.aclose()


def test_remote_backend_auth_problems(tmp_path: Path) -> None:
    from scopegate.config.loader import ConfigValidationError

    data = {
        "version": 1,
        "backends": {"r": {"type": "opensearch", "url": "http://h:9200", "api_key": "k", "username": "u"}},
        "search_tools": [spec_config(ticket_spec(), "r")],
    }
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(data), "utf-8")
    with pytest.raises(ConfigValidationError) as info:
        load_config(path, environ={})
    found = {p.path: p.message for p in info.value.problems}
    assert found["backends.r"].startswith("username and password") or "either api_key" in str(info.value)
    assert "backends.r.api_key" in found


async def test_rate_limit_and_call_log_from_config(config_path: Callable[..., Path], tmp_path: Path) -> None:
    guards = {"rate_limit": {"rate": 0.001, "burst": 2}, "log": {"path": str(tmp_path / "calls.jsonl")}}
    app = await build_app(load_config(config_path(guards=guards), environ={}))
    try:
        ctx = CallContext(state={"tenant_id": "acme"}, invocation_id="t1")
        codes = [
            ((await app.tool("search_tickets").run({"query": f"refund {i}"}, ctx)).result).get("error_code")
            for i in range(3)
        ]
        assert codes == [None, None, "RATE_LIMITED"]
        other = (
            await app.tool("search_tickets").run({"query": "refund"}, CallContext(state={"tenant_id": "globex"}))
        ).result
        assert other["status"] == "ok"  # the bucket is per tenant
        app.guard.call_log.flush()
        lines = (tmp_path / "calls.jsonl").read_text("utf-8").splitlines()
        assert len(lines) == 4
    finally:
        await app.aclose()
