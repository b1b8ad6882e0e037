"""Many processes, one Elasticsearch index (issue 12): the engine tests of
``tests/integration/engine_multiproc.py``."""

from __future__ import annotations

import pytest
from elasticsearch_helpers import unique_spec
from engine_multiproc import *  # noqa: F403 - the shared engine tests, collected here

from scopegate_lab.consistency import Target


@pytest.fixture
def engine_target(es_url: str) -> Target:
    return Target("elasticsearch", es_url, unique_spec().index)
