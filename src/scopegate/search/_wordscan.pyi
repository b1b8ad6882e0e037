from collections.abc import Mapping, Sequence, Set

def first_start(
    text: str,
    needles: tuple[bytes, ...],
    start: int,
    known_misses: Set[str] | None = None,
    word_terms: Mapping[str, tuple[str, ...]] | None = None,
    wanted: Set[str] | None = None,
    /,
) -> int: ...
def first_window(
    text: str,
    needles: tuple[bytes, ...],
    start: int,
    known_misses: Set[str] | None,
    word_terms: Mapping[str, tuple[str, ...]] | None,
    wanted: Set[str] | None,
    before_need: int,
    after_need: int,
    /,
) -> int | tuple[int, tuple[str, bool], tuple[str, bool]]: ...
def word_runs(text: str, /) -> str: ...
def clean_head(text: str, start: int, need: int, /) -> tuple[str, bool]: ...
def clean_tail(text: str, end: int, need: int, /) -> tuple[str, bool]: ...
def word_end(text: str, at: int, /) -> int: ...
def snippets_size(sources: Sequence[tuple[object, ...]], limit: int, /) -> int: ...
def shrink_limit(
    sources: Sequence[tuple[object, ...]], base: int, budget: int, limit: int, size: int, floor: int, /
) -> tuple[int, int]: ...
def cut_snippets(sources: Sequence[tuple[object, ...]], limit: int, /) -> list[str]: ...
