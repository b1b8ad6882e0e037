"""The relevance harness: judged collections (BEIR or TREC) through scopegate's own ingest and tool path.

Metrics come from ir-measures (the ``eval`` extra). ``bench/bench_relevance.py`` runs it per backend.
"""

from scopegate.relevance.collection import Collection, load_collection
from scopegate.relevance.harness import RelevanceReport, evaluate, relevance_spec

__all__ = ["Collection", "RelevanceReport", "evaluate", "load_collection", "relevance_spec"]
