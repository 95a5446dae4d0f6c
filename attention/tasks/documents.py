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

from dataclasses import dataclass, fields
from typing import Sequence

import torch
from torch import Tensor

from ..data import Vocab, split
from ..data.documents import Document, load_pang_lee
from ..data.sentiment import LABELS
from .base import fingerprint_tokens
from .classification import ClassificationData

__all__ = ["DocumentBatch", "DocumentData", "document_data", "documents_batch"]


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
