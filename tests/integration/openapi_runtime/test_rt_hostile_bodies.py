"""A hostile upstream: every bomb of the catalogue ends in a structured result, within the budget.

The byte limit (1 MB here) holds for the *decoded* bytes of every layer, for
every encoding and stack of them; Python-level memory stays within a small
multiple of the limit even for a 1 GiB bomb (the stacked ``gzip, gzip`` body
used to take 2.1 GB). Event-loop stalls are measured by bench/bench_bombs.py.
"""

from __future__ import annotations

import json
import tracemalloc

import pytest
from rt_helpers import ALICE, MAX_BYTES, session

from scopegate.openapi.runtime import OperationToolset
from scopegate_lab.hostile import CATALOGUE, RunningHostile
from scopegate_lab.hostile import SPEC_PATH as HOSTILE_SPEC
from scopegate_lab.hostile import TOKEN as HOSTILE_TOKEN
from scopegate_lab.hostile.bombs import ordinary_json

MEMORY_BUDGET = 4 * MAX_BYTES + 20 * 1024 * 1024


@pytest.mark.parametrize("name", sorted(CATALOGUE))
async def test_every_bomb_ends_in_its_structured_result(hostile_toolset: OperationToolset, name: str) -> None:
    bomb = CATALOGUE[name]
    result = (await hostile_toolset.tool("getBomb").run({"name": name}, session(ALICE))).result
    if bomb.expect == "ok":
        assert result["status"] == "ok", (name, result)
    else:
        assert result["status"] == "error", (name, result)
        assert result["error_code"] == bomb.expect, (name, result)
        assert set(result) >= {"message", "retryable", "request_id"}


@pytest.mark.parametrize("name", ["ok-gzip", "ok-deflate-raw", "ok-br", "ok-zstd", "ok-gzip-br"])
async def test_ordinary_compressed_bodies_decode_exactly(
    hostile_toolset: OperationToolset, hostile: RunningHostile, name: str
) -> None:
    result = (await hostile_toolset.tool("getBomb").run({"name": name}, session(ALICE))).result
    data = result["untrusted"]["data"]
    assert data["total"] == 2000
    assert data["items"][:2] == json.loads(ordinary_json())["items"][:2]
    assert result["lists"] == [{"path": "items", "total_items": 2000, "kept": 20}]


@pytest.mark.parametrize("name", ["gzip-gzip", "gzip", "deflate", "br", "zstd", "zstd-gzip", "huge-string"])
async def test_bombs_never_reach_memory(hostile_toolset: OperationToolset, name: str) -> None:
    tool = hostile_toolset.tool("getBomb")
    tracemalloc.start()
    try:
        result = (await tool.run({"name": name}, session(ALICE))).result
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result["error_code"] == "RESPONSE_TOO_LARGE", result
    assert peak < MEMORY_BUDGET, (name, peak)


async def test_the_stacked_bomb_is_tiny_on_the_wire_and_huge_inside(hostile: RunningHostile) -> None:
    from scopegate_lab.hostile.bombs import gzip_of, gzip_zeros

    assert len(gzip_of(gzip_zeros())) < 3000  # 1 GiB of zeros inside


async def test_a_deeply_nested_body_within_the_limit_is_refused_not_crashed(hostile_toolset: OperationToolset) -> None:
    result = (await hostile_toolset.tool("getBomb").run({"name": "nested-json"}, session(ALICE))).result
    assert result["error_code"] == "UPSTREAM_ERROR"
    assert "nested too deeply" in result["message"]


async def test_bounded_controls_are_capped(hostile_toolset: OperationToolset) -> None:
    text = (await hostile_toolset.tool("getBomb").run({"name": "big-string"}, session(ALICE))).result
    assert text["strings_capped"] == 1 and len(text["untrusted"]["data"]["text"]) <= 500
    many = (await hostile_toolset.tool("getBomb").run({"name": "amplification"}, session(ALICE))).result
    assert many["error_code"] == "RESPONSE_TOO_LARGE" and "values" in many["message"]  # refused before parsing


# A separate process whose address space is capped at 3 GiB (the setting, where the stacked
# bomb used to end INTERNAL: a MemoryError while httpx decoded it whole).
_CAPPED_CALL = """
import asyncio, json, resource, sys
resource.setrlimit(resource.RLIMIT_AS, (3 * 1024**3, 3 * 1024**3))
from scopegate.context import CallContext
from scopegate.openapi.runtime import FromProvider, OperationToolset, Timeouts, ToolsetSettings

async def main() -> None:
    settings = ToolsetSettings(
        spec=sys.argv[1], allow=("getBomb",), base_url=sys.argv[2], max_response_bytes=1_000_000,
        credentials={"hostileToken": FromProvider(lambda ctx, scheme: sys.argv[3])},
        timeouts=Timeouts(connect=2.0, read=5.0, write=5.0, pool=2.0, total=5.0),
    )
    toolset = OperationToolset(settings)
    try:
        out = {}
        for name in sys.argv[4:]:
            result = (await toolset.tool("getBomb").run({"name": name}, CallContext(state={"user_id": "u"}))).result
            out[name] = result.get("error_code") or result["status"]
        print(json.dumps(out))
    finally:
        await toolset.aclose()

asyncio.run(main())
"""


def test_bombs_end_structured_under_a_3_gib_address_space_limit(hostile: RunningHostile) -> None:
    import subprocess
    import sys

    names = ["gzip-gzip", "zstd-gzip", "br", "ok-gzip"]
    done = subprocess.run(
        [sys.executable, "-c", _CAPPED_CALL, str(HOSTILE_SPEC), hostile.base_url, HOSTILE_TOKEN, *names],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    outcome = json.loads(done.stdout.strip().splitlines()[-1])
    assert outcome == {
        "gzip-gzip": "RESPONSE_TOO_LARGE",
        "zstd-gzip": "RESPONSE_TOO_LARGE",
        "br": "RESPONSE_TOO_LARGE",
        "ok-gzip": "ok",
    }
