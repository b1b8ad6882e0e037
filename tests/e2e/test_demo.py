"""``make demo``'s search part: the binding decides scope, and a forged state_delta gets nothing foreign."""

from __future__ import annotations

import warnings
from pathlib import Path

from scopegate.adapters.adk_scope import ScopeTrustWarning, reset_warnings
from scopegate.demo.search_demo import run_search_demo


async def test_demo_binds_scope_and_prints_what_a_forged_state_delta_gets(tmp_path: Path) -> None:
    lines: list[str] = []
    reset_warnings()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        summary = await run_search_demo(tmp_path, lines.append)
    assert not [w for w in caught if issubclass(w.category, ScopeTrustWarning)]  # the demo binds scope
    text = "\n".join(lines)
    assert summary["ok"] is True
    assert summary["forged_ids"] and summary["forged_foreign"] == []
    assert all(i.startswith("GLO-") for i in summary["forged_ids"])
    assert 'the client sends state_delta={"tenant_id": "acme"' in text
    assert f"the forged state_delta got {len(summary['forged_ids'])} ids, 0 of acme or any other tenant" in text
    assert "scope bound by the server" in text


def test_scopegate_demo_leaves_no_temporary_folder_behind(tmp_path: Path) -> None:
    # Issue 19: each `scopegate demo` run left a scopegate-demo-* folder (corpus + index) in the temp dir.
    import os
    import subprocess
    import sys

    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = {**os.environ, "TMPDIR": str(scratch)}
    done = subprocess.run(
        [sys.executable, "-m", "scopegate.cli", "demo"], capture_output=True, text=True, timeout=300, env=env
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert [p.name for p in scratch.iterdir() if p.name.startswith("scopegate-demo-")] == []
