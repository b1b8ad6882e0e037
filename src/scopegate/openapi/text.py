"""Descriptions as plain text: HTML and Markdown markup removed, whitespace normalised, bounded.

Real specs write descriptions in HTML (``<p>``, ``<a href>``, ``<code>``,
entities) or Markdown (links, emphasis, headings). None of it helps a model
call the API and all of it costs context on every turn, so it becomes plain
text *before* the length bound is applied:

* block tags (``<p>``, ``<br>``, ``<div>``, ``<li>``, headings, table rows)
  become line breaks (``<li>`` a ``- `` bullet); every other tag is removed,
  keeping its text; ``<script>``/``<style>`` and comments are removed with
  their content; entities are decoded;
* Markdown links and images keep their text (``[text](url)`` -> ``text``),
  ``**bold**``/``__bold__`` lose the markers, heading ``#``s are dropped;
* a ``<`` that does not start a tag (``a < b``) is kept.
"""

from __future__ import annotations

import html
import re
from functools import lru_cache

_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.S)
_HIDDEN = re.compile(r"<(script|style)\b[^>]*>.*?(?:</\1\s*>|\Z)", re.S | re.I)
_LI = re.compile(r"<li\b[^>]*>", re.I)
_BLOCK = re.compile(
    r"</?(?:p|br|div|ul|ol|tr|table|thead|tbody|h[1-6]|pre|blockquote|dl|dt|dd|hr|section|details|summary)\b[^>]*>",
    re.I,
)
_TAG = re.compile(r"</?[A-Za-z][A-Za-z0-9:-]*(?:\s[^<>]*)?/?>")
_MD_IMAGE = re.compile(r"!\[([^\]\n]{0,200})\]\((?:[^()\s]|\([^()\s]*\))+(?:\s+\"[^\"]*\")?\)")
_MD_LINK = re.compile(r"\[([^\]\n]{1,200})\]\((?:[^()\s]|\([^()\s]*\))+(?:\s+\"[^\"]*\")?\)")
_MD_REF_LINK = re.compile(r"\[([^\]\n]{1,200})\]\[[^\]\n]{0,100}\]")
_MD_AUTOLINK = re.compile(r"<((?:https?|mailto):[^<>\s]{1,300})>")
_MD_STRONG = re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1", re.S)
_MD_HEADING = re.compile(r"^[ \t]{0,3}#{1,6}[ \t]+", re.M)
_WS = re.compile(r"[ \t\u00a0]+")
_BLANK_LINES = re.compile(r"\n\s*\n\s*\n+")
_SPACED_NEWLINE = re.compile(r" *\n *")


@lru_cache(maxsize=65536)
def plain_text(text: str) -> str:
    """Markup-free text with normalised whitespace (see the module docstring)."""
    if "<" in text or "&" in text:
        text = _MD_AUTOLINK.sub(r"\1", text)
        text = _COMMENT.sub("", text)
        text = _HIDDEN.sub("", text)
        text = _LI.sub("\n- ", text)
        text = _BLOCK.sub("\n", text)
        text = _TAG.sub("", text)
        text = html.unescape(text)
    if "[" in text:
        text = _MD_IMAGE.sub(r"\1", text)
        text = _MD_LINK.sub(r"\1", text)
        text = _MD_REF_LINK.sub(r"\1", text)
    if "**" in text or "__" in text:
        text = _MD_STRONG.sub(r"\2", text)
    if "#" in text:
        text = _MD_HEADING.sub("", text)
    text = _WS.sub(" ", text.replace("\r\n", "\n").replace("\r", "\n"))
    return _BLANK_LINES.sub("\n\n", _SPACED_NEWLINE.sub("\n", text)).strip()


@lru_cache(maxsize=65536)
def bound_text(text: str, limit: int) -> str:
    """:func:`plain_text`, cut at ``limit`` characters on a word boundary (a cut ends with an ellipsis)."""
    text = plain_text(text)
    if len(text) <= limit:
        return text
    if limit <= 1:
        return text[:limit]
    cut = text[: limit - 1]
    space = max(cut.rfind(" "), cut.rfind("\n"))
    if space > limit * 0.6:
        cut = cut[:space]
    return cut.rstrip() + "…"
