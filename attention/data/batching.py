"""Splits and padded batches for sequence-to-sequence training.

Shape legend: B batch, S source length, T target length (+1 for ``<bos>`` / ``<eos>``).

A :class:`Batch` holds, for pairs ``(x, y)``::

    src      (B, S)  x, padded with 0                      <- the encoder reads this
    src_mask (B, S)  True = real token (keep mask)          <- attention over the source
    tgt_in   (B, T)  <bos> y, padded with 0                 <- the decoder reads this
    tgt_out  (B, T)  y <eos>, padded with 0                 <- the loss compares with this

The source carries no ``<bos>``/``<eos>``: source position ``j`` is token ``x[j]``, and
decoder step ``i`` predicts ``y[i]``, so an attention map ``(T, S)`` lines up with the gold
links ``(j, i)`` of :mod:`attention.data.dates` without any offset. ``src_mask`` is
:func:`attention.masks.lengths_to_mask`; its negation is a ``key_padding_mask``.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, fields

import torch
from torch import Tensor

from ..masks import lengths_to_mask
from .vocab import Vocab

__all__ = ["Batch", "split", "collate", "batches"]


def split(pairs: Sequence, valid: float = 0.1, test: float = 0.1, seed: int = 0):
    """Deterministic ``(train, valid, test)`` lists, disjoint, corpus order kept in each.

    The indices are shuffled by ``random.Random(seed)``, which gives the same order on every
    Python version and platform; ``round(n * valid)`` go to valid, ``round(n * test)`` to test.
    """
    if valid < 0 or test < 0 or valid + test >= 1:
        raise ValueError(f"need 0 <= valid, test and valid + test < 1, got {valid}, {test}")
    n = len(pairs)
    order = list(range(n))
    random.Random(seed).shuffle(order)
    n_valid, n_test = round(n * valid), round(n * test)
    parts = order[:n_valid], order[n_valid : n_valid + n_test], order[n_valid + n_test :]
    valid_part, test_part, train_part = ([pairs[i] for i in sorted(p)] for p in parts)
    return train_part, valid_part, test_part


@dataclass
class Batch:
    """A padded batch of pairs (padding id 0)."""

    src: Tensor  # (B, S) long, source ids
    src_lengths: Tensor  # (B,) long, true source lengths
    src_mask: Tensor  # (B, S) bool, True = real token
    tgt_in: Tensor  # (B, T) long, <bos> + target ids (decoder input)
    tgt_out: Tensor  # (B, T) long, target ids + <eos> (what the loss predicts)
    tgt_lengths: Tensor  # (B,) long, len(y) + 1: true length of tgt_in and of tgt_out
    index: Tensor  # (B,) long, positions of these pairs in the list given to `batches`

    def to(self, device, non_blocking: bool = False) -> "Batch":
        """The same batch on ``device``."""
        return Batch(**{f.name: getattr(self, f.name).to(device, non_blocking=non_blocking) for f in fields(self)})

    def __len__(self) -> int:
        return self.src.shape[0]


def _pad(rows: list[list[int]]) -> Tensor:
    out = torch.zeros(len(rows), max(len(r) for r in rows), dtype=torch.long)  # 0 = <pad>
    for b, row in enumerate(rows):
        out[b, : len(row)] = torch.tensor(row, dtype=torch.long)
    return out


def collate(pairs: Sequence, src_vocab: Vocab, tgt_vocab: Vocab, index: Sequence[int] | None = None) -> Batch:
    """One :class:`Batch` from ``(src_tokens, tgt_tokens)`` pairs (or ``Pair``, ``DatePair``)."""
    src_ids, tgt_ids = [], []
    for src, tgt in pairs:
        src_ids.append(src_vocab.encode(src))
        tgt_ids.append(tgt_vocab.encode(tgt))
    if min(len(s) for s in src_ids) == 0:
        raise ValueError("a source sequence is empty: nothing to attend to")
    src_lengths = torch.tensor([len(s) for s in src_ids])  # (B,)
    tgt_lengths = torch.tensor([len(t) + 1 for t in tgt_ids])  # (B,)
    return Batch(
        src=_pad(src_ids),  # (B, S)
        src_lengths=src_lengths,
        src_mask=lengths_to_mask(src_lengths),  # (B, S)
        tgt_in=_pad([[tgt_vocab.bos_id, *t] for t in tgt_ids]),  # (B, T)
        tgt_out=_pad([[*t, tgt_vocab.eos_id] for t in tgt_ids]),  # (B, T)
        tgt_lengths=tgt_lengths,
        index=torch.tensor(list(range(len(pairs))) if index is None else list(index)),
    )


def batches(
    pairs: Sequence,
    src_vocab: Vocab,
    tgt_vocab: Vocab,
    batch_size: int,
    shuffle: bool = True,
    seed: int = 0,
    sort_by_length: bool = True,
    pool_batches: int = 50,
) -> Iterator[Batch]:
    """Padded batches over ``pairs``; every pair appears exactly once.

    With ``sort_by_length`` (bucketing), pairs are sorted by (source, target) length inside
    pools of ``pool_batches * batch_size`` pairs before being cut into batches, so a batch
    holds sentences of similar length and little padding. With ``shuffle`` the pairs and then
    the batch order are shuffled by ``random.Random(seed)``: pass the epoch as ``seed`` for a
    new, reproducible order each epoch. Without ``shuffle`` the order is fixed (sorted by
    length when ``sort_by_length``); ``Batch.index`` maps rows back to ``pairs``.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    rng = random.Random(seed)
    order = list(range(len(pairs)))
    if shuffle:
        rng.shuffle(order)
    if sort_by_length:

        def length(i):
            src, tgt = pairs[i]
            return len(src), len(tgt)

        pool = len(order) if not shuffle else pool_batches * batch_size
        order = [i for start in range(0, len(order), pool) for i in sorted(order[start : start + pool], key=length)]
    groups = [order[start : start + batch_size] for start in range(0, len(order), batch_size)]
    if shuffle and sort_by_length:
        rng.shuffle(groups)  # otherwise every epoch would run short to long within each pool
    for group in groups:
        yield collate([pairs[i] for i in group], src_vocab, tgt_vocab, index=group)
