"""scopegate has no import circles (issue 10: openapi/loader.py <-> swagger2.py and config/builder.py <->
config/openapi.py were two; cli/engines.py <-> engines/*_node.py, through the nodes' ``main``, a third), and
its packages only import downward, floor by floor as the architecture page draws them (issue 34).

Every import counts: module level, inside functions and under ``TYPE_CHECKING``. A circle hidden
behind a lazy or type-only import is still two modules that each need the other.
"""

from __future__ import annotations

import ast
from pathlib import Path

import scopegate

SRC = Path(scopegate.__file__).resolve().parent.parent


def _modules(package: str) -> dict[str, Path]:
    found: dict[str, Path] = {}
    root = SRC / package.replace(".", "/")
    # Compiled extensions count too: their stubs (.pyi without a .py) stand for them.
    stubs = [p for p in root.rglob("*.pyi") if not p.with_suffix(".py").exists()]
    for path in [*root.rglob("*.py"), *stubs]:
        parts = path.relative_to(SRC).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def _imported(module: str, path: Path, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def import_graph(package: str) -> dict[str, set[str]]:
    """Module -> the modules of ``package`` it imports (a submodule's own ancestors left out: they
    always run first, which is not a dependency of the submodule's making)."""
    modules = _modules(package)
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _imported(name, path, node)
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    targets.append(sub if sub in modules else base)
            for target in targets:
                if target in modules and target != name and not name.startswith(target + "."):
                    graph[name].add(target)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in graph:
        if start in index:
            continue
        work: list[tuple[str, list[str]]] = [(start, sorted(graph[start]))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, todo = work[-1]
            if todo:
                nxt = todo.pop()
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, sorted(graph[nxt])))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_checker_finds_a_circle_through_a_type_only_import() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_checker_sees_the_package_imports() -> None:
    graph = import_graph("scopegate.openapi")
    assert "scopegate.openapi.swagger2" in graph["scopegate.openapi.loader"]
    assert "scopegate.openapi.model" in graph["scopegate.openapi.swagger2"]


def test_no_import_circle_in_the_openapi_package() -> None:
    assert cycles(import_graph("scopegate.openapi")) == []


def test_no_import_circle_anywhere_in_scopegate() -> None:
    assert cycles(import_graph("scopegate")) == []


# The floors, bottom first. A module may import its own package and any package of its floor or below;
# packages of one floor may use each other (no module circle, checked above).
FLOORS: tuple[tuple[str, ...], ...] = (
    ("errors", "context", "scope", "tools", "files", "documents", "validation", "extras"),  # the core
    ("search", "backends", "vector", "openapi", "text", "declarations"),  # specs, builders, shapers, engines
    ("guard", "apptools", "dashboard"),  # operations around any tool
    ("config", "identity", "ingest", "relevance"),  # assembly: config -> objects, identity, data in
    ("adapters", "server", "examples", "testing"),  # serving: ADK, MCP, the demo's service, the scripted model
    ("demo", "evals", "cli", "engines", "adk", "mcp", ""),  # entry points and front doors ("": the root)
)
# Known upward imports, each with its reason and its end.
EXEMPT = {
    ("scopegate.config.builder", "scopegate.adapters.adk"): "ToolApp.adk_tools(), deprecated, goes in 0.3",
    ("scopegate.config.builder", "scopegate.adapters.adk_scope"): "ToolApp.adk_tools(), deprecated, goes in 0.3",
}


def floor_of(module: str) -> int:
    package = module.split(".")[1] if module.count(".") else ""
    for level, packages in enumerate(FLOORS):
        if package in packages:
            return level
    raise AssertionError(f"{module} is on no floor: add its package to FLOORS (and to the architecture page)")


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    found = []
    for module, targets in graph.items():
        if module.endswith(".__main__"):  # ``python -m`` entry points sit above everything
            continue
        for target in targets:
            if floor_of(target) > floor_of(module) and (module, target) not in EXEMPT:
                found.append(f"{module} -> {target}")
    return sorted(found)


def test_the_layer_checker_finds_an_upward_import() -> None:
    graph = {"scopegate.search.spec": {"scopegate.server.serve"}, "scopegate.cli.core": {"scopegate.errors"}}
    assert upward_imports(graph) == ["scopegate.search.spec -> scopegate.server.serve"]


def test_every_package_imports_only_downward() -> None:
    graph = import_graph("scopegate")
    assert {floor_of(m) for m in graph} == set(range(len(FLOORS)))  # every module placed, every floor used
    assert upward_imports(graph) == []
    assert all(target in graph[module] for module, target in EXEMPT), "an exemption is stale: remove it"
