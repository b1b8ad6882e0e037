"""The shaper as it was before issue 13, frozen: the reference the bounded shaper must equal.

It cleans the whole body for every hit and once per snippet-shrink round, so its
cost grows with the body; its *output* is the rule. Property tests compare the
bounded shaper against it on inputs where its word segmentation agrees with the
engine's (see test_shaper_bounded.py). Not used outside tests.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from scopegate.search.analysis import WORD_RE
from scopegate.search.model import RawHit
from scopegate.search.spec import SearchSpec

Analyzer = Callable[[str], list[str]]
ELLIPSIS = "…"


def ref_clean_text(text: str) -> str:
    out = []
    for ch in text:
        if ch.isspace():
            out.append(" ")
        elif ord(ch) < 32 or 0x7F <= ord(ch) < 0xA0:
            continue
        else:
            out.append(ch)
    return " ".join("".join(out).split())


def ref_cap_text(text: str, limit: int) -> tuple[str, bool]:
    if len(text) <= limit:
        return text, False
    if limit <= 1:
        return ELLIPSIS[:limit], True
    cut = text[: limit - 1]
    space = cut.rfind(" ")
    if space >= limit // 2:
        cut = cut[:space]
    return cut.rstrip() + ELLIPSIS, True


def ref_first_match_offset(text: str, terms: Sequence[str], analyze: Analyzer) -> int | None:
    wanted = set(terms)
    if not wanted:
        return None
    memo: dict[str, bool] = {}
    for match in WORD_RE.finditer(text):
        word = match.group(0)
        hit = memo.get(word)
        if hit is None:
            hit = any(t in wanted for t in analyze(word))
            memo[word] = hit
        if hit:
            return match.start()
    return None


def ref_make_snippet(text: str, terms: Sequence[str], analyze: Analyzer, limit: int) -> str:
    body = ref_clean_text(text)
    if len(body) <= limit:
        return body
    at = ref_first_match_offset(body, terms, analyze)
    start = 0 if at is None else max(0, at - limit // 5)
    if start > 0:
        space = body.find(" ", start)
        start = space + 1 if 0 <= space < (at if at is not None else start) else start
    lead = ELLIPSIS if start > 0 else ""
    room = limit - len(lead)
    window = body[start:]
    if len(window) <= room:
        return lead + window
    cut, _ = ref_cap_text(window, room)
    return lead + cut


def _hits_size(items: list[dict[str, Any]]) -> int:
    return len(json.dumps(items, ensure_ascii=False))


def _hit_item(spec: SearchSpec, hit: RawHit, snippet: str) -> dict[str, Any]:
    item: dict[str, Any] = {spec.id_field: hit.doc_id}
    for name in spec.result_fields:
        value = hit.fields.get(name)
        if value is None:
            continue
        text = ref_clean_text(str(value if not isinstance(value, list) else ", ".join(map(str, value))))
        item[name] = ref_cap_text(text, spec.result_field_chars)[0]
    item["snippet"] = snippet
    return item


def ref_shape_hits(
    spec: SearchSpec, hits: Sequence[RawHit], terms: Sequence[str], analyze: Analyzer
) -> tuple[list[dict[str, Any]], bool]:
    bodies = [str(h.fields.get(spec.snippet_field) or "") for h in hits]
    limit = spec.snippet_chars
    truncated = False
    items = [_hit_item(spec, h, ref_make_snippet(b, terms, analyze, limit)) for h, b in zip(hits, bodies, strict=True)]
    while _hits_size(items) > spec.hits_char_budget and limit > 40:
        truncated = True
        over = _hits_size(items) - spec.hits_char_budget
        limit = max(40, limit - max(20, over // max(1, len(items)) + 1))
        items = [
            _hit_item(spec, h, ref_make_snippet(b, terms, analyze, limit)) for h, b in zip(hits, bodies, strict=True)
        ]
    if _hits_size(items) > spec.hits_char_budget:
        truncated = True
        field_limit = spec.result_field_chars
        while _hits_size(items) > spec.hits_char_budget and field_limit > 8:
            field_limit //= 2
            for item in items:
                for key, value in item.items():
                    if isinstance(value, str) and len(value) > field_limit:
                        item[key] = ref_cap_text(value, field_limit)[0]
        while items and _hits_size(items) > spec.hits_char_budget:
            items.pop()
    return items, truncated
