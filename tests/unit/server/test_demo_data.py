"""``serve --demo-data``: empty embedded indexes get the demo corpus; filled ones are left alone."""

from __future__ import annotations

from pathlib import Path

import yaml

from scopegate.config import build_app, load_config
from scopegate.context import CallContext
from scopegate.demo.corpus import INJECTION_ID, INJECTION_TENANT
from scopegate.demo.serve_data import ensure_demo_data

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "scopegate.yaml"


async def test_fills_empty_indexes_once(tmp_path: Path) -> None:
    config = load_config(EXAMPLE, environ={"SCOPEGATE_DATA": str(tmp_path / "data")})
    app = await build_app(config, guard=None)
    said: list[str] = []
    try:
        added = await ensure_demo_data(app, per_tenant=20, say=said.append)
        assert added == 6 * 20 + 1 and said
        assert await ensure_demo_data(app, per_tenant=20) == 0
        ctx = CallContext(state={"tenant_id": INJECTION_TENANT})
        found = (await app.tool("get_ticket").run({"id": INJECTION_ID}, ctx)).result
        assert found["status"] == "ok"
    finally:
        await app.aclose()
    assert (tmp_path / "data" / "tickets" / "meta.json").exists()


async def test_leaves_other_backends_alone(tmp_path: Path) -> None:
    data = yaml.safe_load(EXAMPLE.read_text("utf-8"))
    data["backends"]["local"]["path"] = str(tmp_path / "d")
    data["auth"]["token_table"] = str(EXAMPLE.parent / data["auth"]["token_table"])  # build_app loads auth too
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(data), "utf-8")
    app = await build_app(load_config(path, environ={}), offline=True, guard=None)
    try:
        assert await ensure_demo_data(app, per_tenant=5) == 0  # in-memory (offline) indexes are skipped
    finally:
        await app.aclose()
