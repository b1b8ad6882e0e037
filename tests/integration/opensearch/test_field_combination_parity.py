"""Every field combination means the same on OpenSearch and the embedded engine (issue 14).

combined_fields (the default) is covered by test_opensearch_parity.py; here best_fields with a
tie_breaker and most_fields, each on its own index of the shared corpus: equal totals on every
case and a tie-aware top-5 overlap floor, as there.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from opensearch_helpers import TIE_AWARE_FLOOR, parity_report, unique_spec

from scopegate.backends.embedded import EmbeddedBackend
from scopegate.backends.opensearch import OpenSearchBackend

pytestmark = pytest.mark.opensearch


@pytest.mark.parametrize(("combination", "tie_breaker"), [("best_fields", 0.3), ("most_fields", 0.0)])
async def test_field_combination_parity(
    opensearch_url: str, corpus: list[dict[str, Any]], tmp_path: Path, combination: str, tie_breaker: float
) -> None:
    spec = unique_spec(field_combination=combination, tie_breaker=tie_breaker)
    remote = OpenSearchBackend(spec, opensearch_url)
    local = EmbeddedBackend(spec, tmp_path / "index")
    try:
        assert (await remote.ingest(corpus, batch_size=1000)).indexed == len(corpus)
        local.ingest_sync(corpus, batch_size=1000)
        mean_raw, mean_tie, lines = await parity_report(remote, local)
        print(f"\n{combination}: top-5 overlap raw {mean_raw:.2f}, tie-aware {mean_tie:.2f}")
        print("\n".join(lines))
        assert mean_tie >= TIE_AWARE_FLOOR
    finally:
        await remote.drop()
        await remote.close()
        await local.close()


async def test_other_combined_weights_are_refused_not_ignored(opensearch_url: str) -> None:
    import dataclasses

    from scopegate.errors import ConfigError
    from scopegate.search.spec import TextField

    spec = unique_spec()  # combined_fields, subject^3: the weight is in the indexed field
    first = OpenSearchBackend(spec, opensearch_url)
    try:
        await first.ensure_index()
        reweighted = dataclasses.replace(spec, text_fields=(TextField("subject", 1.0), TextField("body")))
        second = OpenSearchBackend(reweighted, opensearch_url)
        with pytest.raises(ConfigError, match="combined-field weights"):
            await second.ensure_index()
        await second.close()
    finally:
        await first.drop()
        await first.close()
