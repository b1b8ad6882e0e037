"""The wheel is the product: what ships is what users import and run, never the lab (issue 34).

The package tree under src/ is what setuptools puts in the wheel (tests/e2e/release checks the built
wheel itself); this fast check keeps test and benchmark machinery out of it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import scopegate

PACKAGE = Path(scopegate.__file__).resolve().parent
# Every subpackage the product ships, with what it is for (the architecture page has the same list).
SHIPPED = {
    "adapters": "Google ADK tools, toolset and plugins",
    "apptools": "hand-written tools and their decorator",
    "backends": "embedded tantivy, OpenSearch, Elasticsearch",
    "cli": "the scopegate command",
    "config": "the config file: model, loader, builder",
    "dashboard": "the call-log web view",
    "declarations": "declarations as Gemini, OpenAI strict, Anthropic and MCP take them; scopegate check --profile",
    "demo": "scopegate demo and serve --demo-data",
    "engines": "scopegate engine opensearch|elasticsearch: a local node without Docker",
    "evals": "scopegate eval",
    "examples": "the demo's orders service",
    "guard": "call cap, cache, call log, replay, metrics",
    "identity": "token verification, signed scope, per-user credentials",
    "ingest": "CSV/JSONL into an index",
    "openapi": "OpenAPI toolsets",
    "relevance": "the relevance harness behind scopegate's own figures (eval extra)",
    "search": "the search spec, query builders, shaper, tools",
    "server": "the MCP server",
    "testing": "the scripted model for end-to-end tests of your own agents",
    "vector": "embedders and vector retrieval (vector extra)",
}
# Names of the lab's modules: none may reappear in the product.
LAB = {
    "oracle", "agg_oracle", "backend_contract", "consistency", "encoders", "keycloak", "load", "openapi_synth",
    "openapi_oracle", "workload", "hostile", "keycloak_node", "keycloak_realm", "cluster",
}  # fmt: skip
TEST_ONLY_IMPORTS = ("pytest", "hypothesis", "syrupy", "scopegate_lab", "openapi_core", "rstr", "psutil")


def test_the_package_ships_only_the_product() -> None:
    subpackages = {p.name for p in PACKAGE.iterdir() if p.is_dir() and any(p.glob("*.py"))}
    assert subpackages == set(SHIPPED)
    modules = {p.stem for p in PACKAGE.rglob("*.py")} | {p.name for p in PACKAGE.rglob("*") if p.is_dir()}
    assert modules & LAB == set()
    assert {p.stem for p in (PACKAGE / "testing").glob("*.py")} == {"__init__", "scripted_llm"}


def test_no_product_module_imports_test_machinery() -> None:
    found = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            found += [f"{path.relative_to(PACKAGE)}: {n}" for n in names if n.split(".")[0] in TEST_ONLY_IMPORTS]
    assert found == []
