"""``scopegate engine ...``: run local engine nodes by hand."""

from __future__ import annotations

import argparse

from scopegate.engines.elasticsearch_node import ES_VERSION
from scopegate.engines.elasticsearch_node import node_from_args as es_node_from_args
from scopegate.engines.opensearch_node import add_node_commands


def add_commands(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add ``engine opensearch|elasticsearch start|stop|status|url|build``."""
    engine = subparsers.add_parser("engine", help="run a local search engine node for development and tests")
    engines = engine.add_subparsers(dest="engine_name", required=True, metavar="ENGINE")
    opensearch = engines.add_parser("opensearch", help="a single-node OpenSearch 2.19 built from Maven Central")
    add_node_commands(opensearch)
    elasticsearch = engines.add_parser(
        "elasticsearch", help=f"a single-node Elasticsearch {ES_VERSION} (integ-test distribution from Maven Central)"
    )
    add_node_commands(elasticsearch, es_node_from_args, "Elasticsearch")
