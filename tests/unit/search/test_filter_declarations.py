"""Optional enumerated filters say when to leave them out (issue 38): small models set every filter
they see, and an unasked filter silently narrows the result."""

from __future__ import annotations

import dataclasses

from scopegate.demo.corpus import ticket_spec
from scopegate.search.aggregation import resolve
from scopegate.search.spec import KeywordFilter
from scopegate.search.validate import validate_search_args


def test_every_filter_offers_any_first_for_when_the_user_did_not_ask() -> None:
    spec = ticket_spec()
    bare = dataclasses.replace(spec, filters=(*spec.filters, KeywordFilter("channel", ("email", "chat"))))
    for props in (bare.json_schema()["properties"], resolve(bare).json_schema()["properties"]):
        for f in bare.filters:
            assert props[f.name]["enum"] == ["any", *f.allowed]
            text = props[f.name]["description"]
            assert text.endswith(f"'any' (the default) when the user did not ask for a particular {f.name}."), text
    # "any" is no filter at all: the same request as leaving it out.
    assert validate_search_args(spec, {"query": "refund", "status": "any"}) == validate_search_args(
        spec, {"query": "refund"}
    )
    # A filter whose real values include "any" keeps its own meaning and the leave-it-out wording.
    real = dataclasses.replace(spec, filters=(KeywordFilter("scope", ("any", "mine")),), result_fields=("subject",))
    prop = real.json_schema()["properties"]["scope"]
    assert prop["enum"] == ["any", "mine"] and "leave it out unless" in prop["description"]
    assert validate_search_args(real, {"query": "x", "scope": "any"}).filters == (("scope", "any"),)  # type: ignore[union-attr]
    # The team's own wording is kept, as a sentence of its own.
    assert spec.json_schema()["properties"]["product"]["description"].startswith("Only tickets about this product. ")
