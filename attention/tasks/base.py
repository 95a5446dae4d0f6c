"""The interface every task implements, so that one ``fit`` trains any model on any task.

A task holds its splits (``train``, ``valid``, ``test``) and answers five questions:

* :meth:`Task.train_batches` / :meth:`Task.valid_batches`: the batches (CPU tensors with a
  ``.to(device)`` method), reshuffled per epoch from a seed so reruns are identical;
* :meth:`Task.loss`: ``(model, batch) -> (mean loss, n)``, what training minimises, with the
  number of items (tokens, examples) the mean is over;
* :meth:`Task.evaluate`: the metric the chapter reports (BLEU, accuracy ...), as a dict;
* :meth:`Task.validation_metric`: that metric on the validation split, cheaply (greedy
  decoding, no extras), as one number where higher is better: training selects its best
  epoch, and stops, on it (named by :attr:`Task.metric`);
* :meth:`Task.fingerprint`: plain data that identifies the task's data exactly (name, seed,
  sizes, hashes of the examples and vocabularies) -- part of a cached model's key.
"""

from __future__ import annotations

import hashlib
import json
from abc import ABC, abstractmethod
from typing import Iterable, Sequence

from torch import Tensor, nn

__all__ = ["Task", "fingerprint_tokens", "epoch_seed"]


def fingerprint_tokens(*parts) -> str:
    """A short sha256 of any JSON-serialisable data (token lists, vocabularies, labels)."""
    blob = json.dumps(parts, ensure_ascii=False, sort_keys=True, default=list)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


class Task(ABC):
    """A dataset with splits, its batching, its loss and its metric; see the module docstring."""

    name: str
    train: Sequence
    valid: Sequence
    test: Sequence
    seed: int
    metric: str = "metric"  # the name of validation_metric, e.g. "bleu", "accuracy"

    @abstractmethod
    def validation_metric(self, model: nn.Module) -> float:
        """The task's metric on the validation split (higher is better)."""

    @abstractmethod
    def train_batches(self, batch_size: int, seed: int, epoch: int) -> Iterable:
        """The training batches of one epoch, shuffled with ``seed`` and ``epoch``."""

    @abstractmethod
    def valid_batches(self) -> Iterable:
        """The validation batches, in a fixed order."""

    @abstractmethod
    def loss(self, model: nn.Module, batch) -> tuple[Tensor, int]:
        """``(mean loss over n items, n)`` of ``model`` on ``batch``."""

    @abstractmethod
    def evaluate(self, model: nn.Module, examples: Sequence | None = None, **options) -> dict:
        """The task's metric(s) of ``model`` on ``examples`` (default: the test split)."""

    @abstractmethod
    def fingerprint(self) -> dict:
        """Plain data that changes whenever the examples, the splits or the vocabularies do."""


def epoch_seed(seed: int, epoch: int) -> int:
    """The seed of epoch ``epoch``'s batch order in a run seeded ``seed``: every task shuffles its
    training split with ``random.Random(epoch_seed(seed, epoch))``, so one seed gives one order per
    epoch, the same for every task."""
    return seed * 1000 + epoch
