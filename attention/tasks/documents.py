"""Document classification: a document is a list of sentences, each a list of words.

Shape legend: B batch (documents), N sentences per document, T words per sentence.

A batch pads twice: every sentence to the longest sentence of the batch (T) and every document
to the one with the most sentences (N). ``lengths (B, N)`` holds each sentence's number of words;
a padded sentence has length 0, and the real sentences of a document always come first. A
classifier for this task takes ``(tokens (B, N, T), lengths (B, N))`` (chapter 5's
:class:`~attention.models.han.HANClassifier`).

    data = document_data()        # Pang & Lee's 1,500 movie reviews, split 80/10/10
"""

from __future__ import annotations

import random
from dataclasses import dataclass, fields
from typing import Sequence

import torch
from torch import Tensor

from ..data import Vocab, split
from ..data.documents import Document, load_pang_lee
from ..data.sentiment import LABELS, load_vader_movie_snippets
from .base import fingerprint_tokens
from .classification import ClassificationData

__all__ = [
    "DocumentBatch",
    "DocumentData",
    "document_data",
    "documents_batch",
    "decisive_documents",
    "decisive_data",
]


@dataclass
class DocumentBatch:
    tokens: Tensor  # (B, N, T) word ids, padded with 0
    lengths: Tensor  # (B, N) words per sentence; 0 = a padded sentence
    labels: Tensor  # (B,) class indices

    @property
    def sentences(self) -> Tensor:
        """``(B,)`` the number of real sentences of each document."""
        return (self.lengths > 0).sum(1)

    def to(self, device) -> "DocumentBatch":
        return DocumentBatch(*(getattr(self, f.name).to(device) for f in fields(self)))


def documents_batch(ids: Sequence[Sequence[Sequence[int]]], labels: Sequence[int]) -> DocumentBatch:
    """Pad documents of word ids (a list of sentences of ids each) into one :class:`DocumentBatch`."""
    if any(len(doc) == 0 for doc in ids) or any(len(s) == 0 for doc in ids for s in doc):
        raise ValueError("a document with no sentences, or a sentence with no words, cannot be batched")
    N = max(len(doc) for doc in ids)
    T = max(len(s) for doc in ids for s in doc)
    tokens = torch.zeros(len(ids), N, T, dtype=torch.long)
    lengths = torch.zeros(len(ids), N, dtype=torch.long)
    for b, doc in enumerate(ids):
        for n, sentence in enumerate(doc):
            tokens[b, n, : len(sentence)] = torch.tensor(sentence)
            lengths[b, n] = len(sentence)
    return DocumentBatch(tokens, lengths, torch.tensor(list(labels), dtype=torch.long))


@dataclass
class DocumentData(ClassificationData):
    """:class:`ClassificationData` whose examples are :class:`~attention.data.documents.Document`s.

    ``max_sentences`` / ``max_words`` cut long documents and sentences when batching (None = keep
    everything); the cut is part of :meth:`fingerprint`.
    """

    max_sentences: int | None = None
    max_words: int | None = None
    valid_batch_size: int = 32

    def encode(self, document: Document) -> list[list[int]]:
        """A document's word ids, sentence by sentence, after the cuts."""
        sentences = document.sentences[: self.max_sentences] if self.max_sentences else document.sentences
        return [self.vocab.encode(s[: self.max_words] if self.max_words else s) for s in sentences]

    def collate(self, examples: Sequence[Document]) -> DocumentBatch:
        labels = [e.label for e in examples]
        bad = [y for y in labels if not 0 <= y < len(self.labels)]
        if bad:
            raise ValueError(f"labels {bad[:5]} are outside 0..{len(self.labels) - 1} ({self.labels})")
        return documents_batch([self.encode(e) for e in examples], labels)

    def inputs(self, batch: DocumentBatch) -> tuple:
        return batch.tokens, batch.lengths

    def fingerprint(self) -> dict:
        return {
            "task": "documents",
            "name": self.name,
            "seed": self.seed,
            "cut": [self.max_sentences, self.max_words],
            "sizes": [len(self.train), len(self.valid), len(self.test)],
            "examples": fingerprint_tokens(
                [(e.sentences, e.label) for e in self.train], [(e.sentences, e.label) for e in self.valid]
            ),
            "vocab": fingerprint_tokens(self.vocab.itos, self.labels),
        }


def document_data(
    seed: int = 0,
    min_freq: int = 3,
    max_sentences: int | None = None,
    max_words: int | None = None,
    cache_dir: str | None = None,
) -> DocumentData:
    """Pang & Lee's movie reviews (``CONTRIBUTING.md``, "Data"), split 80/10/10 with ``seed``.

    1,200 / 150 / 150 reviews by :func:`attention.data.split`; the vocabulary comes from the
    training reviews, and words seen fewer than ``min_freq`` times there become ``<unk>``.
    Labels 0 = negative, 1 = positive.
    """
    documents = load_pang_lee(cache_dir)
    tr, va, te = split(documents, valid=0.1, test=0.1, seed=seed)
    vocab = Vocab.build([d.tokens for d in tr], min_freq=min_freq)
    return DocumentData(
        "pang-lee", tr, va, te, vocab, list(LABELS), seed, max_sentences=max_sentences, max_words=max_words
    )


def decisive_documents(fillers: Sequence, decisive: Sequence, n: int, sentences: int, seed: int = 0) -> list[Document]:
    """``n`` documents of ``sentences`` sentences each: one drawn from ``decisive`` (its label is
    the document's), at a random position, and the others drawn from ``fillers`` whatever their
    labels, so that only the decisive sentence says what the document's label is. Each is a
    :class:`~attention.data.sentiment.Sentence` with ``meta["rating"]``; the documents' labels
    alternate (balanced), and ``meta`` holds ``decisive`` (the position) and ``ratings``."""
    if sentences < 2:
        raise ValueError(f"a document needs a decisive sentence and at least one other, got sentences={sentences}")
    by_label = {y: [s for s in decisive if s.label == y] for y in (0, 1)}
    if not fillers or not all(by_label.values()):
        raise ValueError(
            f"need fillers ({len(fillers)}) and decisive sentences of both labels "
            f"({len(by_label[0])} negative, {len(by_label[1])} positive)"
        )
    rng = random.Random(seed)
    out = []
    for i in range(n):
        label = i % 2
        chosen = [rng.choice(fillers) for _ in range(sentences - 1)]
        where = rng.randrange(sentences)
        chosen.insert(where, rng.choice(by_label[label]))
        out.append(
            Document(
                tuple(s.tokens for s in chosen),
                label,
                {"decisive": where, "ratings": [s.meta["rating"] for s in chosen]},
            )
        )
    return out


def decisive_data(
    sentences: int = 6,
    filler_max: float = 1.0,
    decisive_min: float = 2.5,
    sizes: tuple[int, int, int] = (3000, 400, 600),
    min_freq: int = 2,
    seed: int = 0,
    cache_dir: str | None = None,
) -> DocumentData:
    """Documents in which one sentence sets the label, built from VADER's human-rated movie-review
    sentences (``CONTRIBUTING.md``, "Data"): *fillers* rated weakly (``|rating| < filler_max``) of
    either sign, and one *decisive* sentence rated strongly (``|rating| >= decisive_min``) whose sign
    is the label (:func:`decisive_documents`). Both pools are split 80/10/10 with ``seed`` before
    any document is built, so no test sentence occurs in training; ``sizes`` documents per split,
    balanced. The vocabulary comes from the training documents."""
    snippets = load_vader_movie_snippets(cache_dir)
    pools = {
        "fillers": [s for s in snippets if abs(s.meta["rating"]) < filler_max],
        "decisive": [s for s in snippets if abs(s.meta["rating"]) >= decisive_min],
    }
    parts = {k: split(v, valid=0.1, test=0.1, seed=seed) for k, v in pools.items()}
    docs = [
        decisive_documents(parts["fillers"][i], parts["decisive"][i], n, sentences, seed=seed * 10 + i)
        for i, n in enumerate(sizes)
    ]
    vocab = Vocab.build([d.tokens for d in docs[0]], min_freq=min_freq)
    return DocumentData(f"vader-decisive-{sentences}", *docs, vocab, list(LABELS), seed)
