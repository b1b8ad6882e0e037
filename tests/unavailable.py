"""What a test folder does when the engine it needs cannot be had (imported by module name: tests/ is on sys.path)."""

from __future__ import annotations

import os
from typing import NoReturn

import pytest


def engine_unavailable(what: str, reason: str) -> NoReturn:
    """A failure when ``CI`` is set, otherwise a skip that prints the reason: never a silent skip."""
    message = f"{what} not available: {reason}"
    if os.environ.get("CI"):
        pytest.fail(message + " (CI is set, so this is a failure, not a skip)", pytrace=False)
    print(f"\nSKIP: {message}")
    pytest.skip(message)
