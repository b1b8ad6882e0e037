"""What tests of scope bindings count: the ticket ids a run returned, and which belong to another tenant."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


def ids_in(response: Mapping[str, Any]) -> list[str]:
    """Ticket ids in one search or fetch result."""
    ids = [str(hit.get("ticket_id")) for hit in response.get("results", []) or []]
    document = response.get("document")
    if response.get("status") == "ok" and isinstance(document, Mapping):
        ids.append(str(document.get("ticket_id")))
    return ids


def returned_ids(responses: Iterable[Mapping[str, Any]]) -> list[str]:
    return [i for response in responses for i in ids_in(response)]


def foreign(ids: Iterable[str], owner: Mapping[str, str], tenant: str) -> list[str]:
    """Ids that are not ``tenant``'s (unknown ids count as foreign)."""
    return [i for i in ids if owner.get(i) != tenant]
