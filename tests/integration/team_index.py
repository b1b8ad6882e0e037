"""A team's own bug index, made with plain REST calls (httpx, never scopegate), for the existing-index tests.

Its mapping is the team's: a synonym analyzer (when the engine has the
``synonym`` filter: OpenSearch's analysis-common; Elasticsearch's minimal
distribution has only ``standard``), the tenant in ``org_id``, the id in
``key``, the component in the object field ``meta.component``, the status as
text with a ``.keyword`` sub-field, and a read alias in front of the index.
Shared by the OpenSearch and Elasticsearch folders (``existing_index_checks``).
"""

from __future__ import annotations

import json
import random
import uuid
from dataclasses import dataclass
from typing import Any

import httpx

from scopegate.search.spec import SearchSpec

TENANTS = ("acme", "globex", "initech")
COMPONENTS = ("ui", "storage", "network")
WORDS = [
    "login",
    "page",
    "timeout",
    "error",
    "disk",
    "full",
    "queue",
    "retry",
    "render",
    "button",
    "slow",
    "memory",
    "leak",
    "cache",
    "upload",
    "download",
    "invoice",
    "report",
    "export",
    "import",
    "sync",
    "token",
    "expired",
    "password",
    "reset",
    "latency",
    "spike",
]
PER_TENANT = 40
# The planted long body: its match sits in the middle of ~6 KB, far from the head.
FILLER = "The nightly batch finished and the dashboard showed the usual numbers for every region. " * 40
CRASH_BODY = FILLER + "Then the storage daemon hit a crash while flushing the journal to disk. " + FILLER


@dataclass(frozen=True)
class TeamIndex:
    url: str
    index: str
    alias: str
    synonyms: bool

    def spec(self, **overrides: Any) -> SearchSpec:
        fields: dict[str, Any] = {
            "name": "search_bugs",
            "description": "Search the team's bug reports.",
            "index": self.alias,
            "index_mode": "existing",
            "text_fields": ("title^3", "description"),
            "snippet_field": "description",
            "id_field": "id",
            "tenant_field": "tenant",
            "filters": (
                {"name": "component", "allowed": (*COMPONENTS, "billing")},
                {"name": "status", "allowed": ("open", "closed")},
            ),
            "result_fields": ("title", "component", "status"),
            "field_paths": {"id": "key", "tenant": "org_id", "component": "meta.component"},
            "fetch_name": "get_bug",
        }
        fields.update(overrides)
        return SearchSpec(**fields)

    def config(self, engine: str, *, server_major: int | None = None, **spec: Any) -> dict[str, Any]:
        """A scopegate config dict serving this index (stdio scope from the environment)."""
        backend: dict[str, Any] = {"type": engine, "url": self.url}
        if server_major is not None:
            backend["server_major"] = server_major
        tool = self.spec(**spec).to_dict()
        tool = {k: v for k, v in tool.items() if k != "scope_keys"}
        return {"version": 1, "backends": {"team": backend}, "search_tools": [{**tool, "backend": "team"}]}


def documents() -> list[dict[str, Any]]:
    """Bug reports of three tenants; ``BUG-1`` exists in each tenant (ids are per tenant in this index)."""
    rng = random.Random(35)
    docs: list[dict[str, Any]] = []
    for tenant in TENANTS:
        for n in range(1, PER_TENANT + 1):
            words = rng.sample(WORDS, 8)
            docs.append(
                {
                    "key": f"BUG-{n}" if n == 1 else f"{tenant[:3].upper()}-{n}",
                    "org_id": tenant,
                    "title": " ".join(words[:3]),
                    "description": " ".join(words) + ". " + " ".join(rng.sample(WORDS, 12)),
                    "status": "open" if n % 3 else "closed",
                    "meta": {"component": COMPONENTS[n % 3], "reporter": f"user{n}"},
                }
            )
        docs.append(
            {
                "key": f"{tenant[:3].upper()}-CRASH",
                "org_id": tenant,
                "title": "storage daemon stops overnight",
                "description": CRASH_BODY,
                "status": "open",
                "meta": {"component": "storage", "reporter": "oncall"},
            }
        )
    return docs


def index_body(synonyms: bool, term_vectors: bool = False) -> dict[str, Any]:
    analysis: dict[str, Any] = {"analyzer": {"bug_text": {"type": "standard"}}}
    if synonyms:
        analysis = {
            "filter": {"bug_synonyms": {"type": "synonym", "synonyms": ["segfault, crash, core dump"]}},
            "analyzer": {
                "bug_text": {"type": "custom", "tokenizer": "standard", "filter": ["lowercase", "bug_synonyms"]}
            },
        }
    return {
        "settings": {"index": {"number_of_shards": 1, "number_of_replicas": 0}, "analysis": analysis},
        "mappings": {
            "dynamic": "strict",
            "properties": {
                "key": {"type": "keyword"},
                "org_id": {"type": "keyword"},
                "title": {"type": "text", "analyzer": "bug_text", "fields": {"keyword": {"type": "keyword"}}},
                "description": {
                    "type": "text",
                    "analyzer": "bug_text",
                    **({"term_vector": "with_positions_offsets"} if term_vectors else {}),
                },
                "status": {"type": "text", "fields": {"keyword": {"type": "keyword"}}},
                "meta": {"properties": {"component": {"type": "keyword"}, "reporter": {"type": "keyword"}}},
            },
        },
    }


async def create(url: str, *, synonyms: bool, prefix: str = "teambugs", term_vectors: bool = False) -> TeamIndex:
    """Create, fill (``_bulk``) and alias a fresh index; ``synonyms`` False on an engine without the filter;
    ``term_vectors``: the description keeps term vectors with offsets (the fast vector highlighter's)."""
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    team = TeamIndex(url, f"{name}-2024", f"{name}-read", synonyms)
    async with httpx.AsyncClient(base_url=url, timeout=60) as http:
        response = await http.put(f"/{team.index}", json=index_body(synonyms, term_vectors))
        response.raise_for_status()
        lines = []
        for doc in documents():
            lines.append({"index": {"_index": team.index, "_id": f"{doc['org_id']}:{doc['key']}"}})
            lines.append(doc)
        ndjson = "".join(json.dumps(line) + "\n" for line in lines)
        response = await http.post(
            "/_bulk", content=ndjson, headers={"Content-Type": "application/x-ndjson"}, params={"refresh": "true"}
        )
        response.raise_for_status()
        assert not response.json()["errors"], response.text[:2000]
        response = await http.post("/_aliases", json={"actions": [{"add": {"index": team.index, "alias": team.alias}}]})
        response.raise_for_status()
    return team


async def snapshot(team: TeamIndex) -> dict[str, Any]:
    """Mapping, settings, aliases and document count: what must be the same after scopegate used the index."""
    async with httpx.AsyncClient(base_url=team.url, timeout=60) as http:
        out: dict[str, Any] = {}
        for part in ("_mapping", "_settings", "_alias"):
            response = await http.get(f"/{team.index}/{part}")
            response.raise_for_status()
            out[part] = response.json()
        response = await http.get(f"/{team.index}/_count")
        out["count"] = response.json()["count"]
        response = await http.get("/_cat/indices", params={"format": "json", "h": "index"})
        out["indices"] = sorted(i["index"] for i in response.json() if i["index"].startswith(team.index[:17]))
    return out


async def drop(team: TeamIndex) -> None:
    async with httpx.AsyncClient(base_url=team.url, timeout=60) as http:
        await http.delete(f"/{team.index}")


async def create_raw(url: str, mapping: dict[str, Any]) -> str:
    """A bare index with ``mapping`` (the check's mistakes); returns its name."""
    name = f"teambad-{uuid.uuid4().hex[:8]}"
    async with httpx.AsyncClient(base_url=url, timeout=60) as http:
        response = await http.put(
            f"/{name}",
            json={"settings": {"index": {"number_of_shards": 1, "number_of_replicas": 0}}, "mappings": mapping},
        )
        response.raise_for_status()
    return name
