"""Token tagging as a task: aspect and opinion terms of review sentences, F1 per kind of term.

Shape legend: B batch, T sentence length.

The examples are :class:`~attention.data.aspects.TaggedSentence` (tokens, one tag per token:
0 O, 1 aspect, 2 opinion). A tagger takes ``(tokens (B, T), lengths (B,))`` and returns a
:class:`~attention.models.interface.TaggerOutput` with two binary tag sets, ``"aspect"`` (is this
word an aspect term?) and ``"opinion"``, as :class:`~attention.models.cmla.CMLA` does. The loss
is the sum of the two cross-entropies over the real words; the metric is token-level F1 for each
kind, and training selects on their mean (:attr:`TaggingData.metric` ``"f1"``).

    data = aspect_data()   # Rotten Tomatoes sentences with silver tags, split 80/10/10
"""

from __future__ import annotations

import random
from dataclasses import dataclass, fields
from typing import Sequence

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..data import Vocab, split
from ..data.aspects import TAGS, load_silver_aspects
from ..masks import lengths_to_mask
from .base import Task, epoch_seed, fingerprint_tokens

__all__ = ["TaggingBatch", "TaggingData", "KIND_TAGS", "f1_scores", "lookup_f1", "aspect_data"]

#: tag set of the model -> the tag index (in data.aspects.TAGS) it detects
KIND_TAGS = {"aspect": TAGS.index("aspect"), "opinion": TAGS.index("opinion")}


@dataclass
class TaggingBatch:
    tokens: Tensor  # (B, T) ids, padded with 0
    lengths: Tensor  # (B,)
    tags: Tensor  # (B, T) tag indices (0 at padding)

    @property
    def mask(self) -> Tensor:
        """``(B, T)`` True = a real token."""
        return lengths_to_mask(self.lengths, self.tokens.shape[1])

    def to(self, device) -> "TaggingBatch":
        return TaggingBatch(*(getattr(self, f.name).to(device) for f in fields(self)))


def f1_scores(predicted: dict[str, Tensor], tags: Tensor, mask: Tensor) -> dict[str, dict]:
    """Token-level counts and precision / recall / F1 of each tag set, over the real tokens.

    ``predicted``: tag set -> ``(N,)`` or ``(B, T)`` 0/1 predictions; ``tags``: the gold tag
    indices of the same shape; ``mask``: True = a real token.
    """
    out = {}
    for kind, tag in KIND_TAGS.items():
        p, g = predicted[kind].bool() & mask, (tags == tag) & mask
        tp, fp, fn = int((p & g).sum()), int((p & ~g).sum()), int((~p & g).sum())
        precision = tp / (tp + fp) if tp + fp else 0.0
        recall = tp / (tp + fn) if tp + fn else 0.0
        out[kind] = {
            "precision": precision,
            "recall": recall,
            "tp": tp,
            "fp": fp,
            "fn": fn,
            "f1": 2 * precision * recall / (precision + recall) if precision + recall else 0.0,
        }
    return out


def lookup_f1(train: Sequence, test: Sequence) -> dict[str, dict]:
    """The baseline a tagger must beat when the labels come from a word-level rule: tag each test
    word with the tag it had most often in ``train`` (ties to the lower index, "O" first), words
    never seen there "O"; :func:`f1_scores` of that per kind of term. No model, no context."""
    counts: dict[str, list[int]] = {}
    for e in train:
        for w, t in zip(e.tokens, e.tags):
            counts.setdefault(w, [0] * len(TAGS))[t] += 1
    words = [w for e in test for w in e.tokens]
    gold = torch.tensor([t for e in test for t in e.tags], dtype=torch.long)
    guess = torch.tensor([max(range(len(TAGS)), key=counts[w].__getitem__) if w in counts else 0 for w in words])
    predicted = {kind: guess == tag for kind, tag in KIND_TAGS.items()}
    return f1_scores(predicted, gold, torch.ones_like(gold, dtype=torch.bool))


@dataclass
class TaggingData(Task):
    name: str
    train: list  # TaggedSentence-like: .tokens, .tags
    valid: list
    test: list
    vocab: Vocab
    seed: int = 0
    valid_batch_size: int = 128
    metric = "f1"  # the mean of aspect and opinion F1 (a class attribute, not a field)

    def collate(self, examples: Sequence) -> TaggingBatch:
        """Pad a list of tagged sentences into one batch (an empty sentence is an error)."""
        ids = [self.vocab.encode(e.tokens) for e in examples]
        if any(len(x) == 0 for x in ids):
            raise ValueError("a tagged sentence has no tokens")
        bad = [(i, len(e.tokens), len(e.tags)) for i, e in enumerate(examples) if len(e.tags) != len(e.tokens)]
        if bad:
            raise ValueError(f"tags and tokens differ in length (example, tokens, tags): {bad[:5]}")
        T = max(len(x) for x in ids)
        tokens = torch.zeros(len(ids), T, dtype=torch.long)
        tags = torch.zeros(len(ids), T, dtype=torch.long)
        for i, (x, e) in enumerate(zip(ids, examples)):
            tokens[i, : len(x)] = torch.tensor(x)
            tags[i, : len(x)] = torch.tensor(e.tags)
        if bool(((tags < 0) | (tags >= len(TAGS))).any()):
            raise ValueError(f"tags must be in 0..{len(TAGS) - 1} ({TAGS}); got {sorted(set(tags.flatten().tolist()))}")
        return TaggingBatch(tokens, torch.tensor([len(x) for x in ids]), tags)

    def inputs(self, batch: TaggingBatch) -> tuple:
        return batch.tokens, batch.lengths

    def _batches(self, examples: Sequence, batch_size: int, order: list[int]):
        for i in range(0, len(order), batch_size):
            yield self.collate([examples[j] for j in order[i : i + batch_size]])

    def train_batches(self, batch_size: int, seed: int, epoch: int):
        """Shuffled batches of sentences of similar length: the shuffled sentences are cut into
        pools of 50 batches, each pool is sorted by length and cut into batches, and the batches
        are shuffled. Less padding, so the recurrent layers take fewer steps per batch."""
        rng = random.Random(epoch_seed(seed, epoch))
        order = list(range(len(self.train)))
        rng.shuffle(order)
        pool = 50 * batch_size
        chunks = []
        for i in range(0, len(order), pool):
            by_length = sorted(order[i : i + pool], key=lambda j: len(self.train[j].tokens))
            chunks += [by_length[k : k + batch_size] for k in range(0, len(by_length), batch_size)]
        rng.shuffle(chunks)
        return (self.collate([self.train[j] for j in chunk]) for chunk in chunks)

    def valid_batches(self):
        return self._batches(self.valid, self.valid_batch_size, list(range(len(self.valid))))

    def loss(self, model: nn.Module, batch: TaggingBatch) -> tuple[Tensor, int]:
        """The aspect and the opinion cross-entropy, each averaged over the real tokens, summed."""
        out = model(*self.inputs(batch))
        mask = batch.mask
        total = sum(
            F.cross_entropy(out.logits[kind][mask], (batch.tags[mask] == tag).long()) for kind, tag in KIND_TAGS.items()
        )
        return total, int(mask.sum())

    def validation_metric(self, model: nn.Module) -> float:
        """The mean of aspect and opinion F1 on the validation split."""
        return self.evaluate(model, self.valid)["f1"]

    @torch.no_grad()
    def evaluate(self, model: nn.Module, examples: Sequence | None = None, batch_size: int = 128) -> dict:
        """F1 per kind of term (and their mean ``"f1"``), the predicted tags and the attention of
        each sentence (its real words only)."""
        examples = self.test if examples is None else examples
        model.eval()
        device = next(model.parameters()).device
        predicted = {k: [] for k in KIND_TAGS}
        gold, attention, predictions = [], [], []
        for batch in self._batches(examples, batch_size, list(range(len(examples)))):
            out = model(*self.inputs(batch.to(device)))
            mask = batch.mask
            pred = {k: v.cpu() for k, v in out.prediction.items()}
            for k in KIND_TAGS:
                predicted[k].append(pred[k][mask])
            gold.append(batch.tags[mask])
            for i, n in enumerate(batch.lengths.tolist()):
                attention.append({k: v[i, ..., :n].cpu() for k, v in out.attention.items()})
                predictions.append({k: pred[k][i, :n].tolist() for k in KIND_TAGS})
        tags = torch.cat(gold)
        scores = f1_scores(
            {k: torch.cat(v) for k, v in predicted.items()}, tags, torch.ones_like(tags, dtype=torch.bool)
        )
        return {
            **scores,
            "f1": sum(s["f1"] for s in scores.values()) / len(scores),
            "n": len(examples),
            "predictions": predictions,
            "attention": attention,
        }

    def fingerprint(self) -> dict:
        return {
            "task": "tagging",
            "name": self.name,
            "seed": self.seed,
            "sizes": [len(self.train), len(self.valid), len(self.test)],
            "examples": fingerprint_tokens(
                [(e.tokens, e.tags) for e in self.train], [(e.tokens, e.tags) for e in self.valid]
            ),
            "vocab": fingerprint_tokens(self.vocab.itos),
        }


def aspect_data(
    seed: int = 0, min_freq: int = 2, limit: int | None = None, cache_dir: str | None = None
) -> TaggingData:
    """Rotten Tomatoes sentences with silver aspect/opinion tags (:mod:`attention.data.aspects`),
    split 80/10/10 with ``seed`` (``limit``: only the first ``limit`` sentences, for quick tries).
    The vocabulary comes from train only; words seen fewer than ``min_freq`` times there become
    ``<unk>``, so an opinion word the model never saw must be told by its context."""
    sentences = load_silver_aspects(cache_dir)[:limit]
    tr, va, te = split(sentences, valid=0.1, test=0.1, seed=seed)
    vocab = Vocab.build([s.tokens for s in tr], min_freq=min_freq)
    return TaggingData("rt-aspects-silver", tr, va, te, vocab, seed)
