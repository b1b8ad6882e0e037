"""Issue 35 item 4: a cluster behind mutual TLS. A real TLS listener on 127.0.0.1 requires a client
certificate its CA signed and relays to the real OpenSearch node; the certificates are made at test time.

The right client certificate and CA file search the team's index; a missing or foreign client certificate
and a CA that did not sign the server's certificate each give a structured tool error (no crash, no hang)
and nothing reaches the node; a key that does not fit its certificate is a config error at build time. The
client key's path and contents appear in no log line, tool result, error or CLI output."""

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
from tls_relay import Pki, TlsRelay, make_pki, relay_in_front

from scopegate.config.builder import load_config
from scopegate.errors import ConfigError
from scopegate.server.check import check_config
from scopegate.tools import CallContext

pytestmark = pytest.mark.opensearch
TENANT = "globex"
PASSPHRASE = "key-Passphrase-never-printed"


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"), PASSPHRASE)


@pytest.fixture(scope="module")
async def team(opensearch_url: str) -> AsyncIterator[team_index.TeamIndex]:
    made = await team_index.create(opensearch_url, synonyms=True)
    try:
        yield made
    finally:
        await team_index.drop(made)


@pytest.fixture
def relay(pki: Pki, opensearch_url: str) -> Iterator[TlsRelay]:
    with relay_in_front(pki, opensearch_url) as front:
        yield front


@pytest.fixture(autouse=True)
def every_log_line(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.DEBUG)
    return caplog


def write(folder: Path, team: team_index.TeamIndex, relay: TlsRelay, **tls: Path | str) -> Path:
    config = team.config("opensearch")
    config["backends"]["team"].update(url=relay.url, **{key: str(value) for key, value in tls.items()})
    path = folder / "scopegate.json"
    path.write_text(json.dumps(config), "utf-8")
    return path


async def search(path: Path, query: str) -> dict[str, Any]:
    """One search through the tool built from the config, as ``scopegate serve`` builds it (bounded: a hang
    would fail here)."""
    app = load_config(path)
    try:
        tool = next(t for t in app.tools if t.name == "search_bugs")
        ctx = CallContext(state={"tenant_id": TENANT})
        outcome = await asyncio.wait_for(tool.run({"query": query}, ctx), timeout=120)
    finally:
        await app.aclose()
    return dict(outcome.result)


def assert_nothing_secret(pki: Pki, *texts: str) -> None:
    for text in texts:
        for secret in pki.secrets:
            assert secret not in text


async def test_the_right_client_certificate_and_ca_file_search_the_index(
    team: team_index.TeamIndex, pki: Pki, relay: TlsRelay, tmp_path: Path, every_log_line: pytest.LogCaptureFixture
) -> None:
    path = write(tmp_path, team, relay, ca_certs=pki.ca, client_cert=pki.client[0], client_key=pki.client[1])
    result = await search(path, checks.synonym_query(team))
    checks.check_planted_hit(result, TENANT, 2500)
    assert relay.accepted >= 1 and relay.refused == 0
    assert_nothing_secret(pki, json.dumps(result), every_log_line.text)


@pytest.mark.parametrize("client", ["missing", "foreign"])
async def test_a_missing_or_foreign_client_certificate_is_a_structured_error(
    team: team_index.TeamIndex,
    pki: Pki,
    relay: TlsRelay,
    tmp_path: Path,
    client: str,
    every_log_line: pytest.LogCaptureFixture,
) -> None:
    tls = {"ca_certs": pki.ca}
    if client == "foreign":
        tls |= {"client_cert": pki.intruder[0], "client_key": pki.intruder[1]}
    result = await search(write(tmp_path, team, relay, **tls), "crash")
    assert result["status"] == "error" and result["error_code"] == "SEARCH_UNAVAILABLE"
    assert relay.accepted == 0 and relay.refused >= 1  # no byte reached the node
    # The relay's alert says why (no certificate, or one from an unknown CA): a retry cannot help.
    assert result == {
        "status": "error",
        "error_code": "SEARCH_UNAVAILABLE",
        "message": "the search engine refused the call; retrying will not help",
        "retryable": False,
    }
    alert = "TLSV13_ALERT_CERTIFICATE_REQUIRED" if client == "missing" else "TLSV1_ALERT_UNKNOWN_CA"
    assert f"TLS handshake with OpenSearch failed ({alert})" in every_log_line.text
    assert_nothing_secret(pki, json.dumps(result), every_log_line.text)


async def test_a_ca_that_did_not_sign_the_server_fails_closed(
    team: team_index.TeamIndex, pki: Pki, relay: TlsRelay, tmp_path: Path, every_log_line: pytest.LogCaptureFixture
) -> None:
    path = write(tmp_path, team, relay, ca_certs=pki.stranger_ca, client_cert=pki.client[0], client_key=pki.client[1])
    result = await search(path, "crash")
    assert result == {
        "status": "error",
        "error_code": "SEARCH_UNAVAILABLE",
        "message": "the search engine refused the call; retrying will not help",
        "retryable": False,
    }
    assert relay.accepted == 0  # the client gave up on the server's certificate: nothing was sent
    # One line for the operator, naming the cause; not the client's traceback.
    lines = [r.getMessage() for r in every_log_line.records if r.name.startswith("scopegate")]
    assert any("TLS handshake with OpenSearch failed" in line and "CERTIFICATE_VERIFY_FAILED" in line for line in lines)
    assert_nothing_secret(pki, json.dumps(result), every_log_line.text)


@pytest.mark.parametrize(
    "key,says",
    [
        ("intruder", "client_key: the private key does not match client_cert"),
        ("a certificate", "client_cert/client_key: not a PEM certificate and private key"),
        ("encrypted", "client_key: the private key is encrypted; give its passphrase in client_key_password"),
        ("encrypted, wrong passphrase", "client_key_password: the passphrase does not open client_key"),
    ],
)
async def test_a_key_that_does_not_fit_is_a_config_error_naming_the_key_not_the_file(
    team: team_index.TeamIndex,
    pki: Pki,
    relay: TlsRelay,
    tmp_path: Path,
    key: str,
    says: str,
    every_log_line: pytest.LogCaptureFixture,
) -> None:
    """Before: the config built, and every search failed as INTERNAL with the TLS library's traceback
    logged (an encrypted key made OpenSSL prompt for its passphrase on the terminal)."""
    files = {"intruder": pki.intruder[1], "a certificate": pki.ca, "encrypted": pki.encrypted_key}
    tls: dict[str, Path | str] = {"ca_certs": pki.ca, "client_cert": pki.client[0]}
    tls["client_key"] = files.get(key, pki.encrypted_key)
    if key == "encrypted, wrong passphrase":
        tls["client_key_password"] = PASSPHRASE[::-1]
    path = write(tmp_path, team, relay, **tls)
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert str(caught.value).startswith(says)
    assert str(tls["client_key"]) not in str(caught.value)
    done = checks.cli("check", str(path))
    assert done.returncode != 0 and says in done.stderr and "Traceback" not in done.stderr
    assert relay.accepted == 0 and relay.refused == 0
    assert_nothing_secret(pki, str(caught.value), done.stdout, done.stderr, every_log_line.text)


@pytest.mark.parametrize("given", ["environment", "file"])
async def test_an_encrypted_key_opens_with_its_passphrase_from_the_environment_or_a_file(
    team: team_index.TeamIndex,
    pki: Pki,
    relay: TlsRelay,
    tmp_path: Path,
    given: str,
    monkeypatch: pytest.MonkeyPatch,
    every_log_line: pytest.LogCaptureFixture,
) -> None:
    tls: dict[str, Path | str] = {"ca_certs": pki.ca, "client_cert": pki.client[0], "client_key": pki.encrypted_key}
    if given == "environment":
        monkeypatch.setenv("CLUSTER_KEY_PASSPHRASE", PASSPHRASE)
        tls["client_key_password"] = "${CLUSTER_KEY_PASSPHRASE}"
    else:
        (tmp_path / "passphrase.txt").write_text(PASSPHRASE + "\n", "utf-8")
        tls["client_key_password_file"] = "passphrase.txt"
    path = write(tmp_path, team, relay, **tls)
    result = await search(path, checks.synonym_query(team))
    checks.check_planted_hit(result, TENANT, 2500)
    assert relay.accepted >= 1 and relay.refused == 0
    app = load_config(path)
    shown = repr(app.config) + json.dumps(await check_config(path))
    await app.aclose()
    assert_nothing_secret(pki, json.dumps(result), shown, every_log_line.text)


def test_the_cli_reports_a_refused_certificate_as_a_result(
    team: team_index.TeamIndex, pki: Pki, relay: TlsRelay, tmp_path: Path
) -> None:
    path = write(tmp_path, team, relay, ca_certs=pki.ca, client_cert=pki.intruder[0], client_key=pki.intruder[1])
    done = checks.cli("search", "crash", "--config", str(path), "--tool", "search_bugs", "--tenant", TENANT)
    assert done.returncode != 0 and "Traceback" not in done.stderr
    result = json.loads(done.stdout)
    assert result["error_code"] == "SEARCH_UNAVAILABLE" and result["retryable"] is False
    assert relay.accepted == 0
    assert_nothing_secret(pki, done.stdout, done.stderr)
