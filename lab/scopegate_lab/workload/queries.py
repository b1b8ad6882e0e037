"""Queries drawn from the held-out real tickets: subjects, error codes, phrases; filters and pages.

None of the held-out text was used to build documents, so a query is a real
user's wording, not a copy of an indexed string. Each query also gets a tenant
(weighted by tenant size: big tenants search more), filters (half have none)
and a page (mostly 1, up to 4). Deterministic with a seed.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field

from scopegate.search.analysis import unique_terms
from scopegate_lab.workload.sources import ERROR_CODE_RE, SourceProfile
from scopegate_lab.workload.tickets import STATUSES, Tenant, tenants

MAX_QUERY_CHARS = 200
KINDS = (("subject", 0.35), ("code", 0.25), ("phrase", 0.40))
PAGES = ((1, 0.70), (2, 0.15), (3, 0.10), (4, 0.05))
_PHRASE_WORD = re.compile(r"[A-Za-z][A-Za-z'-]{1,20}")
_PROSE_LINE = re.compile(r"^[A-Z][^{}<>`|=;]{30,}$")


@dataclass(frozen=True)
class WorkloadQuery:
    query: str
    tenant: str
    kind: str  # subject | code | phrase
    filters: dict[str, str] = field(default_factory=dict)
    page: int = 1

    def arguments(self) -> dict[str, object]:
        """The tool arguments a model would send."""
        return {"query": self.query, **self.filters, **({"page": self.page} if self.page > 1 else {})}

    def to_dict(self) -> dict[str, object]:
        return {
            "query": self.query,
            "tenant": self.tenant,
            "kind": self.kind,
            "filters": self.filters,
            "page": self.page,
        }


def _candidates(profile: SourceProfile) -> dict[str, list[tuple[str, str]]]:
    """(text, product) candidates per kind from the held-out tickets, in a stable order."""
    subjects: list[tuple[str, str]] = []
    codes: dict[str, str] = {}
    phrases: list[tuple[str, str]] = []
    # Some real issues share a title; a subject that is also a training title would be a copy.
    trained = {" ".join(t.split())[:MAX_QUERY_CHARS] for p in profile.products.values() for t in p.titles}
    for ticket in profile.held_out:
        title = " ".join(ticket.title.split())[:MAX_QUERY_CHARS]
        if title and title not in trained:
            subjects.append((title, ticket.product))
        for code in ERROR_CODE_RE.findall(f"{ticket.title}\n{ticket.body}"):
            codes.setdefault(code, ticket.product)
        for line in ticket.body.split("\n"):
            line = line.strip()
            if _PROSE_LINE.match(line):
                words = _PHRASE_WORD.findall(line)
                if len(words) >= 4:
                    phrases.append((" ".join(words), ticket.product))
    return {"subject": subjects, "code": sorted(codes.items()), "phrase": phrases}


def make_queries(
    profile: SourceProfile, count: int = 2400, *, seed: int = 13, tenant_count: int = 40
) -> list[WorkloadQuery]:
    """``count`` distinct queries (by text, tenant, filters and page), with the mix of KINDS."""
    rng = random.Random(f"{seed}:queries")
    pools = _candidates(profile)
    people = tenants(tenant_count, seed)
    weights = [t.share for t in people]
    seen: set[tuple[object, ...]] = set()
    texts: set[str] = set()
    out: list[WorkloadQuery] = []
    attempts = 0
    while len(out) < count and attempts < count * 50:
        attempts += 1
        kind = rng.choices([k for k, _ in KINDS], [w for _, w in KINDS])[0]
        pool = pools[kind]
        if not pool:
            continue
        text, product = pool[rng.randrange(len(pool))]
        if kind == "phrase":
            words = text.split()
            size = rng.randint(2, min(5, len(words)))
            begin = rng.randrange(len(words) - size + 1)
            text = " ".join(words[begin : begin + size])
        if not unique_terms(text) or (text in texts and rng.random() < 0.9):
            continue  # nothing searchable; keep repeats of one text rare
        tenant = rng.choices(people, weights)[0]
        query = WorkloadQuery(text, tenant.name, kind, _filters(rng, tenant, product), _pick_page(rng))
        key = (query.query, query.tenant, tuple(sorted(query.filters.items())), query.page)
        if key in seen:
            continue
        seen.add(key)
        texts.add(text)
        out.append(query)
    return out


def _filters(rng: random.Random, tenant: Tenant, product: str) -> dict[str, str]:
    roll = rng.random()
    chosen = product if product in tenant.products and rng.random() < 0.7 else rng.choice(tenant.products)
    status = rng.choices([s for s, _ in STATUSES], [w for _, w in STATUSES])[0]
    if roll < 0.5:
        return {}
    if roll < 0.75:
        return {"product": chosen}
    if roll < 0.9:
        return {"status": status}
    return {"product": chosen, "status": status}


def _pick_page(rng: random.Random) -> int:
    return rng.choices([p for p, _ in PAGES], [w for _, w in PAGES])[0]
