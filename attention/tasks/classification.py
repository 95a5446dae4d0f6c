"""Classification as a task: labelled token sequences, cross-entropy, accuracy.

Shape legend: B batch, S sequence length, C classes.

A classifier for this task takes ``(tokens (B, S), lengths (B,))`` and returns a
:class:`~attention.models.interface.ClassifierOutput` (logits ``(B, C)`` and its attention
weights by name). A task whose examples are not flat token sequences (a document as a list
of sentences, a story with a question) subclasses :class:`ClassificationData` and overrides
:meth:`ClassificationData.collate` and :meth:`ClassificationData.inputs`.

    data = sentiment_data("rotten_tomatoes")   # real sentence sentiment, split 80/10/10
"""

from __future__ import annotations

import random
from dataclasses import dataclass, fields
from typing import NamedTuple, Sequence

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..data import Vocab, load_rotten_tomatoes, load_vader_movie_snippets, split
from ..data.sentiment import LABELS
from ..masks import lengths_to_mask
from .base import Task, epoch_seed, fingerprint_tokens

__all__ = ["Example", "ClassificationBatch", "ClassificationData", "SENTIMENT_CORPORA", "sentiment_data"]


class Example(NamedTuple):
    tokens: tuple[str, ...]  # the text, tokenised
    label: int  # index into ClassificationData.labels


@dataclass
class ClassificationBatch:
    tokens: Tensor  # (B, S) ids, padded with 0
    lengths: Tensor  # (B,)
    labels: Tensor  # (B,) class indices

    @property
    def mask(self) -> Tensor:
        """``(B, S)`` True = a real token."""
        return lengths_to_mask(self.lengths, self.tokens.shape[1])

    def to(self, device) -> "ClassificationBatch":
        return ClassificationBatch(*(getattr(self, f.name).to(device) for f in fields(self)))


@dataclass
class ClassificationData(Task):
    name: str
    train: list  # Example-like: .tokens, .label
    valid: list
    test: list
    vocab: Vocab
    labels: list[str]  # class index -> name
    seed: int = 0
    valid_batch_size: int = 128
    metric = "accuracy"  # what training selects on (a class attribute, not a field)

    def validation_metric(self, model: nn.Module) -> float:
        """Accuracy on the validation split."""
        return self.evaluate(model, self.valid)["accuracy"]

    def collate(self, examples: Sequence) -> ClassificationBatch:
        """Pad a list of examples into one batch (empty texts are an error)."""
        ids = [self.vocab.encode(e.tokens) for e in examples]
        if any(len(x) == 0 for x in ids):
            raise ValueError("a classification example has no tokens")
        S = max(len(x) for x in ids)
        tokens = torch.zeros(len(ids), S, dtype=torch.long)
        for i, x in enumerate(ids):
            tokens[i, : len(x)] = torch.tensor(x)
        labels = [e.label for e in examples]
        bad = [y for y in labels if not 0 <= y < len(self.labels)]
        if bad:
            raise ValueError(f"labels {bad[:5]} are outside 0..{len(self.labels) - 1} ({self.labels})")
        return ClassificationBatch(tokens, torch.tensor([len(x) for x in ids]), torch.tensor(labels))

    def inputs(self, batch: ClassificationBatch) -> tuple:
        """What the model is called with."""
        return batch.tokens, batch.lengths

    def _batches(self, examples: Sequence, batch_size: int, order: list[int]):
        for i in range(0, len(order), batch_size):
            yield self.collate([examples[j] for j in order[i : i + batch_size]])

    def train_batches(self, batch_size: int, seed: int, epoch: int):
        order = list(range(len(self.train)))
        random.Random(epoch_seed(seed, epoch)).shuffle(order)
        return self._batches(self.train, batch_size, order)

    def valid_batches(self):
        return self._batches(self.valid, self.valid_batch_size, list(range(len(self.valid))))

    def loss(self, model: nn.Module, batch: ClassificationBatch) -> tuple[Tensor, int]:
        """Mean cross-entropy over the batch's examples."""
        out = model(*self.inputs(batch))
        return F.cross_entropy(out.logits, batch.labels), len(batch.labels)

    @torch.no_grad()
    def evaluate(self, model: nn.Module, examples: Sequence | None = None, batch_size: int = 128) -> dict:
        """Accuracy, the predictions and, per example, the attention weights the model exposes."""
        examples = self.test if examples is None else examples
        model.eval()
        device = next(model.parameters()).device
        predictions, attention = [], []
        for batch in self._batches(examples, batch_size, list(range(len(examples)))):
            out = model(*self.inputs(batch.to(device)))
            predictions += out.prediction.tolist()
            for i in range(len(batch.labels)):
                attention.append({k: v[i].cpu() for k, v in out.attention.items()})
        correct = sum(p == e.label for p, e in zip(predictions, examples))
        return {
            "accuracy": correct / max(len(examples), 1),
            "n": len(examples),
            "predictions": predictions,
            "attention": attention,
        }

    def fingerprint(self) -> dict:
        return {
            "task": "classification",
            "name": self.name,
            "seed": self.seed,
            "sizes": [len(self.train), len(self.valid), len(self.test)],
            "examples": fingerprint_tokens(
                [(e.tokens, e.label) for e in self.train], [(e.tokens, e.label) for e in self.valid]
            ),
            "vocab": fingerprint_tokens(self.vocab.itos, self.labels),
        }


# The sentence-sentiment corpora (attention/data/sentiment.py), by the name sentiment_data takes.
SENTIMENT_CORPORA = {"rotten_tomatoes": load_rotten_tomatoes, "vader": load_vader_movie_snippets}


def sentiment_data(
    corpus: str = "rotten_tomatoes", seed: int = 0, min_freq: int = 2, cache_dir: str | None = None
) -> ClassificationData:
    """Sentence sentiment (``CONTRIBUTING.md``, "Data"), split 80/10/10 with ``seed``.

    ``corpus``: ``"rotten_tomatoes"`` (12,751 review snippets, fresh / rotten) or ``"vader"``
    (10,566 movie-review sentences labelled by the sign of their mean human rating, which
    ``example.meta["rating"]`` keeps). Labels 0 = negative, 1 = positive. The split is
    :func:`attention.data.split` (the same for a given seed on every platform); the vocabulary
    comes from train only, and words seen fewer than ``min_freq`` times there become ``<unk>``.
    The examples are :class:`~attention.data.sentiment.Sentence` objects, so each keeps its
    ``meta`` (the original text, and the rating for VADER).
    """
    if corpus not in SENTIMENT_CORPORA:
        raise ValueError(f"unknown sentiment corpus {corpus!r}; choose one of {sorted(SENTIMENT_CORPORA)}")
    sentences = SENTIMENT_CORPORA[corpus](cache_dir)
    tr, va, te = split(sentences, valid=0.1, test=0.1, seed=seed)
    vocab = Vocab.build([s.tokens for s in tr], min_freq=min_freq)
    return ClassificationData(corpus.replace("_", "-"), tr, va, te, vocab, list(LABELS), seed)
