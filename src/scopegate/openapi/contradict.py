"""Object schemas that contradict themselves: a ``required`` property that ``additionalProperties: false`` forbids.

``{required: [id], additionalProperties: false}`` with ``id`` declared nowhere
(not in ``properties``, an ``allOf`` part or a union variant, and no
``patternProperties``) admits no value at all: leaving ``id`` out breaks
``required``, sending it breaks ``additionalProperties``. The translator
reports such a property as an omission (``contradictory_schema``) and the
runtime validator does not enforce the impossible requirement, so the tool
stays callable and the API decides.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scopegate.openapi.simplify import deref, merge_all_of, top_properties

MAX_DEPTH = 4
MAX_NODES = 2_000


def forbidden_required(schema: Any, defs: Mapping[str, Any] | None) -> list[str]:
    """Names ``schema`` requires although its ``additionalProperties: false`` forbids them."""
    body = deref(schema, defs)
    if not isinstance(body, dict):
        return []
    merged = merge_all_of(dict(body), defs)
    if merged.get("additionalProperties") is not False or merged.get("patternProperties"):
        return []
    declared = set(top_properties(body, defs))
    required = merged.get("required")
    return [r for r in required if isinstance(r, str) and r not in declared] if isinstance(required, list) else []


def contradictions(schema: Any, defs: Mapping[str, Any] | None) -> list[str]:
    """Dotted paths (``"rule.id"``) of every forbidden required property, to ``MAX_DEPTH`` levels of nesting.

    At most ``MAX_NODES`` object schemas are looked at, so a huge or hostile body costs a bounded amount.
    """
    found: list[str] = []
    budget = [MAX_NODES]

    def walk(node: Any, prefix: str, depth: int) -> None:
        budget[0] -= 1
        if budget[0] < 0:
            return
        found.extend(prefix + name for name in forbidden_required(node, defs))
        if depth < MAX_DEPTH:
            for name, subs in top_properties(node, defs).items():
                walk(subs[0], f"{prefix}{name}.", depth + 1)

    walk(schema, "", 0)
    return found
