"""The test session itself can be interrupted: the Ctrl-C tests need SIGINT delivered to their children."""

from __future__ import annotations

import signal


def test_the_session_runs_with_sigint_not_ignored() -> None:
    # tests/conftest.py resets an inherited SIG_IGN (a CI job backgrounded by a non-interactive shell);
    # without that reset this fails under such a launcher, as the Ctrl-C tests did by timing out.
    assert signal.getsignal(signal.SIGINT) is not signal.SIG_IGN
