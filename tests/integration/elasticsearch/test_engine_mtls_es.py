"""Issue 35 item 4 on Elasticsearch: the same client-certificate TLS relay in front of the real node (see
tests/integration/opensearch/test_engine_mtls.py). The right certificate with an encrypted key and its
passphrase searches; a foreign certificate or a CA that did not sign the server is a structured,
non-retryable error, and nothing reaches the node."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import existing_index_checks as checks
import pytest
import team_index
from elasticsearch_helpers import server_major
from tls_relay import Pki, TlsRelay, make_pki, relay_in_front

from scopegate.config.builder import load_config
from scopegate.tools import CallContext

pytestmark = pytest.mark.elasticsearch
TENANT = "initech"
REFUSED = {
    "status": "error",
    "error_code": "SEARCH_UNAVAILABLE",
    "message": "the search engine refused the call; retrying will not help",
    "retryable": False,
}


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"), "es-key-Passphrase-never-printed")


@pytest.fixture(scope="module")
async def team(es_url: str) -> AsyncIterator[team_index.TeamIndex]:
    made = await team_index.create(es_url, synonyms=False)
    try:
        yield made
    finally:
        await team_index.drop(made)


@pytest.fixture
def relay(pki: Pki, es_url: str) -> Iterator[TlsRelay]:
    with relay_in_front(pki, es_url) as front:
        yield front


async def search(folder: Path, team: team_index.TeamIndex, relay: TlsRelay, **tls: str) -> dict[str, Any]:
    config = team.config("elasticsearch", server_major=server_major(team.url))
    config["backends"]["team"].update(url=relay.url, **tls)
    path = folder / "scopegate.json"
    path.write_text(json.dumps(config), "utf-8")
    app = load_config(path)
    try:
        tool = next(t for t in app.tools if t.name == "search_bugs")
        ctx = CallContext(state={"tenant_id": TENANT})
        outcome = await asyncio.wait_for(tool.run({"query": checks.synonym_query(team)}, ctx), timeout=120)
    finally:
        await app.aclose()
    return dict(outcome.result)


async def test_an_encrypted_client_key_with_its_passphrase_searches(
    team: team_index.TeamIndex,
    pki: Pki,
    relay: TlsRelay,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("CLUSTER_KEY_PASSPHRASE", pki.passphrase)
    result = await search(
        tmp_path, team, relay, ca_certs=str(pki.ca), client_cert=str(pki.client[0]),
        client_key=str(pki.encrypted_key), client_key_password="${CLUSTER_KEY_PASSPHRASE}",
    )  # fmt: skip
    checks.check_planted_hit(result, TENANT, 2500)
    assert relay.accepted >= 1 and relay.refused == 0
    for secret in pki.secrets:
        assert secret not in json.dumps(result) and secret not in caplog.text


@pytest.mark.parametrize("wrong", ["foreign client certificate", "CA that did not sign the server"])
async def test_a_refused_handshake_is_a_structured_error_and_reaches_nothing(
    team: team_index.TeamIndex, pki: Pki, relay: TlsRelay, tmp_path: Path, wrong: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    ca, (cert, key) = (pki.ca, pki.intruder) if wrong.startswith("foreign") else (pki.stranger_ca, pki.client)
    result = await search(tmp_path, team, relay, ca_certs=str(ca), client_cert=str(cert), client_key=str(key))
    assert result == REFUSED
    assert relay.accepted == 0
    assert "TLS handshake with Elasticsearch failed" in caplog.text
    for secret in pki.secrets:
        assert secret not in caplog.text
