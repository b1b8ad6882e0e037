"""Many processes, one OpenSearch index (issue 12): the engine tests of ``tests/integration/engine_multiproc.py``."""

from __future__ import annotations

import pytest
from engine_multiproc import *  # noqa: F403 - the shared engine tests, collected here
from opensearch_helpers import unique_spec

from scopegate_lab.consistency import Target


@pytest.fixture
def engine_target(opensearch_url: str) -> Target:
    return Target("opensearch", opensearch_url, unique_spec().index)
