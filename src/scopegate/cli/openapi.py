"""``scopegate openapi inventory|declarations``: review what a model would be told, gate it in CI.

    scopegate openapi inventory SPEC
    scopegate openapi declarations SPEC --allow issues/get --allow "GET /user" [--prefix gh_]
    scopegate openapi declarations SPEC --allow ... --check tools.snapshot.json
    scopegate openapi inventory SPEC --allow-external-refs --strict   # a multi-file spec's root; exit 2 on a loss

Exit codes: 0 ok, 1 the declarations differ from the snapshot, 2 a spec, selection or argument that does not
load (scopegate.cli.core.ExitCode).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from scopegate.cli.core import ExitCode, Group, usage_errors


@click.group(cls=Group, short_help="Turn an OpenAPI spec into reviewed tool declarations.")
def openapi() -> None:
    """Inspect an OpenAPI/Swagger spec and print or check the tool declarations a model would see."""


def _spec_args(command: Callable[..., Any]) -> Callable[..., Any]:
    command = click.option(
        "--strict", is_flag=True, help="Fail on any input a tool would not carry (inventory lists them)."
    )(command)
    command = click.option(
        "--allow-external-refs",
        is_flag=True,
        help="Resolve $ref to files in the spec's folder (never outside it, never remote URLs).",
    )(command)
    return click.argument("spec", metavar="SPEC", type=click.Path(dir_okay=False, path_type=Path))(command)


@openapi.command(short_help="Print the declarations for allowlisted operations as stable JSON.")
@_spec_args
@click.option(
    "--allow",
    multiple=True,
    metavar="OP",
    help="OperationId or 'METHOD /path' to expose (repeatable; operationIds may be comma-separated).",
)
@click.option(
    "--include",
    multiple=True,
    metavar="RULE",
    help="Rule selecting read-only operations, e.g. 'GET /repos/**' or 'tag:issues' (repeatable).",
)
@click.option("--exclude", multiple=True, metavar="RULE", help="Rule removing operations (repeatable).")
@click.option("--prefix", default="", help="Prefix for every tool name (counts towards 64 characters).")
@click.option("--include-deprecated", is_flag=True, help="Let --include rules select deprecated operations too.")
@click.option(
    "--form",
    type=click.Choice(["review", "jsonschema", "function"]),
    default="review",
    help="review: declarations + argument map (default); jsonschema: JSON Schema 2020-12 per tool; "
    "function: google.genai FunctionDeclaration dicts.",
)
@click.option(
    "--check",
    "snapshot",
    metavar="SNAPSHOT",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Compare with this snapshot file instead of printing (exit 1 with a diff when they differ).",
)
@click.option(
    "--write",
    metavar="SNAPSHOT",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Also write the review JSON to this file.",
)
def declarations(
    spec: Path,
    allow_external_refs: bool,
    strict: bool,
    allow: tuple[str, ...],
    include: tuple[str, ...],
    exclude: tuple[str, ...],
    prefix: str,
    include_deprecated: bool,
    form: Any,
    snapshot: Path | None,
    write: Path | None,
) -> int:
    """Load SPEC (OpenAPI 3.x or Swagger 2.0, JSON or YAML), select operations, translate them and print
    sorted JSON for code review. With --check, compare with a stored snapshot and exit 1 with a diff when
    they differ."""
    from scopegate.openapi.review import build_review

    if not allow and not include:
        raise click.UsageError("give at least one --allow or --include")
    with usage_errors():
        selection: dict[str, Any] = {"allow": allow, "include": include, "exclude": exclude}
        options: dict[str, Any] = {"prefix": prefix, "include_deprecated": include_deprecated, "strict": strict}
        review = build_review(spec, allow_external_refs=allow_external_refs, **selection, **options)
        result = review.check(snapshot) if snapshot is not None else None
    if result is not None:
        if result.ok:
            click.echo(f"ok: {len(review.translation.tools)} declaration(s) match {snapshot}")
            return ExitCode.OK
        lines = [f"declarations differ from {snapshot}:", *(f"  - {line}" for line in result.summary)]
        click.echo("\n".join(lines), err=True)
        click.echo(result.diff, err=True, nl=not result.diff.endswith("\n"))
        return ExitCode.FAILURE
    text = review.render(form)
    if write is not None:
        with usage_errors("--write", OSError):
            review.write(write)
    click.echo(text, nl=False)
    return ExitCode.OK


@openapi.command(short_help="List every operation: method, path, operationId, state-changing, translatable.")
@_spec_args
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "json"]),
    default="table",
    help="Output format (default table); json: {operations: [...], problems: [...]}.",
)
def inventory(spec: Path, allow_external_refs: bool, strict: bool, fmt: str) -> int:
    """Print a table of every operation in SPEC (OpenAPI 3.x or Swagger 2.0, JSON or YAML; the root file of a
    multi-file spec) so you can choose an allowlist. Each operation is resolved and translated; failures show
    the reason, and every input a tool would not carry is listed with why. With --strict, such an input fails
    its operation and the command exits 2."""
    from scopegate.openapi.inventory import inventory as build_inventory
    from scopegate.openapi.inventory import render_table
    from scopegate.openapi.loader import load_document
    from scopegate.openapi.translate import TranslateOptions

    with usage_errors():
        inv = build_inventory(
            load_document(spec, allow_external_refs=allow_external_refs), TranslateOptions(strict=strict)
        )
    text = json.dumps(inv.to_dict(), indent=2, ensure_ascii=False) if fmt == "json" else render_table(inv)
    click.echo(text, nl=fmt == "json")
    failed = inv.problems or inv.translatable < len(inv.rows)
    return ExitCode.USAGE if strict and failed else ExitCode.OK


COMMANDS = (openapi,)
