"""The aggregation tool on a real Elasticsearch 8.19 node: the shared checks of ``agg_backend_checks``."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agg_backend_checks import (  # noqa: F401 - the fixture and the tests this module runs
    counted,
    test_an_index_without_the_date_field_is_refused_by_name,
    test_counts_are_the_callers_own_documents,
    test_counts_equal_the_embedded_engines,
)
from elasticsearch_helpers import make_backend

pytestmark = pytest.mark.elasticsearch


@pytest.fixture(scope="module")
def make_remote(es_url: str) -> Callable[..., Any]:
    return lambda spec, **kw: make_backend(spec, es_url, **kw)
