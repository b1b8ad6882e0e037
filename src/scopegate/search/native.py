"""Which snippet path this process runs: the C scanner (``_wordscan``) or the pure-Python one.

Decided once, at import, for every module that has both (word runs, text cleaning, the snippet
scan and shrink rounds), so a process never mixes the two:

- ``SCOPEGATE_NATIVE_SNIPPETS=0`` forces the pure-Python path (CI runs the unit layer so, and a
  user can rule the extension out);
- otherwise the extension is used when it imports: an install without a C compiler skips it (the
  build step is optional), and then the pure path runs with the same answers.

``scopegate --version`` says which path is active (:data:`SNIPPET_PATH`).
"""

from __future__ import annotations

import os

ENV = "SCOPEGATE_NATIVE_SNIPPETS"


def _native_wanted_and_built() -> bool:
    if os.environ.get(ENV, "").strip() == "0":
        return False
    try:
        from scopegate.search import _wordscan  # noqa: F401
    except ImportError:
        return False
    return True


NATIVE: bool = _native_wanted_and_built()
SNIPPET_PATH = "native" if NATIVE else "pure-python"
