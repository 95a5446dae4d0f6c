"""Two real translation corpora, tokenised and cleaned: zh->en (HSK) and de->en (Ding).

Sources (``CONTRIBUTING.md``, "Data"), fetched and verified by :mod:`attention.data.cache`:

* **HSK graded sentences** -- PyPI ``hsk-sentences-audio`` 1.0.0, license CC-BY-SA-4.0.
  4,354 short sentences graded by HSK level 1-6. The 65 pairs whose English is the literal
  ``"placeholder"`` and the 2 exact repeats are dropped: **4,287 pairs**.
* **Ding dictionary example sentences** -- Debian ``trans-de-en`` 1.9-6 (Frank Richter, TU
  Chemnitz), license GPL-2+. Lines ``German :: English``; the example sentences among the
  entries are kept (rule in :func:`parse_ding`): **17,349 pairs**, median 7 German words,
  verb-final clauses give crossing alignments.

Tokenisation (the same everywhere, so a chapter can state it once):

* Chinese: one token per character, whitespace dropped, punctuation kept as tokens
  (``"老师，您好！"`` -> ``老 师 ， 您 好 ！``).
* English and German: :func:`tokenize_words` -- lowercase, then the regex :data:`WORD`:
  a decimal number (``1.4``), a word with inner apostrophes or hyphens (``don't``,
  ``part-time``, ``e-mail``, ``20th``), or any other single non-space character (punctuation).
  The curly apostrophe ``’`` is read as ``'``.

Each loader returns a list of :class:`Pair` ``(src, tgt, meta)``; a pair also unpacks as
``src, tgt = pair``. The parsers take text so tests need no network; malformed input raises a
``ValueError`` that names the file and the record or line.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field

from .cache import SOURCES, fetch, read_member

__all__ = ["Pair", "load_hsk", "load_ding_de_en", "parse_hsk", "parse_ding", "tokenize_words", "tokenize_chars"]

WORD = re.compile(r"\d+(?:[.,]\d+)+|\w+(?:['-]\w+)*|[^\w\s]")


@dataclass
class Pair:
    """One sentence pair: source tokens, target tokens, and where it came from."""

    src: tuple[str, ...]  # source tokens
    tgt: tuple[str, ...]  # target tokens
    meta: dict = field(default_factory=dict)  # e.g. {"level": 3, "src_text": ..., "tgt_text": ...}

    def __iter__(self):  # so that `src, tgt = pair` works like a plain tuple
        return iter((self.src, self.tgt))


def tokenize_words(text: str) -> tuple[str, ...]:
    """Lowercased word and punctuation tokens (regex :data:`WORD`)."""
    return tuple(WORD.findall(text.replace("\u2019", "'").lower()))


def tokenize_chars(text: str) -> tuple[str, ...]:
    """One token per character, whitespace dropped (for Chinese)."""
    return tuple(ch for ch in text if not ch.isspace())


# ---------------------------------------------------------------- HSK, zh -> en


def parse_hsk(data: bytes | str, name: str = "sentences.json", script: str = "simplified") -> list[Pair]:
    """Pairs from the text of HSK's ``sentences.json`` (a list of records).

    A record needs ``chinese``, ``translation.en`` and ``hsk_level`` (and ``traditional``
    when ``script="traditional"``). Placeholder translations and exact repeats of an
    earlier (Chinese, English) pair are dropped.
    """
    if script not in ("simplified", "traditional"):
        raise ValueError(f"script must be 'simplified' or 'traditional', got {script!r}")
    field = "chinese" if script == "simplified" else "traditional"
    try:
        records = json.loads(data)
    except ValueError as e:
        raise ValueError(f"{name}: not valid JSON ({e})") from None
    if not isinstance(records, list):
        raise ValueError(f"{name}: expected a JSON list of records, got {type(records).__name__}")
    pairs, seen = [], set()
    for i, record in enumerate(records):
        try:
            zh, en, level = record[field], record["translation"]["en"], record["hsk_level"]
        except (KeyError, TypeError) as e:
            rid = record.get("id", "?") if isinstance(record, dict) else "?"
            raise ValueError(
                f"{name}: record {i} (id {rid}) lacks the field {e} (needs '{field}', 'translation.en', 'hsk_level')"
            ) from None
        if not isinstance(zh, str) or not isinstance(en, str):
            raise ValueError(f"{name}: record {i} has non-text 'chinese' or 'translation.en'")
        if en.strip().lower() == "placeholder" or (zh, en) in seen:
            continue
        seen.add((zh, en))
        meta = {"id": record.get("id"), "level": level, "src_text": zh, "tgt_text": en}
        pairs.append(Pair(tokenize_chars(zh), tokenize_words(en), meta))
    return pairs


def load_hsk(cache_dir: str | os.PathLike | None = None, script: str = "simplified") -> list[Pair]:
    """HSK zh->en pairs (4,287), Chinese characters -> English words; ``meta["level"]`` 1-6.

    ``script="traditional"`` reads the records' Traditional Chinese (the survey's script,
    as in its example 機器學習 -> "machine learning").
    """
    source = SOURCES["hsk"]
    return parse_hsk(read_member(fetch(source, cache_dir), source.member), source.member, script)


# ---------------------------------------------------------------- Ding, de -> en

ANNOTATION = re.compile(r"\{[^{}]*\}|\[[^\[\]]*\]|\([^()]*\)|<[^<>]*>")  # {f} [ugs.] (…) <alt>
PLACEHOLDER = re.compile(r"(?<!\w)(?:etw|jd|jdn|jdm|jds|sth|sb)\.")  # etw. jdn. sth. sb. …
MARK = re.compile(r"[.!?]")
SPACE_BEFORE_MARK = re.compile(r"\s+([.!?,:])")
SENTENCE_END = (".", "!", "?")


def _clean(entry: str) -> str:
    """Drop annotations, keep the first of ``;``-separated synonyms, tidy spaces."""
    removed = 1
    while removed:  # annotations can nest: (… [ugs.] …)
        entry, removed = ANNOTATION.subn(" ", entry)
    entry = " ".join(entry.split(";")[0].split())
    return SPACE_BEFORE_MARK.sub(r"\1", entry)  # "Ja {adv} !" -> "Ja!"


def _is_sentence(text: str) -> bool:
    return text.endswith(SENTENCE_END) and len(text.split()) >= 3 and "/" not in text and not PLACEHOLDER.search(text)


def parse_ding(text: str, name: str = "de-en") -> list[Pair]:
    """The example-sentence pairs of the Ding ``de-en`` file.

    Each line is ``German :: English``; both sides list the same number of entries separated
    by `` | `` (a headword, its inflections, examples), matched in order. An entry pair is
    kept when, after :func:`_clean` (annotations ``{…} […] (…) <…>`` removed, first synonym
    before ``;`` kept), both sides

    * end with ``.``, ``!`` or ``?`` and have at least 3 words,
    * contain no unresolved alternative ``/`` (``He / It is …``),
    * contain no dictionary placeholder (``etw. jdn. jdm. jds. sth. sb.``), which marks a
      phrase pattern, not a sentence.

    Exact repeats are dropped. ``#`` lines are comments.
    """
    pairs, seen = [], set()
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        if line.count(" :: ") != 1:
            raise ValueError(f"{name}, line {lineno}: expected 'German :: English', got {line[:80]!r}")
        de_side, en_side = line.split(" :: ")
        de_entries, en_entries = de_side.split(" | "), en_side.split(" | ")
        if len(de_entries) != len(en_entries):
            raise ValueError(
                f"{name}, line {lineno}: {len(de_entries)} German entries but "
                f"{len(en_entries)} English ones (separated by ' | ')"
            )
        for de, en in zip(de_entries, en_entries):
            if de.count(" ") < 2 or not MARK.search(de):  # a quick no for most headwords
                continue
            de = _clean(de)
            if not _is_sentence(de):
                continue
            en = _clean(en)
            if (de, en) in seen or not _is_sentence(en):
                continue
            seen.add((de, en))
            meta = {"line": lineno, "src_text": de, "tgt_text": en}
            pairs.append(Pair(tokenize_words(de), tokenize_words(en), meta))
    return pairs


def load_ding_de_en(cache_dir: str | os.PathLike | None = None) -> list[Pair]:
    """Ding de->en example sentences (17,349), lowercased word tokens on both sides."""
    source = SOURCES["ding"]
    raw = read_member(fetch(source, cache_dir), source.member)
    return parse_ding(raw.decode("utf-8"), source.member)
