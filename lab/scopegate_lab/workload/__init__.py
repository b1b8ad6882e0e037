"""A realistic support-ticket workload for benchmarks and tests, generated from the real corpora.

Distributions (body lengths, paragraph blocks, stack traces, logs, error codes,
titles) come from ``../shared/data/tickets``, read at run time; nothing of it is
copied into the repository. Generated corpora go under ``.cache/``.

It lives in the package (not in ``bench/``) because benchmarks, integration
tests and other engineers' load tests all need the same tickets and queries,
and ``bench/`` is not importable; it is type-checked with the library, and a
deployment can benchmark itself with ``python -m scopegate_lab.workload``.

    from scopegate_lab.workload import SourceProfile, TicketFactory, make_queries, workload_spec
    profile = SourceProfile.load()                  # ~4 s: reads and splits the real tickets
    tickets = TicketFactory(profile).tickets(0, 10_000)
    queries = make_queries(profile, 2_400)
"""

from scopegate_lab.workload.corpus import (
    CorpusSettings,
    corpus_files,
    generate_corpus,
    read_corpus,
    read_queries,
    workload_spec,
)
from scopegate_lab.workload.queries import WorkloadQuery, make_queries
from scopegate_lab.workload.sources import SourceProfile, find_ticket_data
from scopegate_lab.workload.tickets import TicketFactory, tenants

__all__ = [
    "CorpusSettings",
    "SourceProfile",
    "TicketFactory",
    "WorkloadQuery",
    "corpus_files",
    "find_ticket_data",
    "generate_corpus",
    "make_queries",
    "read_corpus",
    "read_queries",
    "tenants",
    "workload_spec",
]
