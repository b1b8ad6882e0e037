"""Optional enumerated filters say when to leave them out (issue 38): small models set every filter
they see, and an unasked filter silently narrows the result."""

from __future__ import annotations

import dataclasses

from scopegate.demo.corpus import ticket_spec
from scopegate.search.aggregation import resolve
from scopegate.search.spec import KeywordFilter


def test_every_filter_tells_the_model_to_leave_it_out_unless_asked() -> None:
    spec = ticket_spec()
    bare = dataclasses.replace(spec, filters=(*spec.filters, KeywordFilter("channel", ("email", "chat"))))
    for props in (bare.json_schema()["properties"], resolve(bare).json_schema()["properties"]):
        for f in bare.filters:
            text = props[f.name]["description"]
            assert text.endswith(f"leave it out unless the user asks for a particular {f.name}."), text
    # The team's own wording is kept, as a sentence of its own.
    assert spec.json_schema()["properties"]["product"]["description"].startswith("Only tickets about this product. ")
