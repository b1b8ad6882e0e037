"""The ``scopegate`` command line: a thin shell over the library.

Every subcommand has help text; ``tests/unit/test_cli.py`` checks it.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import sys
from pathlib import Path
from typing import Any

from scopegate.errors import ScopegateError

# Subcommand groups that live next to the code they drive. Each exposes add_commands(subparsers).
COMMAND_MODULES = (
    "scopegate.engines.cli",
    "scopegate.openapi.cli",
    "scopegate.guard.cli",
    "scopegate.server.cli",
)


def _load_spec(path: str | None) -> Any:
    from scopegate.demo.corpus import ticket_spec
    from scopegate.search.spec import spec_from_dict

    if path is None:
        return ticket_spec()
    text = Path(path).read_text("utf-8")
    if path.endswith((".yaml", ".yml")):
        import yaml

        data = yaml.safe_load(text)
    else:
        data = json.loads(text)
    return spec_from_dict(data)


def _cmd_demo(args: argparse.Namespace) -> int:
    from scopegate.demo.__main__ import main as demo_main

    return demo_main([args.workdir] if args.workdir else [])


def _cmd_ingest(args: argparse.Namespace) -> int:
    from scopegate.backends.embedded import EmbeddedBackend
    from scopegate.ingest.mapping import FieldMapping
    from scopegate.ingest.run import ingest_path

    spec = _load_spec(args.spec)
    backend = EmbeddedBackend(spec, args.index)
    mapping = FieldMapping.parse(args.map or [])
    report = asyncio.run(
        ingest_path(backend, args.file, mapping, fmt=args.format, batch_size=args.batch_size, progress=not args.quiet)
    )
    print(
        json.dumps(
            {
                "indexed": report.indexed,
                "failed": report.failed,
                "commits": report.commits,
                "seconds": round(report.seconds, 3),
                "docs_per_second": round(report.docs_per_second),
                "errors": report.errors[:20],
            },
            indent=2,
        )
    )
    return 0 if report.failed == 0 or args.allow_errors else 1


def _state(args: argparse.Namespace) -> dict[str, Any]:
    state: dict[str, Any] = {"tenant_id": args.tenant}
    if args.groups:
        state["group_ids"] = args.groups.split(",")
    return state


def _run_tool(index: str, tool_kind: str, tool_args: dict[str, Any], args: argparse.Namespace) -> int:
    """Call the search or fetch tool on an embedded index as a model would, in the given scope."""
    from scopegate.backends.embedded import EmbeddedBackend
    from scopegate.context import CallContext
    from scopegate.search.tools import FetchTool, SearchTool

    backend = EmbeddedBackend.open(index)
    tool = SearchTool(backend.spec, backend) if tool_kind == "search" else FetchTool(backend.spec, backend)
    result = asyncio.run(tool.run(tool_args, CallContext(state=_state(args))))
    print(json.dumps(result, indent=2, ensure_ascii=False))
    return 0 if result.get("status") == "ok" else 2


def _cmd_search(args: argparse.Namespace) -> int:
    tool_args: dict[str, Any] = {"query": args.query, "page": args.page}
    for pair in args.filter or []:
        name, _, value = pair.partition("=")
        tool_args[name] = value
    return _run_tool(args.index, "search", tool_args, args)


def _cmd_get(args: argparse.Namespace) -> int:
    return _run_tool(args.index, "fetch", {"id": args.id}, args)


def _cmd_spec(args: argparse.Namespace) -> int:
    from scopegate.search.spec import spec_to_dict

    spec = _load_spec(args.spec)
    print(
        json.dumps(
            {"search": spec.json_schema(), "fetch": spec.fetch_json_schema(), "spec": spec_to_dict(spec)}, indent=2
        )
    )
    return 0


def _add_scope_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--tenant", required=True, help="tenant id of the session (the operator's choice, never the model's)"
    )
    p.add_argument("--groups", help="comma-separated group ids of the session")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="scopegate", description="Safe, typed, tenant-scoped tools for LLM agents.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser(
        "demo",
        help="run the worked example on the embedded engine",
        description="Generate a "
        "multi-tenant ticket corpus, index it and run the scripted ADK agent (what `make demo` runs).",
    )
    p.add_argument("--workdir", help="folder for the corpus and index (default: a new temporary folder)")
    p.set_defaults(func=_cmd_demo)

    p = sub.add_parser(
        "ingest",
        help="ingest JSONL or CSV into an embedded index",
        description="Upsert records by id into an embedded (tantivy) index folder, in batched atomic commits.",
    )
    p.add_argument("index", help="index folder (created if missing)")
    p.add_argument("file", help="JSONL or CSV file")
    p.add_argument("--spec", help="search spec file (JSON or YAML); default: the demo ticket spec")
    p.add_argument(
        "--map",
        action="append",
        metavar="FIELD=COLUMN",
        help="map a spec field to a source column; "
        "id=, tenant= and groups= name the id, tenant and group columns (repeatable)",
    )
    p.add_argument("--format", choices=["jsonl", "csv"], help="input format (default: from the file suffix)")
    p.add_argument("--batch-size", type=int, default=10_000, help="documents per commit (default 10000)")
    p.add_argument("--allow-errors", action="store_true", help="exit 0 even when some records were rejected")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=_cmd_ingest)

    p = sub.add_parser(
        "search",
        help="run the search tool against an embedded index",
        description="Call the search tool as a model would, inside one tenant's scope, and print the shaped result.",
    )
    p.add_argument("index", help="index folder made by `scopegate ingest`")
    p.add_argument("query", help="keywords")
    p.add_argument("--filter", action="append", metavar="NAME=VALUE", help="an enumerated filter (repeatable)")
    p.add_argument("--page", type=int, default=1, help="result page (default 1)")
    _add_scope_args(p)
    p.set_defaults(func=_cmd_search)

    p = sub.add_parser(
        "get",
        help="fetch one document by id inside a tenant's scope",
        description="Call the fetch-by-id tool; out-of-scope and absent ids both give NOT_FOUND.",
    )
    p.add_argument("index", help="index folder made by `scopegate ingest`")
    p.add_argument("id", help="document id")
    _add_scope_args(p)
    p.set_defaults(func=_cmd_get)

    p = sub.add_parser(
        "spec",
        help="print the declarations a search spec produces",
        description="Print the JSON schemas the model sees for the search and fetch tools, and the normalised spec.",
    )
    p.add_argument("--spec", help="search spec file (JSON or YAML); default: the demo ticket spec")
    p.set_defaults(func=_cmd_spec)

    for module_name in COMMAND_MODULES:
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            if exc.name and module_name.startswith(exc.name):
                continue  # that part of scopegate is not present
            raise
        module.add_commands(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args))
    except ScopegateError as exc:
        print(f"scopegate: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
