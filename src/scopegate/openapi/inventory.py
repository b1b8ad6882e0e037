"""Every operation of a spec, translated on its own, with what each tool does not carry and why.

``inventory(doc)`` is what ``scopegate openapi inventory`` prints (``render_table``,
or ``Inventory.to_dict`` for JSON: the rows and the document-level problems): one row per
operation (method, path, operationId, tool name, state-changing, deprecated),
whether it translates (else the reason), and its omissions (see
:class:`~scopegate.openapi.model.OmittedInput`): inputs the runtime supplies
(credentials, reserved headers, read-only fields) and inputs that are lost
(an unresolvable ref, an unsupported media type or style, a forbidden
header). Nothing is dropped without a row saying so; with
``TranslateOptions(strict=True)`` a lost input makes its operation fail.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from scopegate.errors import ScopegateError
from scopegate.openapi.loader import SpecDocument
from scopegate.openapi.model import OmittedInput, OperationInfo
from scopegate.openapi.naming import tool_names
from scopegate.openapi.translate import ToolDeclaration, TranslateOptions, translate_operation

HEADERS = ("METHOD", "PATH", "OPERATION_ID", "STATE_CHANGING", "TRANSLATABLE")


@dataclass(frozen=True)
class InventoryRow:
    info: OperationInfo
    tool: str
    translatable: bool
    reason: str = ""
    omitted: tuple[OmittedInput, ...] = ()
    declaration: ToolDeclaration | None = None

    @property
    def lost(self) -> tuple[OmittedInput, ...]:
        return tuple(o for o in self.omitted if o.lost)

    def to_dict(self) -> dict[str, Any]:
        info = self.info
        return {
            "method": info.method,
            "path": info.path,
            "operation_id": info.operation_id or "",
            "tool": self.tool,
            "state_changing": info.state_changing,
            "deprecated": info.deprecated,
            "translatable": self.translatable,
            "reason": self.reason,
            "omitted": [
                {"location": o.location, "name": o.name, "reason": o.reason, "lost": o.lost, "detail": o.detail}
                for o in self.omitted
            ],
        }


@dataclass(frozen=True)
class Inventory:
    rows: tuple[InventoryRow, ...]
    # Document-level problems (a path item that cannot be read): no operation row can show them.
    problems: tuple[str, ...] = ()
    omissions: Counter[str] = field(default_factory=Counter)

    @property
    def translatable(self) -> int:
        return sum(1 for r in self.rows if r.translatable)

    def to_dict(self) -> dict[str, Any]:
        """What ``inventory --format json`` prints: the rows and, as the table does, the document's problems."""
        return {"operations": [r.to_dict() for r in self.rows], "problems": list(self.problems)}


def inventory(doc: SpecDocument, options: TranslateOptions | None = None) -> Inventory:
    """Translate every operation on its own, so one failure does not hide the rest."""
    opts = options or TranslateOptions(recursion_depth=doc.recursion_depth)
    infos = doc.infos()
    names = tool_names(infos, opts.prefix, opts.max_name_length)
    rows: list[InventoryRow] = []
    counts: Counter[str] = Counter()
    for info in infos:
        name = names[info.key]
        try:
            tool = translate_operation(doc.operation(info), name, security_schemes=doc.security_schemes, options=opts)
        except ScopegateError as exc:
            rows.append(InventoryRow(info, name, False, str(exc)))
            counts["failed"] += 1
            continue
        except (RecursionError, TypeError, ValueError, KeyError) as exc:
            rows.append(InventoryRow(info, name, False, f"{type(exc).__name__}: {exc}"))
            counts["failed"] += 1
            continue
        omitted = tool.binding.omitted
        counts.update(o.reason for o in omitted)
        rows.append(InventoryRow(info, name, True, "", omitted, tool))
    return Inventory(tuple(rows), tuple(doc.problems), counts)


def inventory_rows(doc: SpecDocument, options: TranslateOptions | None = None) -> list[dict[str, Any]]:
    """The rows of :func:`inventory` as JSON-able dicts."""
    return [r.to_dict() for r in inventory(doc, options).rows]


def render_table(inv: Inventory) -> str:
    """Aligned columns (the reason for an untranslatable operation, or what a tool does not carry, last),
    document problems, then one-line totals."""
    headers = HEADERS
    table = []
    for r in inv.rows:
        if not r.translatable:
            status = f"no: {r.reason}"
        elif r.lost:
            status = "yes; not carried: " + "; ".join(
                f"{o.location} {o.name!r} ({o.reason}{': ' + o.detail if o.detail else ''})" for o in r.lost
            )
        else:
            status = "yes"
        table.append(
            (r.info.method, r.info.path, r.info.operation_id or "-", "yes" if r.info.state_changing else "no", status)
        )
    widths = [max([len(h)] + [len(row[i]) for row in table]) for i, h in enumerate(headers[:-1])]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers[:-1], widths, strict=True)) + "  " + headers[-1]]
    for row in table:
        lines.append("  ".join(c.ljust(w) for c, w in zip(row[:-1], widths, strict=True)) + "  " + row[-1])
    for problem in inv.problems:
        lines.append(f"problem: {problem}")
    changing = sum(r.info.state_changing for r in inv.rows)
    lines.append(f"{len(inv.rows)} operation(s), {inv.translatable} translatable, {changing} state-changing")
    lost = {k: v for k, v in sorted(inv.omissions.items()) if k != "failed"}
    if lost:
        lines.append("omitted inputs: " + ", ".join(f"{k} {v}" for k, v in lost.items()))
    return "\n".join(lines) + "\n"
