"""Issue 35: the credentials a real cluster needs reach it, from the environment or a file, never printed.

A loopback HTTP server on 127.0.0.1 stands in for the cluster: it records the headers of each request
and answers a ``_count`` as OpenSearch or Elasticsearch would (the Elasticsearch client checks the
product header). The backends are built from config files exactly as ``scopegate serve`` builds them.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from scopegate.backends.engine_common import EngineBackend
from scopegate.config.builder import FeatureUnavailable, build_search_backend
from scopegate.config.loader import load_config
from scopegate.errors import ConfigError
from scopegate.scope import Scope
from scopegate.server.check import check_config

SECRET = "s3cr3t-Value-never-printed"


class Recorder(BaseHTTPRequestHandler):
    seen: list[dict[str, str]] = []
    requests: list[dict[str, Any]] = []

    def do_POST(self) -> None:
        sent = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        Recorder.seen.append({k.lower(): v for k, v in self.headers.items()})
        seen = {"method": self.command, "path": self.path, "headers": Recorder.seen[-1], "body": sent}
        Recorder.requests.append(seen)
        body = json.dumps({"count": 7, "_shards": {"total": 1, "successful": 1, "skipped": 0, "failed": 0}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("X-Elastic-Product", "Elasticsearch")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST

    def log_message(self, *_args: Any) -> None:
        pass


@pytest.fixture()
def cluster() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    Recorder.seen = []
    Recorder.requests = []
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def write(tmp_path: Path, backend: dict[str, Any]) -> Path:
    tool = {"backend": "c", "name": "search_t", "description": "d", "text_fields": ["subject^3", "body"]}
    path = tmp_path / "scopegate.json"
    path.write_text(json.dumps({"version": 1, "backends": {"c": backend}, "search_tools": [tool]}), "utf-8")
    return path


async def count_through(path: Path) -> int:
    config = load_config(path)
    backend = build_search_backend(config.search_tools[0], config)
    assert isinstance(backend, EngineBackend)
    try:
        return await backend.count(Scope("acme"))
    finally:
        await backend.close()


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


CASES: list[tuple[str, dict[str, Any], str]] = [
    ("opensearch", {"username": "agent", "password": "${CLUSTER_PASSWORD}"}, basic("agent", SECRET)),
    ("opensearch", {"username": "agent", "password_file": "password.txt"}, basic("agent", SECRET)),
    ("opensearch", {"bearer_token": "${CLUSTER_TOKEN}"}, f"Bearer {SECRET}"),
    ("opensearch", {"bearer_token_file": "token.txt"}, f"Bearer {SECRET}"),
    ("elasticsearch", {"username": "agent", "password": "${CLUSTER_PASSWORD}"}, basic("agent", SECRET)),
    ("elasticsearch", {"api_key": "${CLUSTER_API_KEY}"}, f"ApiKey {SECRET}"),
    ("elasticsearch", {"api_key_file": "token.txt"}, f"ApiKey {SECRET}"),
    ("elasticsearch", {"bearer_token": "${CLUSTER_TOKEN}"}, f"Bearer {SECRET}"),
]


@pytest.mark.parametrize("engine,auth,header", CASES)
async def test_credentials_reach_the_cluster_and_are_never_printed(
    cluster: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    engine: str,
    auth: dict[str, Any],
    header: str,
) -> None:
    for name in ("CLUSTER_PASSWORD", "CLUSTER_TOKEN", "CLUSTER_API_KEY"):
        monkeypatch.setenv(name, SECRET)
    (tmp_path / "password.txt").write_text(SECRET + "\n", "utf-8")
    (tmp_path / "token.txt").write_text(SECRET + "\n", "utf-8")
    extra = {"server_major": 8} if engine == "elasticsearch" else {}
    path = write(tmp_path, {"type": engine, "url": cluster, **auth, **extra})
    assert await count_through(path) == 7
    assert Recorder.seen and all(h.get("authorization") == header for h in Recorder.seen)
    report = await check_config(path)
    config = load_config(path)
    shown = json.dumps(report) + repr(config) + capsys.readouterr().out
    assert SECRET not in shown


@pytest.mark.parametrize(
    "backend,problem",
    [
        ({"type": "opensearch", "username": "a"}, "username and password (or password_file) go together"),
        ({"type": "opensearch", "password": "x", "password_file": "p", "username": "a"}, "not both"),
        ({"type": "opensearch", "username": "a", "password": "b", "bearer_token": "t"}, "one way to authenticate"),
        ({"type": "opensearch", "api_key": "k"}, "OpenSearch takes username/password"),
        ({"type": "elasticsearch", "aws_sigv4": {"region": "eu-west-1"}}, "AWS SigV4 is for Amazon OpenSearch"),
        ({"type": "opensearch", "client_key": "k.pem"}, "client_key needs client_cert"),
    ],
)
def test_auth_settings_are_checked(tmp_path: Path, backend: dict[str, Any], problem: str) -> None:
    path = write(tmp_path, {"url": "http://127.0.0.1:9", **backend})
    with pytest.raises(ConfigError, match=re.escape(problem)):
        load_config(path)


ACCESS_KEY, SECRET_KEY = "AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"  # AWS's published example pair


def sigv4_signature(request: dict[str, Any], region: str, service: str) -> tuple[str, str]:
    """(the signature the request carries, the one recomputed here from the AWS SigV4 specification)."""
    headers = request["headers"]
    auth = headers["authorization"]
    assert auth.startswith("AWS4-HMAC-SHA256 ")
    parts = dict(p.strip().split("=", 1) for p in auth[len("AWS4-HMAC-SHA256 ") :].split(","))
    signed = parts["SignedHeaders"].split(";")
    amz_date = headers["x-amz-date"]
    path, _, query = request["path"].partition("?")
    pairs = sorted(tuple(q.split("=", 1)) if "=" in q else (q, "") for q in query.split("&") if q)
    canonical = "\n".join(
        [
            request["method"],
            path,
            "&".join(f"{k}={v}" for k, v in pairs),
            "".join(f"{h}:{' '.join(headers[h].split())}\n" for h in signed),
            ";".join(signed),
            hashlib.sha256(request["body"]).hexdigest(),
        ]
    )
    scope = f"{amz_date[:8]}/{region}/{service}/aws4_request"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(canonical.encode()).hexdigest()])
    key = f"AWS4{SECRET_KEY}".encode()
    for part in (amz_date[:8], region, service, "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    assert parts["Credential"] == f"{ACCESS_KEY}/{scope}"
    return parts["Signature"], hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()


@pytest.mark.parametrize("service", ["es", "aoss"])
async def test_sigv4_signs_with_opensearch_py_or_needs_botocore(
    cluster: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, service: str
) -> None:
    """With botocore (the signer's dependency), every request carries a SigV4 signature made by opensearch-py's
    own AWSV4SignerAsyncAuth that a verifier written from the specification accepts; without it, the backend
    is refused naming the missing extra."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", ACCESS_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    path = write(
        tmp_path, {"type": "opensearch", "url": cluster, "aws_sigv4": {"region": "eu-west-1", "service": service}}
    )
    config = load_config(path)
    try:
        import botocore  # noqa: F401
    except ImportError:
        with pytest.raises(FeatureUnavailable, match="aws"):
            build_search_backend(config.search_tools[0], config)
        pytest.skip("botocore is not installed: the signature itself is not checked here")
    assert await count_through(path) == 7
    assert Recorder.requests
    for request in Recorder.requests:
        carried, expected = sigv4_signature(request, "eu-west-1", service)
        assert carried == expected
    assert SECRET_KEY not in json.dumps(await check_config(path))
