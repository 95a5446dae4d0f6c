"""Real misspellings and their corrections: codespell's dictionary (chapter 5's spelling task).

Source (``CONTRIBUTING.md``, "Data"), fetched and verified by :mod:`attention.data.cache`:

* **codespell's misspellings** -- PyPI ``codespell`` 2.4.3 wheel, the file
  ``codespell_lib/data/dictionary.txt`` (license CC-BY-SA-3.0). 64,980 lines
  ``wrong->right[, alternative ...][, reason]``: a misspelling seen in real text (source code,
  comments, documentation) and its correction(s); a trailing comma ends the list when no reason
  follows, and a few entries add a reason after it. :func:`parse_codespell` keeps the pairs whose
  misspelling is one lowercase alphabetic word and whose *first* correction is one lowercase
  alphabetic word (``teh->the`` is kept; ``alot->a lot``, ``Amercia->America`` and
  ``dont->don't`` are not): **63,184 misspellings** of **14,695 distinct correct words** (5,125
  of them list alternatives after the first correction). A correct word has a median of 2 known
  misspellings (5,991 have one; ``following`` has 116).

:func:`load_codespell` returns ``{misspelling: (correction, alternatives ...)}``;
:func:`misspellings_of` inverts it to ``{correct word: (misspellings ...)}`` using the first
correction only. The parser takes text so tests need no network; a line without ``->`` raises a
``ValueError`` that names the file and the line.
"""

from __future__ import annotations

import os

from .cache import SOURCES, fetch, read_member

__all__ = ["parse_codespell", "load_codespell", "misspellings_of", "is_plain_word"]


def is_plain_word(word: str) -> bool:
    """One lowercase ASCII alphabetic word (``"the"``, not ``"don't"``, ``"a lot"``, ``"Paris"``)."""
    return word.isascii() and word.isalpha() and word.islower()


def parse_codespell(data: bytes | str, name: str = "dictionary.txt") -> dict[str, tuple[str, ...]]:
    """``{misspelling: (first correction, alternatives ...)}`` from codespell's dictionary text.

    Keeps a line when the misspelling and its first correction are both :func:`is_plain_word`
    and differ; the alternatives are the other comma-separated fields that are plain words too
    (a trailing reason, with spaces, is dropped). A misspelling listed twice keeps its first line.
    """
    text = data.decode("utf-8") if isinstance(data, bytes) else data
    pairs: dict[str, tuple[str, ...]] = {}
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        if "->" not in line:
            raise ValueError(f"{name}, line {lineno}: expected 'wrong->right[, ...]', got {line[:80]!r}")
        wrong, rest = line.split("->", 1)
        fields = [f.strip() for f in rest.split(",")]
        fields = [f for f in fields if f]  # a trailing comma leaves an empty field
        if not fields or not is_plain_word(wrong) or not is_plain_word(fields[0]) or fields[0] == wrong:
            continue
        if wrong not in pairs:
            pairs[wrong] = tuple(f for f in fields if is_plain_word(f))
    return pairs


def load_codespell(cache_dir: str | os.PathLike | None = None) -> dict[str, tuple[str, ...]]:
    """codespell's misspellings (63,184 kept): ``{misspelling: (correction, alternatives ...)}``."""
    source = SOURCES["codespell"]
    raw = read_member(fetch(source, cache_dir), source.member)
    return parse_codespell(raw, source.member.rsplit("/", 1)[-1])


def misspellings_of(pairs: dict[str, tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
    """``{correct word: its misspellings, sorted}``, by the first correction of each pair."""
    out: dict[str, list[str]] = {}
    for wrong, fixes in pairs.items():
        out.setdefault(fixes[0], []).append(wrong)
    return {right: tuple(sorted(w)) for right, w in sorted(out.items())}
