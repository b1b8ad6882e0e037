"""Toolset construction fails loudly on credentials for a scheme the spec lacks."""

from __future__ import annotations

import pytest

from scopegate.errors import ConfigError
from scopegate.examples.orders import SPEC_PATH
from scopegate.openapi.runtime import FromState, ToolsetSettings
from scopegate.openapi.runtime.toolset import OperationToolset


def test_unknown_credential_scheme_fails() -> None:
    settings = ToolsetSettings(
        spec=SPEC_PATH, allow=("getOrder",), base_url="http://127.0.0.1:9", credentials={"bearerAuth": FromState("t")}
    )
    with pytest.raises(ConfigError, match="bearerAuth"):
        OperationToolset(settings)


def test_known_credential_scheme_builds() -> None:
    settings = ToolsetSettings(
        spec=SPEC_PATH,
        allow=("getOrder",),
        base_url="http://127.0.0.1:9",
        credentials={"customerToken": FromState("t")},
    )
    assert [t.name for t in OperationToolset(settings).tools] == ["getOrder"]
