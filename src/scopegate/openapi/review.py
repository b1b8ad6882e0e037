"""Declarations for code review (``scopegate openapi declarations``): build them, render them, check them.

A review is the translation of the selected operations plus its snapshot document
(:mod:`scopegate.openapi.snapshot`): stable, sorted JSON that a CI job compares with
the checked-in snapshot.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from scopegate.openapi.loader import load_document
from scopegate.openapi.select import Selection, select_operations
from scopegate.openapi.snapshot import CheckResult, check_file, dumps, snapshot_document
from scopegate.openapi.translate import TranslateOptions, Translation, translate

Form = Literal["review", "jsonschema", "function"]
FORMS: tuple[Form, ...] = ("review", "jsonschema", "function")


@dataclass(frozen=True)
class Review:
    translation: Translation
    document: dict[str, Any]  # the snapshot document: declarations and argument maps

    def render(self, form: Form = "review") -> str:
        """review: the snapshot document; jsonschema: JSON Schema 2020-12 per tool; function: FunctionDeclarations."""
        output: Any
        if form == "jsonschema":
            output = {t.name: t.json_schema() for t in self.translation.tools}
        elif form == "function":
            output = [
                t.function_declaration().model_dump(exclude_none=True, mode="json") for t in self.translation.tools
            ]
        else:
            output = self.document
        return dumps(output)

    def check(self, snapshot: Path) -> CheckResult:
        return check_file(snapshot, self.document)

    def write(self, snapshot: Path) -> None:
        snapshot.write_text(dumps(self.document), "utf-8")


def build_review(
    spec: str | os.PathLike[str],
    *,
    allow: Iterable[str] = (),
    include: Iterable[str] = (),
    exclude: Iterable[str] = (),
    prefix: str = "",
    allow_external_refs: bool = False,
    include_deprecated: bool = False,
    strict: bool = False,
) -> Review:
    """Load ``spec``, select operations, translate them; raises an OpenAPIError (a ConfigError) naming the fault.

    ``strict``: an input a tool would not carry (see :mod:`scopegate.openapi.inventory`) is an error.
    """
    doc = load_document(Path(spec), allow_external_refs=allow_external_refs)
    selection = Selection.build(allow=allow, include=include, exclude=exclude, include_deprecated=include_deprecated)
    chosen = select_operations(doc.infos(), selection)
    translation = translate(doc, chosen, TranslateOptions(prefix=prefix, strict=strict))
    return Review(translation, snapshot_document(translation, title=doc.title, version=doc.version))
