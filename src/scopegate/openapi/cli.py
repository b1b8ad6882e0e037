"""``scopegate openapi ...``: review declarations, check them against a snapshot, list operations.

    scopegate openapi inventory SPEC
    scopegate openapi declarations SPEC --allow issues/get --allow "GET /user" [--prefix gh_]
    scopegate openapi declarations SPEC --allow ... --check tools.snapshot.json

Exit codes: 0 ok, 1 snapshot differs, 2 bad spec / allowlist / arguments.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from scopegate.errors import ScopegateError

EXIT_OK = 0
EXIT_DIFF = 1
EXIT_CONFIG = 2


def add_commands(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    group = subparsers.add_parser(
        "openapi",
        help="turn an OpenAPI spec into reviewed tool declarations",
        description="Inspect an OpenAPI/Swagger spec and print or check the tool declarations a model would see.",
    )
    sub = group.add_subparsers(dest="openapi_command", metavar="COMMAND")
    group.set_defaults(func=lambda args: _usage(group))

    p = sub.add_parser(
        "declarations",
        help="print the declarations for allowlisted operations as stable JSON",
        description="Load SPEC, select operations, translate them and print sorted JSON for code review. "
        "With --check, compare with a stored snapshot and exit 1 with a diff when they differ.",
    )
    _spec_args(p)
    p.add_argument(
        "--allow",
        action="append",
        default=[],
        metavar="OP",
        help="operationId or 'METHOD /path' to expose (repeatable; operationIds may be comma-separated)",
    )
    p.add_argument(
        "--include",
        action="append",
        default=[],
        metavar="RULE",
        help="rule selecting read-only operations, e.g. 'GET /repos/**' or 'tag:issues' (repeatable)",
    )
    p.add_argument(
        "--exclude", action="append", default=[], metavar="RULE", help="rule removing operations (repeatable)"
    )
    p.add_argument("--prefix", default="", help="prefix for every tool name (counts towards 64 characters)")
    p.add_argument(
        "--form",
        choices=["review", "jsonschema", "function"],
        default="review",
        help="review: declarations + argument map (default); jsonschema: JSON Schema 2020-12 per tool; "
        "function: google.genai FunctionDeclaration dicts",
    )
    p.add_argument("--check", metavar="SNAPSHOT", type=Path, help="compare with this snapshot file instead of printing")
    p.add_argument("--write", metavar="SNAPSHOT", type=Path, help="also write the review JSON to this file")
    p.set_defaults(func=_cmd_declarations)

    p = sub.add_parser(
        "inventory",
        help="list every operation: method, path, operationId, state-changing, translatable",
        description="Print a table of every operation in SPEC so you can choose an allowlist. "
        "Each operation is resolved and translated; failures show the reason.",
    )
    _spec_args(p)
    p.add_argument("--format", choices=["table", "json"], default="table", help="output format (default table)")
    p.set_defaults(func=_cmd_inventory)


def _spec_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("spec", metavar="SPEC", help="OpenAPI 3.x or Swagger 2.0 file (JSON or YAML)")
    p.add_argument(
        "--allow-external-refs",
        action="store_true",
        help="resolve $ref to files next to the spec (never remote URLs)",
    )


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return EXIT_CONFIG


def _fail(exc: BaseException) -> int:
    print(f"scopegate openapi: error: {exc}", file=sys.stderr)
    return EXIT_CONFIG


def _cmd_declarations(args: argparse.Namespace) -> int:
    from scopegate.openapi.loader import load_document
    from scopegate.openapi.select import Selection, select_operations
    from scopegate.openapi.snapshot import check_file, dumps, snapshot_document
    from scopegate.openapi.translate import TranslateOptions, translate

    if not args.allow and not args.include:
        return _fail(ValueError("give at least one --allow or --include"))
    try:
        doc = load_document(Path(args.spec), allow_external_refs=args.allow_external_refs)
        selection = Selection.build(allow=args.allow, include=args.include, exclude=args.exclude)
        chosen = select_operations(doc.infos(), selection)
        translation = translate(doc, chosen, TranslateOptions(prefix=args.prefix))
        document = snapshot_document(translation, title=doc.title, version=doc.version)
        if args.check is not None:
            result = check_file(args.check, document)
            if result.ok:
                print(f"ok: {len(translation.tools)} declaration(s) match {args.check}")
                return EXIT_OK
            print(f"declarations differ from {args.check}:", file=sys.stderr)
            for line in result.summary:
                print(f"  - {line}", file=sys.stderr)
            print(result.diff, file=sys.stderr, end="" if result.diff.endswith("\n") else "\n")
            return EXIT_DIFF
    except (ScopegateError, ValueError) as exc:
        return _fail(exc)
    output: Any
    if args.form == "jsonschema":
        output = {t.name: t.json_schema() for t in translation.tools}
    elif args.form == "function":
        output = [t.function_declaration().model_dump(exclude_none=True, mode="json") for t in translation.tools]
    else:
        output = document
    text = dumps(output)
    if args.write is not None:
        try:
            args.write.write_text(dumps(document), "utf-8")
        except OSError as exc:
            return _fail(exc)
    sys.stdout.write(text)
    return EXIT_OK


def inventory_rows(doc: Any) -> list[dict[str, Any]]:
    """One row per operation, translating each on its own so one failure does not hide the rest."""
    from scopegate.openapi.naming import tool_names
    from scopegate.openapi.translate import translate_operation

    infos = doc.infos()
    names = tool_names(infos)
    rows: list[dict[str, Any]] = []
    for info in infos:
        reason = ""
        try:
            translate_operation(doc.operation(info), names[info.key], security_schemes=doc.security_schemes)
        except ScopegateError as exc:
            reason = str(exc)
        except (RecursionError, TypeError, ValueError, KeyError) as exc:
            reason = f"{type(exc).__name__}: {exc}"
        rows.append(
            {
                "method": info.method,
                "path": info.path,
                "operation_id": info.operation_id or "",
                "tool": names[info.key],
                "state_changing": info.state_changing,
                "deprecated": info.deprecated,
                "translatable": not reason,
                "reason": reason,
            }
        )
    return rows


def _cmd_inventory(args: argparse.Namespace) -> int:
    from scopegate.openapi.loader import load_document

    try:
        doc = load_document(Path(args.spec), allow_external_refs=args.allow_external_refs)
        rows = inventory_rows(doc)
    except ScopegateError as exc:
        return _fail(exc)
    if args.format == "json":
        sys.stdout.write(json.dumps(rows, indent=2, ensure_ascii=False) + "\n")
        return EXIT_OK
    headers = ("METHOD", "PATH", "OPERATION_ID", "STATE_CHANGING", "TRANSLATABLE")
    table = [
        (
            r["method"],
            r["path"],
            r["operation_id"] or "-",
            "yes" if r["state_changing"] else "no",
            "yes" if r["translatable"] else f"no: {r['reason']}",
        )
        for r in rows
    ]
    widths = [max([len(h)] + [len(row[i]) for row in table]) for i, h in enumerate(headers[:-1])]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers[:-1], widths, strict=True)) + "  " + headers[-1]]
    for row in table:
        lines.append("  ".join(c.ljust(w) for c, w in zip(row[:-1], widths, strict=True)) + "  " + row[-1])
    ok = sum(1 for r in rows if r["translatable"])
    lines.append(
        f"{len(rows)} operation(s), {ok} translatable, {sum(r['state_changing'] for r in rows)} state-changing"
    )
    sys.stdout.write("\n".join(lines) + "\n")
    return EXIT_OK
