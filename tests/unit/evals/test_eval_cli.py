"""``scopegate eval`` argument errors: one-line reports and exit codes, before any model is loaded."""

from __future__ import annotations

import pytest

from scopegate.cli import main


@pytest.mark.parametrize(
    ("argv", "code", "message"),
    [
        (["eval", "no-such-set"], 1, "no eval set 'no-such-set'"),
        (["eval", "support", "--model", "offline:7b"], 1, "unknown offline model"),
        (["eval", "support", "--model", "offline:0.5b:sideways"], 1, "decision must be one of"),
        (["eval", "support", "--case", "nope"], 1, "no case selected"),
        (["eval", "-k", "0"], 2, "-k"),
        (["eval", "--transport", "carrier-pigeon"], 2, "transport"),
    ],
)
def test_bad_arguments(argv: list[str], code: int, message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == code
    assert message in capsys.readouterr().err


def test_gemini_without_a_key_is_refused(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    monkeypatch.delenv("GOOGLE_GENAI_USE_VERTEXAI", raising=False)
    assert main(["eval", "support", "--model", "gemini-2.5-flash"]) == 1
    assert "GOOGLE_API_KEY" in capsys.readouterr().err
