"""``scopegate dashboard`` serving on 127.0.0.1: real HTTP, a log that grows and disappears, foreign Host headers."""

from __future__ import annotations

import json
import re
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from scopegate.dashboard.data import dashboard_from_log
from scopegate.dashboard.server import DashboardServer, make_server, serve_in_thread, unless_unchanged
from scopegate.errors import ConfigError

LINE = (
    '{"event":"call","ts":"2025-03-01T10:0%d:00+00:00","tool":"t","page":1,"total":%d,"latency_ms":1.5,'
    '"outcome":"ok"}\n'
)


@pytest.fixture
def log(tmp_path: Path) -> Path:
    path = tmp_path / "calls.jsonl"
    path.write_text(LINE % (0, 0) + LINE % (1, 4), "utf-8")
    return path


@pytest.fixture
def server(log: Path) -> Iterator[DashboardServer]:
    srv = make_server([log], port=0, refresh_s=5)
    serve_in_thread(srv)
    try:
        yield srv
    finally:
        srv.shutdown()
        srv.server_close()


def test_page_and_json_follow_the_log(server: DashboardServer, log: Path) -> None:
    assert server.server_address[0] == "127.0.0.1"
    with httpx.Client(base_url=server.url, timeout=10) as client:
        page = client.get("/")
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        assert "default-src 'none'" in page.headers["content-security-policy"]
        assert '<meta http-equiv="refresh" content="5">' in page.text
        data = client.get("/data.json").json()
        assert data == json.loads(json.dumps(dashboard_from_log([log]).as_dict()))
        assert data["figures"]["zero_result_rate"] == 0.5
        with log.open("a", encoding="utf-8") as fh:  # the log grows: the next request sees it
            fh.write(LINE % (2, 0) + LINE % (3, 0))
        assert client.get("/data.json").json()["figures"]["zero_result_rate"] == 0.75
        assert client.get("/healthz").text == "ok\n"
        assert client.get("/nope").status_code == 404
        log.unlink()
        gone = client.get("/")
        assert gone.status_code == 503 and "no such log file" in gone.text


@pytest.mark.parametrize("host", ["evil.example", "evil.example:80", "127.0.0.1.nip.io", "[::1]", ""])
def test_foreign_host_headers_are_refused(server: DashboardServer, host: str) -> None:
    with httpx.Client(base_url=server.url, timeout=10) as client:
        response = client.get("/data.json", headers={"Host": host})
    assert response.status_code == 421
    assert "zero_result_rate" not in response.text


def test_localhost_is_fine(server: DashboardServer) -> None:
    port = server.server_address[1]
    with httpx.Client(timeout=10) as client:
        assert client.get(f"http://127.0.0.1:{port}/healthz", headers={"Host": f"localhost:{port}"}).status_code == 200


def dashboard_process(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "scopegate.cli", "dashboard", *args], stderr=subprocess.PIPE, text=True
    )


def test_ctrl_c_stops_it_with_exit_0(log: Path) -> None:
    proc = dashboard_process(str(log), "--port", "0")
    assert proc.stderr is not None
    url = re.search(r"http://127\.0\.0\.1:\d+/", proc.stderr.readline())
    assert url, "no URL printed"
    assert httpx.get(url.group(0) + "healthz", timeout=10).status_code == 200
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=10) == 0


def test_a_busy_port_is_one_line_and_exit_1(log: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        proc = dashboard_process(str(log), "--port", str(busy.getsockname()[1]))
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 1
    assert err.startswith("scopegate dashboard: error:") and "in use" in err and "Traceback" not in err


def test_an_idle_log_is_not_read_again(log: Path) -> None:
    built: list[int] = []

    def build() -> Any:
        built.append(1)
        return dashboard_from_log([log])

    cached = unless_unchanged([log], build)
    first = cached()
    assert cached() is first and len(built) == 1
    with log.open("a", encoding="utf-8") as fh:
        fh.write(LINE % (5, 0))
    assert cached() is not first and len(built) == 2
    log.unlink()
    with pytest.raises(ConfigError, match="no such log file"):
        cached()
