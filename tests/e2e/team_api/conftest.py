"""Fixtures of the team-API end-to-end tests (issue 37): the local API, its spec, config files."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "mcp"))
