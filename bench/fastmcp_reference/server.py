"""FastMCP over an OpenAPI spec with its BM25 tool-search transform, on stdio (the peer reference row).

Runs in its own venv (FastMCP is not a scopegate dependency)::

    /work/venvs/fastmcp/bin/python bench/fastmcp_reference/server.py SPEC BASE_URL (--allow opA,opB | --names
        names.json) [--header X-Staff-Key --header-env FASTMCP_REF_KEY]

The spec is cut to the allowlisted operations (the same ones scopegate's toolset allows), every
operation becomes a tool (FastMCP's default route map), the service credential goes in a header of
the HTTP client, and ``BM25SearchTransform`` replaces the listing with ``search_tools`` and
``call_tool``. Nothing else is configured: FastMCP has no per-session scope binding, ownership rule,
confirmation step or response bound to configure here.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

TIMEOUT_S = 10.0
METHODS = ("get", "put", "post", "delete", "patch", "head", "options", "trace")


def allowed_spec(spec: dict[str, Any], allow: set[str]) -> dict[str, Any]:
    """The spec with only the allowlisted operations (paths left without one are dropped)."""
    paths: dict[str, Any] = {}
    for path, item in spec.get("paths", {}).items():
        kept = {k: v for k, v in item.items() if k not in METHODS or v.get("operationId") in allow}
        if any(k in METHODS for k in kept):
            paths[path] = kept
    missing = allow - {op.get("operationId") for item in paths.values() for k, op in item.items() if k in METHODS}
    if missing:
        raise SystemExit(f"allowlisted operations not in the spec: {sorted(missing)}")
    return {**spec, "paths": paths}


def main() -> None:
    import httpx2
    from fastmcp import FastMCP
    from fastmcp.server.transforms.search import BM25SearchTransform

    parser = argparse.ArgumentParser()
    parser.add_argument("spec", type=Path)
    parser.add_argument("base_url")
    parser.add_argument("--allow", default=None, help="comma-separated operationIds (default: the --names keys)")
    parser.add_argument("--header", default=None, help="credential header name")
    parser.add_argument("--header-env", default="FASTMCP_REF_KEY", help="env var holding its value")
    parser.add_argument("--names", type=Path, default=None, help="JSON {operationId: tool name} (FastMCP mcp_names)")
    parser.add_argument("--max-results", type=int, default=5)
    args = parser.parse_args()
    names = json.loads(args.names.read_text("utf-8")) if args.names else None
    if args.allow is None and names is None:
        raise SystemExit("give --allow or --names")
    allow = set(args.allow.split(",")) if args.allow is not None else set(names or {})  # ids may hold commas
    spec = allowed_spec(json.loads(args.spec.read_text("utf-8")), allow)
    headers = {args.header: os.environ[args.header_env]} if args.header else {}
    client = httpx2.AsyncClient(base_url=args.base_url, headers=headers, timeout=TIMEOUT_S)
    mcp = FastMCP.from_openapi(spec, client=client, name="fastmcp-reference", mcp_names=names)
    mcp.add_transform(BM25SearchTransform(max_results=args.max_results))
    mcp.run(transport="stdio", show_banner=False)


if __name__ == "__main__":
    main()
