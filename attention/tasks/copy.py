"""The copy task of Graves et al. (2014), §4.1 (chapter 7): read a sequence of random binary
vectors, then write it back.

Shape legend: B batch, L sequence length, T = 2L + 1 time steps, O data bits, I = O + 1 input
channels (the last one is the delimiter flag).

A sequence x_1 … x_L of O-bit vectors is presented as T = 2L + 1 steps::

    step       0 … L−1        L            L+1 … 2L
    input      x_1 … x_L      delimiter    blank (all zero)
    target     (none)         (none)       x_1 … x_L

The delimiter step has the flag channel at 1 and the data bits at 0; the data steps have the
flag at 0. The loss is the binary cross-entropy of the output phase only (steps L+1 … 2L),
and the metric is the fraction of output bits right there (``bit_accuracy``; higher is
better), with ``sequence_accuracy`` the fraction of sequences copied without a wrong bit.
Sequences of a batch are padded at the end (zero inputs, no target) to the longest one.

Every example is drawn from a seed (:func:`random_sequences`), so the splits are identical
on every rerun; :func:`copy_data` also builds test sets of lengths beyond the training range
(``test_lengths``), the point of the task: does the learned program generalise to longer
sequences? ``CONTRIBUTING.md``, "Adding a task", says what each method of :class:`Task` does.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, fields
from typing import Sequence

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .base import Task

__all__ = ["CopyBatch", "CopyData", "copy_data", "copy_batch", "random_sequences"]


@dataclass
class CopyBatch:
    """A padded batch of copy examples (CPU tensors until ``.to(device)``)."""

    inputs: Tensor  # (B, T, I), T = 2 · max L + 1; the last channel is the delimiter flag
    targets: Tensor  # (B, T, O), the sequence at its output steps, 0 elsewhere
    mask: Tensor  # (B, T) bool, True = an output step (where loss and accuracy count)
    lengths: Tensor  # (B,) long, each sequence's L

    def to(self, device) -> "CopyBatch":
        return CopyBatch(*(getattr(self, f.name).to(device) for f in fields(self)))


def random_sequences(n: int, bits: int, min_len: int, max_len: int, seed: int) -> list[Tensor]:
    """``n`` sequences of random bits, each ``(L, bits)`` float with L uniform in min_len … max_len,
    drawn from ``seed`` alone (a private generator: the global RNG is untouched)."""
    if not 1 <= min_len <= max_len:
        raise ValueError(f"need 1 <= min_len <= max_len; got min_len={min_len}, max_len={max_len}")
    if n < 0 or bits < 1:
        raise ValueError(f"need n >= 0 and bits >= 1; got n={n}, bits={bits}")
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(min_len, max_len + 1, (n,), generator=g)
    return [torch.randint(0, 2, (int(L), bits), generator=g).float() for L in lengths]


def copy_batch(sequences: Sequence[Tensor]) -> CopyBatch:
    """Lay ``sequences`` (each ``(L, O)``) out as the copy task's inputs and targets; see the module docstring."""
    if not sequences:
        raise ValueError("copy_batch needs at least one sequence")
    O = sequences[0].shape[1]
    if any(s.dim() != 2 or s.shape[1] != O or s.shape[0] < 1 for s in sequences):
        raise ValueError(f"every sequence must be (L, {O}) with L >= 1; got {[tuple(s.shape) for s in sequences]}")
    B, L_max = len(sequences), max(s.shape[0] for s in sequences)
    T = 2 * L_max + 1
    inputs = torch.zeros(B, T, O + 1)
    targets = torch.zeros(B, T, O)
    mask = torch.zeros(B, T, dtype=torch.bool)
    for b, s in enumerate(sequences):
        L = s.shape[0]
        inputs[b, :L, :O] = s  # the sequence, flag 0
        inputs[b, L, O] = 1.0  # the delimiter
        targets[b, L + 1 : 2 * L + 1] = s  # read back after the delimiter
        mask[b, L + 1 : 2 * L + 1] = True
    return CopyBatch(inputs, targets, mask, torch.tensor([s.shape[0] for s in sequences]))


def _logits(model: nn.Module, inputs: Tensor) -> Tensor:
    """A model's ``(B, T, O)`` logits, whether it returns them or an output with ``.logits``."""
    out = model(inputs)
    return out.logits if hasattr(out, "logits") else out


def _hash(sequences: Sequence[Tensor]) -> str:
    digest = hashlib.sha256()
    for s in sequences:
        digest.update(s.to(torch.uint8).numpy().tobytes() + b"|")
    return digest.hexdigest()[:16]


class CopyData(Task):
    """The copy task's splits, batching, loss (BCE on the output phase) and metric (per-bit accuracy).

    ``by_length`` maps each extra test length (e.g. 20, 30, 40) to its own fixed test set;
    ``evaluate(model, length=30)`` reports on it (or on fresh sequences of that length).
    """

    name = "copy"
    metric = "bit_accuracy"

    def __init__(
        self,
        train: Sequence[Tensor],
        valid: Sequence[Tensor],
        test: Sequence[Tensor],
        bits: int,
        min_len: int,
        max_len: int,
        seed: int = 0,
        by_length: dict[int, Sequence[Tensor]] | None = None,
        eval_batch_size: int = 64,
    ):
        self.train, self.valid, self.test = list(train), list(valid), list(test)
        self.bits, self.min_len, self.max_len, self.seed = bits, min_len, max_len, seed
        self.by_length = {int(k): list(v) for k, v in (by_length or {}).items()}
        self.eval_batch_size = eval_batch_size

    def _batches(self, examples: Sequence[Tensor], batch_size: int, order: list[int]):
        for i in range(0, len(order), batch_size):
            yield copy_batch([examples[j] for j in order[i : i + batch_size]])

    def train_batches(self, batch_size: int, seed: int, epoch: int):
        g = torch.Generator().manual_seed(seed * 100_003 + epoch)
        return self._batches(self.train, batch_size, torch.randperm(len(self.train), generator=g).tolist())

    def valid_batches(self):
        return list(self._batches(self.valid, self.eval_batch_size, list(range(len(self.valid)))))

    def loss(self, model: nn.Module, batch: CopyBatch) -> tuple[Tensor, int]:
        logits = _logits(model, batch.inputs)  # (B, T, O)
        if logits.shape != batch.targets.shape:
            raise ValueError(
                f"the model's logits are {tuple(logits.shape)}; the copy targets are {tuple(batch.targets.shape)}"
            )
        chosen = batch.mask  # (B, T)
        n = int(chosen.sum()) * self.bits
        return F.binary_cross_entropy_with_logits(logits[chosen], batch.targets[chosen]), n

    @torch.no_grad()
    def evaluate(
        self,
        model: nn.Module,
        examples: Sequence[Tensor] | None = None,
        length: int | None = None,
        n: int = 256,
        batch_size: int | None = None,
    ) -> dict:
        """``bit_accuracy``, ``sequence_accuracy``, ``loss`` (mean BCE per output bit) and ``n`` sequences.

        Which sequences: ``examples`` if given; else with ``length`` the fixed test set of that
        length from ``by_length`` or, if there is none, ``n`` fresh sequences of exactly that
        length (drawn from the task's seed and the length); else the test split.
        """
        if examples is None:
            if length is None:
                examples = self.test
            elif length in self.by_length:
                examples = self.by_length[length]
            else:
                examples = random_sequences(n, self.bits, length, length, seed=self.seed * 1000 + 7 + length)
        if not examples:
            raise ValueError("nothing to evaluate: no examples")
        model.eval()
        device = next(model.parameters()).device
        bits_right = bits_total = seqs_right = 0
        loss_sum = 0.0
        size = batch_size or self.eval_batch_size
        for batch in self._batches(examples, size, list(range(len(examples)))):
            batch = batch.to(device)
            logits = _logits(model, batch.inputs)  # (B, T, O)
            right = ((logits > 0).float() == batch.targets) | ~batch.mask[:, :, None]  # (B, T, O)
            bits_right += int((right & batch.mask[:, :, None]).sum())
            bits_total += int(batch.mask.sum()) * self.bits
            seqs_right += int(right.all(-1).all(-1).sum())
            loss_sum += float(
                F.binary_cross_entropy_with_logits(logits[batch.mask], batch.targets[batch.mask], reduction="sum")
            )
        return {
            "bit_accuracy": bits_right / bits_total,
            "sequence_accuracy": seqs_right / len(examples),
            "loss": loss_sum / bits_total,
            "n": len(examples),
        }

    def validation_metric(self, model: nn.Module) -> float:
        return self.evaluate(model, self.valid)["bit_accuracy"]

    def fingerprint(self) -> dict:
        return {
            "name": self.name,
            "seed": self.seed,
            "bits": self.bits,
            "lengths": [self.min_len, self.max_len],
            "sizes": [len(self.train), len(self.valid), len(self.test)],
            "hashes": [_hash(self.train), _hash(self.valid), _hash(self.test)],
            "by_length": {str(k): _hash(v) for k, v in sorted(self.by_length.items())},
        }


def copy_data(
    bits: int = 8,
    min_len: int = 1,
    max_len: int = 10,
    n_train: int = 10_000,
    n_valid: int = 256,
    n_test: int = 256,
    test_lengths: Sequence[int] = (20, 30, 40),
    n_by_length: int = 128,
    seed: int = 0,
) -> CopyData:
    """The copy task with lengths ``min_len … max_len`` for training, validation and test, plus a
    test set of ``n_by_length`` sequences for each of ``test_lengths`` (exactly that length).

    Each split has its own seed derived from ``seed``, so the splits never share a draw.
    """
    if any(int(L) < 1 for L in test_lengths):
        raise ValueError(f"test_lengths must be positive; got {tuple(test_lengths)}")
    train = random_sequences(n_train, bits, min_len, max_len, seed * 1000 + 1)
    valid = random_sequences(n_valid, bits, min_len, max_len, seed * 1000 + 2)
    test = random_sequences(n_test, bits, min_len, max_len, seed * 1000 + 3)
    by_length = {
        int(L): random_sequences(n_by_length, bits, int(L), int(L), seed * 1000 + 7 + int(L)) for L in test_lengths
    }
    return CopyData(train, valid, test, bits, min_len, max_len, seed, by_length)
